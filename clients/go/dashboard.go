package ledger

// Dashboard: step outcomes and run summaries, and a live watch
// (proto/query.proto). Steps and runs are the protobuf messages Step and
// Run; StateName names a step's state. Calls return gRPC status errors
// (e.g. PERMISSION_DENIED for a team the certificate's identity may not
// query). Thread safety: every method may be called from any goroutine.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"evidence-ledger/clients/go/ledgerpb"
)

// DashboardOptions of a Dashboard; a zero field takes its default.
type DashboardOptions struct {
	TLS         credentials.TransportCredentials // nil: plain text, to a loopback address unless Insecure
	Insecure    bool                             // plain text to a target off this machine (as Options.Insecure)
	Timeout     time.Duration                    // of each call but Watch (default 10 s)
	DialOptions []grpc.DialOption
}

// Dashboard reads one ledger's query service.
type Dashboard struct {
	conn    *grpc.ClientConn
	stub    ledgerpb.QueryServiceClient
	timeout time.Duration
}

// StepQuery selects steps: Team (required), and optionally a run, states
// by name ("pending", "succeeded", "failed", "denied", "unknown") and
// anomalies by name ("late_completion", ...).
type StepQuery struct {
	Team      string
	RunID     string
	States    []string
	Anomalies []string
}

// ErrStopWatch, returned by Watch's function, ends the watch; Watch then
// returns nil.
var ErrStopWatch = errors.New("stop watching")

// NewDashboard connects (lazily) to target, HOST:PORT; without TLS, to a
// loopback address only unless Insecure (as NewEmitter).
func NewDashboard(target string, opts DashboardOptions) (*Dashboard, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	conn, err := dial(target, opts.TLS, opts.Insecure, time.Second, opts.DialOptions)
	if err != nil {
		return nil, err
	}
	return &Dashboard{conn: conn, stub: ledgerpb.NewQueryServiceClient(conn), timeout: opts.Timeout}, nil
}

// Close closes the connection.
func (d *Dashboard) Close() error { return d.conn.Close() }

// StateName names a step's state: "pending", "succeeded", "failed",
// "denied" or "unknown".
func StateName(s ledgerpb.StepState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "STEP_STATE_"))
}

func (q StepQuery) filter() (*ledgerpb.StepFilter, error) {
	f := &ledgerpb.StepFilter{Team: q.Team, RunId: q.RunID}
	for _, s := range q.States {
		v, ok := ledgerpb.StepState_value["STEP_STATE_"+strings.ToUpper(s)]
		if !ok || v == 0 || s != strings.ToLower(s) {
			return nil, fmt.Errorf("states: '%s' is not one of %s", s,
				strings.Join(enumNames("STEP_STATE_", ledgerpb.StepState_value), ", "))
		}
		f.States = append(f.States, ledgerpb.StepState(v))
	}
	for _, a := range q.Anomalies {
		v, ok := ledgerpb.Anomaly_value["ANOMALY_"+strings.ToUpper(a)]
		if !ok || v == 0 || a != strings.ToLower(a) {
			return nil, fmt.Errorf("anomalies: '%s' is not one of %s", a,
				strings.Join(enumNames("ANOMALY_", ledgerpb.Anomaly_value), ", "))
		}
		f.Anomalies = append(f.Anomalies, ledgerpb.Anomaly(v))
	}
	return f, nil
}

// Steps returns up to limit steps (newest first), page by page.
func (d *Dashboard) Steps(ctx context.Context, q StepQuery, limit int) ([]*ledgerpb.Step, error) {
	f, err := q.filter()
	if err != nil {
		return nil, err
	}
	var out []*ledgerpb.Step
	token := ""
	for len(out) < limit {
		page := limit - len(out)
		if page > 1000 {
			page = 1000
		}
		c, cancel := context.WithTimeout(ctx, d.timeout)
		resp, err := d.stub.ListSteps(c, &ledgerpb.ListStepsRequest{Filter: f, PageSize: int32(page), PageToken: token})
		cancel()
		if err != nil {
			return nil, err
		}
		out = append(out, resp.Steps...)
		if token = resp.NextPageToken; token == "" {
			break
		}
	}
	return out, nil
}

// Step returns one step (attempt 0 means 1).
func (d *Dashboard) Step(ctx context.Context, team, runID, stepID string, attempt int64) (*ledgerpb.Step, error) {
	c, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.stub.GetStep(c, &ledgerpb.GetStepRequest{Team: team, RunId: runID, StepId: stepID, Attempt: attempt})
}

// Run returns one run's summary.
func (d *Dashboard) Run(ctx context.Context, team, runID string) (*ledgerpb.Run, error) {
	c, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.stub.GetRun(c, &ledgerpb.GetRunRequest{Team: team, RunId: runID})
}

// Runs returns up to limit (at most 1000) runs of a team.
func (d *Dashboard) Runs(ctx context.Context, team string, limit int) ([]*ledgerpb.Run, error) {
	if limit > 1000 {
		limit = 1000
	}
	c, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	resp, err := d.stub.ListRuns(c, &ledgerpb.ListRunsRequest{Team: team, PageSize: int32(limit)})
	if err != nil {
		return nil, err
	}
	return resp.Runs, nil
}

// Watch calls fn with every step change after afterSeq (-1: from the
// start), the past then live, in seq order, until fn returns an error
// (ErrStopWatch: Watch returns nil; another: Watch returns it), ctx ends
// (ctx's error) or the ledger refuses the watch (its status error). On
// UNAVAILABLE, or CANCELLED by the ledger (a ledger restarting), it
// reconnects after the last change it passed to fn, with a back-off of
// 0.1 s to 5 s: no gap, no duplicate.
func (d *Dashboard) Watch(ctx context.Context, q StepQuery, afterSeq int64,
	fn func(*ledgerpb.StepChange) error) error {
	f, err := q.filter()
	if err != nil {
		return err
	}
	backoff := 100 * time.Millisecond
	for resumed := false; ; resumed = true {
		err := d.watchOnce(ctx, f, &afterSeq, &backoff, resumed, fn)
		if errors.Is(err, ErrStopWatch) || err == io.EOF { // io.EOF: the ledger ended the watch
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// UNAVAILABLE: the connection broke; CANCELLED that this side did not
		// ask for: the ledger shut down and ended its watches.
		if code := status.Code(err); code != codes.Unavailable && code != codes.Canceled {
			return err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		if backoff *= 2; backoff > 5*time.Second {
			backoff = 5 * time.Second
		}
	}
}

// watchOnce reads one stream to its end; afterSeq follows the changes passed
// to fn.
// A resumed watch waits for the ledger to be back (bounded by ctx) rather
// than failing while the connection is down.
func (d *Dashboard) watchOnce(ctx context.Context, f *ledgerpb.StepFilter, afterSeq *int64,
	backoff *time.Duration, resumed bool, fn func(*ledgerpb.StepChange) error) error {
	c, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := d.stub.WatchSteps(c, &ledgerpb.WatchStepsRequest{Filter: f, AfterSeq: *afterSeq},
		grpc.WaitForReady(resumed))
	if err != nil {
		return err
	}
	for {
		change, err := stream.Recv()
		if err != nil {
			return err // io.EOF: the ledger ended the watch; its status otherwise
		}
		*afterSeq = int64(change.Seq)
		*backoff = 100 * time.Millisecond
		if err := fn(change); err != nil {
			return err
		}
	}
}
