package ledger_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ledger "evidence-ledger/clients/go"
)

// follower is a node that follows: it refuses every call with UNAVAILABLE
// naming its leader (changed at will) or, with none, as a node that knows
// no leader yet; it counts the calls it refused.
type follower struct {
	Address string
	mu      sync.Mutex
	leader  string
	refused int
}

func startFollower(t *testing.T, leader string) *follower {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &follower{Address: lis.Addr().String(), leader: leader}
	s := grpc.NewServer(grpc.UnknownServiceHandler(func(interface{}, grpc.ServerStream) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.refused++
		if f.leader == "" {
			return status.Error(codes.Unavailable, "replication: node b does not lead and no leader is known yet; retry")
		}
		return status.Error(codes.Unavailable, followsMessage(f.leader))
	}))
	go s.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(s.Stop)
	return f
}

func followsMessage(leader string) string {
	return "replication: node b follows; the leader is a at leader=" + leader + " (epoch 3); send appends there"
}

func (f *follower) Lead(leader string) { f.mu.Lock(); f.leader = leader; f.mu.Unlock() }
func (f *follower) Refused() int       { f.mu.Lock(); defer f.mu.Unlock(); return f.refused }

func TestAFollowerSendsTheBatchToTheLeaderItNamesAndTheEmitterStaysThere(t *testing.T) {
	l := startLedger(t)
	f := startFollower(t, l.Address)
	logs := &quiet{}
	e := newEmitter(t, f.Address, ledger.Options{BatchSize: 50, Linger: -1, MaxBackoff: 500 * time.Millisecond,
		Logger: logs.Logger()})
	sent := calls(t, 300, "fl")
	emitAll(t, e, sent)
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := e.Stats(); s.Acknowledged != 300 || s.Duplicates != 0 || len(e.Refused()) != 0 {
		t.Fatalf("stats %+v, refused %v", s, e.Refused())
	}
	if n := f.Refused(); n != 1 {
		t.Fatalf("the follower was sent %d batches, want 1 (the first; every later one to the leader)", n)
	}
	if got := l.ReceiptIDs(); !equal(got, receiptIDs(sent)) {
		t.Fatalf("the leader's log holds %d receipts, want the 300 sent, once each, in order", len(got))
	}
	want := "evidence_ledger: " + f.Address + " does not lead: following the leader it names at " + l.Address +
		": UNAVAILABLE: " + followsMessage(l.Address) + "\n"
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("the log lacks %q:\n%s", want, logs.String())
	}
}

func TestWhenTheLeaderFollowedDiesTheEmitterGoesBackToTheFollowerAndOnToTheNewLeader(t *testing.T) {
	old, nu := startLedger(t), startLedger(t)
	f := startFollower(t, old.Address)
	e := newEmitter(t, f.Address, ledger.Options{BatchSize: 10, Linger: -1, MaxBackoff: 200 * time.Millisecond})
	first, second := calls(t, 50, "f1"), calls(t, 50, "f2")
	emitAll(t, e, first)
	if err := e.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	old.Kill()
	f.Lead("") // the lease has not expired yet
	emitAll(t, e, second)
	time.Sleep(500 * time.Millisecond)
	if s := e.Stats(); s.Acknowledged != 50 {
		t.Fatalf("with no leader known %d receipts were acknowledged, want the first 50", s.Acknowledged)
	}
	f.Lead(nu.Address) // a new leader took over
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := e.Stats(); s.Acknowledged != 100 || s.Retries == 0 || len(e.Refused()) != 0 {
		t.Fatalf("stats %+v, refused %v", s, e.Refused())
	}
	if got := nu.ReceiptIDs(); !equal(got, receiptIDs(second)) {
		t.Fatalf("the new leader's log holds %v", got)
	}
}

func TestAListOfNodesIsTriedInTurnPastOneThatIsDown(t *testing.T) {
	l := startLedger(t)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddress := dead.Addr().String()
	dead.Close()
	e := newEmitter(t, deadAddress+","+l.Address, ledger.Options{MaxBackoff: 200 * time.Millisecond})
	sent := calls(t, 20, "ls")
	emitAll(t, e, sent)
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := l.ReceiptIDs(); !equal(got, receiptIDs(sent)) {
		t.Fatalf("the log holds %v", got)
	}
}

func TestEveryNodeOfAListIsCheckedForPlainTextBeforeAnyIsDialed(t *testing.T) {
	_, err := ledger.NewEmitter("127.0.0.1:7420,10.0.0.5:7420", ledger.Options{})
	if err == nil || err.Error() != refusal("10.0.0.5:7420") {
		t.Fatalf("NewEmitter: %v, want %s", err, refusal("10.0.0.5:7420"))
	}
}
