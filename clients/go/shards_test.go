package ledger_test

import (
	"testing"

	ledger "evidence-ledger/clients/go"
)

func TestShardMapRoutesAsLedgerctlDoes(t *testing.T) {
	// FNV-1a-64 test vectors, and the routes of cmd/shard_map_test.cc's map.
	for s, want := range map[string]uint64{"": 0xcbf29ce484222325, "a": 0xaf63dc4c8601ec8c, "foobar": 0x85944171f73967e8,
		"team-a": 0xde90a3717d1252d6 /* shards.py */} {
		if got := ledger.Fnv1a64(s); got != want {
			t.Fatalf("Fnv1a64(%q) = %#x, want %#x", s, got, want)
		}
	}
	m, err := ledger.ParseShardMap([]byte(`{"version":1,"shards":[{"shard":1,"address":"b:1"},{"shard":0,"address":"a:1"},
		{"shard":2,"address":"c:1"}],"teams":{"team-pinned":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.AddressFor("team-pinned") != "c:1" || m.ShardFor("team-a") != 1 {
		t.Fatalf("routes: %s, %d", m.AddressFor("team-pinned"), m.ShardFor("team-a"))
	}
	for doc, want := range map[string]string{
		`{"version":2,"shards":[{"shard":0,"address":"a"}]}`:                           "shard map: version: must be 1",
		`{"version":1,"shards":[{"shard":1,"address":"a"}]}`:                           "shard map: shards: numbered 0 to n-1, each once",
		`{"version":1,"shards":[]}`:                                                    "shard map: shards: numbered 0 to n-1, each once",
		`{"version":1,"shards":[{"shard":0,"address":"a"}],"teams":{"t":1}}`:           "shard map: teams.t: not a shard of this map",
		`{"version":1,"shards":[{"shard":0,"address":"a"},{"shard":0,"address":"b"}]}`: "shard map: shards: numbered 0 to n-1, each once",
	} {
		if _, err := ledger.ParseShardMap([]byte(doc)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}
