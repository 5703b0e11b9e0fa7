package ledger

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
)

// notLeader is a follower's refusal, as ledger/storage/replication/node.cc
// Node::NotLeader writes it.
func notLeader(leader string) string {
	return "replication: node b follows; the leader is a at leader=" + leader + " (epoch 3); send appends there"
}

const noLeader = "replication: node b does not lead and no leader is known yet; retry"

func TestTheLeaderIsReadFromAFollowersRefusalAsLedgerctlReadsIt(t *testing.T) {
	for _, c := range []struct {
		code    codes.Code
		message string
		want    string
	}{
		{codes.Unavailable, notLeader("127.0.0.1:7421"), "127.0.0.1:7421"},
		{codes.Unavailable, "leader=[::1]:7421", "[::1]:7421"},
		{codes.Unavailable, "at leader=node-a.ledger:7420; send appends there", "node-a.ledger:7420"},
		{codes.Unavailable, "(leader=10.0.0.2:7420)", "10.0.0.2:7420"},
		{codes.Unavailable, noLeader, ""},
		{codes.Unavailable, "leader= (epoch 3)", ""},
		{codes.PermissionDenied, notLeader("127.0.0.1:7421"), ""},
	} {
		if got := LeaderNamed(c.code, c.message); got != c.want {
			t.Errorf("LeaderNamed(%s, %q) = %q, want %q", CodeName(c.code), c.message, got, c.want)
		}
	}
}

func TestATargetNamesOneNodeOrSeveral(t *testing.T) {
	for target, want := range map[string]string{"a:1": "a:1", "a:1, b:2": "a:1|b:2", "a:1,b:2,c:3": "a:1|b:2|c:3"} {
		got, err := splitTargets(target)
		if err != nil || strings.Join(got, "|") != want {
			t.Errorf("splitTargets(%q) = %q, %v; want %q", target, got, err, want)
		}
	}
	for _, target := range []string{"a:1,", ",a:1", "a:1,,b:2"} {
		_, err := splitTargets(target)
		want := `target: HOST:PORT, or several separated by commas (the nodes of a shard), not "` + target + `"`
		if err == nil || err.Error() != want {
			t.Errorf("splitTargets(%q): %v, want %s", target, err, want)
		}
	}
}

func TestTargetsFollowTheLeaderNamedAndFallBackToTheNodesWhenItFails(t *testing.T) {
	ts := &targets{configured: []string{"f1:1", "f2:2"}, mayDial: func(string) bool { return true }}
	step := func(code codes.Code, message string, wantAtOnce bool, wantCurrent string) {
		t.Helper()
		if atOnce := ts.failed(code, message); atOnce != wantAtOnce || ts.current() != wantCurrent {
			t.Fatalf("failed(%s, %q): at once %v, current %s; want %v, %s", CodeName(code), message, atOnce,
				ts.current(), wantAtOnce, wantCurrent)
		}
	}
	step(codes.Unavailable, notLeader("l:9"), true, "l:9")
	ts.accepted()
	if ts.current() != "l:9" {
		t.Fatalf("after an accepted batch: %s, want the leader l:9", ts.current())
	}
	step(codes.Unavailable, "connection refused", false, "f1:1") // back to the node that named it
	step(codes.Unavailable, noLeader, false, "f2:2")             // on to the next
	step(codes.DeadlineExceeded, "context deadline exceeded", false, "f1:1")
	step(codes.ResourceExhausted, "busy", false, "f1:1")      // back-pressure: stay
	step(codes.Unavailable, notLeader("f1:1"), false, "f2:2") // names itself: not followed, moved on
}

func TestTwoNodesThatNameEachOtherAreFollowedAtOnceThreeTimesThenAfterTheBackOff(t *testing.T) {
	ts := &targets{configured: []string{"a:1"}, mayDial: func(string) bool { return true }}
	var hops []bool
	for i := 0; i < 5; i++ {
		other := "b:2"
		if ts.current() == "b:2" {
			other = "a:1"
		}
		hops = append(hops, ts.failed(codes.Unavailable, notLeader(other)))
	}
	if got, want := fmtBools(hops), "t t t f f"; got != want {
		t.Fatalf("at once: %s, want %s", got, want)
	}
	ts.accepted()
	if !ts.failed(codes.Unavailable, notLeader("c:3")) {
		t.Fatal("after an accepted batch a follow did not go at once")
	}
}

// fmtBools writes t for true and f for false.
func fmtBools(bs []bool) string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = map[bool]string{true: "t", false: "f"}[b]
	}
	return strings.Join(out, " ")
}

func TestALeaderThatMayNotBeDialedIsNotFollowed(t *testing.T) {
	ts := &targets{configured: []string{"127.0.0.1:1"},
		mayDial: func(address string) bool { return strings.HasPrefix(address, "127.") }}
	if ts.failed(codes.Unavailable, notLeader("10.0.0.2:7420")) || ts.current() != "127.0.0.1:1" || ts.followed != "" {
		t.Fatalf("followed %q, current %s", ts.followed, ts.current())
	}
}
