package ledger_test

import (
	"context"
	"fmt"
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

func TestAShardedEmitterSendsEachTeamToItsShard(t *testing.T) {
	a, b := startLedger(t), startLedger(t)
	m, err := ledger.ParseShardMap([]byte(`{"version":1,"shards":[{"shard":0,"address":"` + a.Address +
		`"},{"shard":1,"address":"` + b.Address + `"}],"teams":{"team-a":1,"team-b":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ledger.NewShardedEmitter(m, ledger.Options{Logger: (&quiet{}).Logger()})
	if err != nil {
		t.Fatal(err)
	}
	for i, team := range []string{"team-a", "team-b", "team-a"} {
		r, err := ledger.ToolCall(ledger.Base{Team: team, RunID: "r", StepID: "s", ReceiptID: fmt.Sprintf("%s-%d", team, i)},
			ledger.ToolCallFields{Tool: "grep", Decision: ledger.Allow})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Emit(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(context.Background()); err != nil || s.Stats().Acknowledged != 3 {
		t.Fatalf("Close: %v, %+v", err, s.Stats())
	}
	if got := b.ReceiptIDs(); !equal(got, []string{"team-a-0", "team-a-2"}) {
		t.Fatalf("shard 1 holds %v", got)
	}
	if got := a.ReceiptIDs(); !equal(got, []string{"team-b-1"}) {
		t.Fatalf("shard 0 holds %v", got)
	}
	d, err := ledger.NewShardedDashboard(m, ledger.DashboardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if runs, err := runsOnceProjected(d.ForTeam("team-a"), "team-a"); err != nil || len(runs) != 1 {
		t.Fatalf("team-a's runs on its shard: %v %v", runs, err)
	}
}
