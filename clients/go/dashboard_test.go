package ledger_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ledger "evidence-ledger/clients/go"
	"evidence-ledger/clients/go/ledgerpb"
)

func newDashboard(t *testing.T, target string) *ledger.Dashboard {
	t.Helper()
	d, err := ledger.NewDashboard(target, ledger.DashboardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// mustFor returns must(constructor(...)): the receipt, or the test fails.
func mustFor(t *testing.T) func(*ledgerpb.Receipt, error) *ledgerpb.Receipt {
	return func(r *ledgerpb.Receipt, err error) *ledgerpb.Receipt {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

func TestDashboardStepsRunAndWatch(t *testing.T) {
	l := startLedger(t)
	d := newDashboard(t, l.Address)
	must := mustFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	changes := make(chan *ledgerpb.StepChange, 10)
	watched := make(chan error, 1)
	go func() {
		n := 0
		watched <- d.Watch(ctx, ledger.StepQuery{Team: "team-w"}, -1, func(c *ledgerpb.StepChange) error {
			changes <- c
			if n++; n == 4 {
				return ledger.ErrStopWatch
			}
			return nil
		})
	}()
	b := func(step string) ledger.Base { return ledger.Base{Team: "team-w", RunID: "run-1", StepID: step} }
	start := must(ledger.AgentStart(b("build"), ledger.AgentStartFields{Decision: ledger.Allow, TimeoutMs: ledger.Int64(600000)}))
	lost := must(ledger.AgentStart(b("test"), ledger.AgentStartFields{Decision: ledger.Allow, TimeoutMs: ledger.Int64(50)}))
	e := newEmitter(t, l.Address, ledger.Options{})
	emitAll(t, e, []*ledgerpb.Receipt{start,
		must(ledger.ModelCall(b("build"), ledger.ModelCallFields{Route: "m", Decision: ledger.Deny})),
		must(ledger.AgentExec(b("build"), ledger.AgentExecFields{StartReceiptID: start.ReceiptId, Status: ledger.Succeeded})),
		lost})
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	unknown := ledger.StepQuery{Team: "team-w", States: []string{"unknown"}}
	var steps []*ledgerpb.Step
	for ctx.Err() == nil {
		var err error
		if steps, err = d.Steps(ctx, unknown, 100); err != nil || len(steps) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(steps) != 1 || steps[0].StepId != "test" {
		t.Fatalf("unknown steps: %v", steps)
	}
	build, err := d.Step(ctx, "team-w", "run-1", "build", 0)
	if err != nil || ledger.StateName(build.State) != "succeeded" || build.Calls.ModelCallsDenied != 1 {
		t.Fatalf("build: %v %v", build, err)
	}
	run, err := d.Run(ctx, "team-w", "run-1")
	if err != nil || run.StepsSucceeded != 1 || run.StepsUnknown != 1 {
		t.Fatalf("run: %v %v", run, err)
	}
	runs, err := d.Runs(ctx, "team-w", 10)
	if err != nil || len(runs) != 1 || runs[0].RunId != "run-1" {
		t.Fatalf("runs: %v %v", runs, err)
	}
	if err := <-watched; err != nil {
		t.Fatalf("Watch: %v", err)
	}
	close(changes)
	var seqs []uint64
	var states []string
	for c := range changes {
		seqs = append(seqs, c.Seq)
		states = append(states, c.Step.StepId+" "+ledger.StateName(c.Step.State))
	}
	// build started, build succeeded, test started, test declared unknown
	want := []string{"build pending", "build succeeded", "test pending", "test unknown"}
	if !sort.SliceIsSorted(seqs, func(i, j int) bool { return seqs[i] < seqs[j] }) || !equal(states, want) {
		t.Fatalf("changes %v at %v, want %v", states, seqs, want)
	}
	if _, err := d.Steps(ctx, ledger.StepQuery{Team: "team-w", States: []string{"lost"}}, 1); err == nil ||
		err.Error() != "states: 'lost' is not one of pending, succeeded, failed, denied, unknown" {
		t.Fatalf("Steps with state lost: %v", err)
	}
}

func TestWatchResumesAfterARestartWithNoGapAndNoDuplicate(t *testing.T) {
	l := startLedger(t)
	d := newDashboard(t, l.Address)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	must := mustFor(t)
	emitSteps := func(from, to int) {
		e := newEmitter(t, l.Address, ledger.Options{})
		for i := from; i < to; i++ {
			b := ledger.Base{Team: "team-w", RunID: "run-1", StepID: "s" + string(rune('a'+i))}
			s := must(ledger.AgentStart(b, ledger.AgentStartFields{Decision: ledger.Allow, TimeoutMs: ledger.Int64(600000)}))
			emitAll(t, e, []*ledgerpb.Receipt{s,
				must(ledger.AgentExec(b, ledger.AgentExecFields{StartReceiptID: s.ReceiptId, Status: ledger.Succeeded}))})
		}
		if err := e.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	emitSteps(0, 3)
	got := make(chan uint64, 100)
	watched := make(chan error, 1)
	go func() {
		n := 0
		watched <- d.Watch(ctx, ledger.StepQuery{Team: "team-w"}, -1, func(c *ledgerpb.StepChange) error {
			got <- c.Seq
			if n++; n == 12 {
				return ledger.ErrStopWatch
			}
			return nil
		})
	}()
	for i := 0; i < 6; i++ {
		<-got
	}
	l.Kill()
	time.Sleep(300 * time.Millisecond)
	l.Start()
	emitSteps(3, 6)
	if err := <-watched; err != nil {
		t.Fatalf("Watch: %v", err)
	}
	close(got)
	n := 6
	var last uint64 = 5
	for s := range got {
		if s <= last {
			t.Fatalf("seq %d after %d: a duplicate or out of order", s, last)
		}
		last = s
		n++
	}
	if n != 12 || last != 11 {
		t.Fatalf("%d changes, the last at seq %d; want 12, the last at 11", n, last)
	}
}

func TestWatchEndsWithTheLedgersRefusal(t *testing.T) {
	l := startLedger(t)
	d := newDashboard(t, l.Address)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := d.Watch(ctx, ledger.StepQuery{}, -1, func(*ledgerpb.StepChange) error { return nil })
	if st := status.Convert(err); st.Code() != codes.InvalidArgument ||
		st.Message() != "filter.team: required, 1-63 bytes of [a-z0-9-]" {
		t.Fatalf("Watch without a team: %v, want the ledger's refusal", err)
	}
}

// runsOnceProjected returns the team's runs once there are some (the query
// projection follows the log: a receipt just acknowledged may not be in it
// yet), or after 10 s.
func runsOnceProjected(d *ledger.Dashboard, team string) ([]*ledgerpb.Run, error) {
	runs, err := d.Runs(context.Background(), team, 10)
	for deadline := time.Now().Add(10 * time.Second); err == nil && len(runs) == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		runs, err = d.Runs(context.Background(), team, 10)
	}
	return runs, err
}
