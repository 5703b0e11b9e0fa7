package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	ledger "evidence-ledger/clients/go"
	"evidence-ledger/clients/go/ledgerpb"
)

// calls makes n model calls of team-a with ids prefix-0 ... prefix-(n-1).
func calls(t *testing.T, n int, prefix string) []*ledgerpb.Receipt {
	t.Helper()
	out := make([]*ledgerpb.Receipt, n)
	for i := range out {
		r, err := ledger.ModelCall(
			ledger.Base{Team: "team-a", RunID: fmt.Sprintf("run-%d", i/50), StepID: fmt.Sprintf("step-%d", i%7),
				ReceiptID: fmt.Sprintf("%s-%d", prefix, i)},
			ledger.ModelCallFields{Route: "m", Decision: ledger.Allow, InputTokens: ledger.Int64(int64(i))})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = r
	}
	return out
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func receiptIDs(rs []*ledgerpb.Receipt) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ReceiptId
	}
	return out
}

func equal(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// quiet is a logger into a buffer the test may read.
type quiet struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (q *quiet) Write(p []byte) (int, error) { q.mu.Lock(); defer q.mu.Unlock(); return q.buf.Write(p) }
func (q *quiet) String() string              { q.mu.Lock(); defer q.mu.Unlock(); return q.buf.String() }
func (q *quiet) Logger() *log.Logger         { return log.New(q, "", 0) }

func newEmitter(t *testing.T, target string, opts ledger.Options) *ledger.Emitter {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = (&quiet{}).Logger()
	}
	e, err := ledger.NewEmitter(target, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func emitAll(t *testing.T, e *ledger.Emitter, rs []*ledgerpb.Receipt) {
	t.Helper()
	for _, r := range rs {
		if err := e.Emit(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEmitterBatchesAndFlushesOnClose(t *testing.T) {
	l := startLedger(t)
	var mu sync.Mutex
	var seqs []int
	e := newEmitter(t, l.Address, ledger.Options{BatchSize: 64, OnResult: func(r *ledgerpb.Receipt, res ledger.Result) {
		mu.Lock()
		defer mu.Unlock()
		seqs = append(seqs, int(res.Seq))
	}})
	emitAll(t, e, calls(t, 1000, "a"))
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Acknowledged != 1000 || len(e.Refused()) != 0 {
		t.Fatalf("acknowledged %d, refused %v", st.Acknowledged, e.Refused())
	}
	sort.Ints(seqs)
	for i, s := range seqs {
		if s != i {
			t.Fatalf("results' seqs: %d at %d (of %d results)", s, i, len(seqs))
		}
	}
	if len(seqs) != 1000 {
		t.Fatalf("%d results, want 1000", len(seqs))
	}
	if got := l.ReceiptIDs(); !equal(got, ids("a", 1000)) {
		t.Fatalf("the log holds %d receipts, not a-0 ... a-999 in order", len(got))
	}
}

func TestServerRestartMidStreamLosesNothingAndDuplicatesNothing(t *testing.T) {
	l := startLedger(t)
	sent := calls(t, 6000, "b")
	e := newEmitter(t, l.Address, ledger.Options{BatchSize: 100, MaxBackoff: 500 * time.Millisecond})
	produced := make(chan error, 1)
	go func() {
		for _, r := range sent {
			if err := e.Emit(context.Background(), r); err != nil {
				produced <- err
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
		produced <- nil
	}()
	time.Sleep(400 * time.Millisecond)
	l.Kill() // mid-stream: batches in flight, some acknowledged, some not
	time.Sleep(500 * time.Millisecond)
	l.Start()
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if refused := e.Refused(); len(refused) != 0 || st.Acknowledged != len(sent) {
		first := ledger.Result{}
		if len(refused) > 0 {
			first = refused[0]
		}
		t.Fatalf("acknowledged %d of %d, refused %d, the first %+v", st.Acknowledged, len(sent), len(refused), first)
	}
	if st.Retries == 0 {
		t.Fatal("no retries: the restart was not seen, the test did not test it")
	}
	got := l.ReceiptIDs()
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("%s was appended twice", id)
		}
		seen[id] = true
	}
	for _, id := range receiptIDs(sent) {
		if !seen[id] {
			t.Fatalf("%s is not in the log", id)
		}
	}
	if len(got) != len(sent) {
		t.Fatalf("the log holds %d receipts, %d were sent", len(got), len(sent))
	}
	t.Logf("%d retries, %d duplicates", st.Retries, st.Duplicates)
}

func TestRefusalsAreReportedNotRetried(t *testing.T) {
	l := startLedger(t)
	rs := calls(t, 2, "c")
	rs[1].Team = "Not A Team"
	e := newEmitter(t, l.Address, ledger.Options{})
	emitAll(t, e, rs)
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	refused := e.Refused()
	if e.Stats().Acknowledged != 1 || len(refused) != 1 {
		t.Fatalf("acknowledged %d, refused %v", e.Stats().Acknowledged, refused)
	}
	if refused[0].ReceiptID != "c-1" || refused[0].Code != codes.InvalidArgument ||
		!strings.Contains(refused[0].Message, "team") {
		t.Fatalf("refused %+v", refused[0])
	}
	if e.Stats().Retries != 0 {
		t.Fatalf("%d retries of a refusal", e.Stats().Retries)
	}
}

func TestIDsInTheLedgersNamespaceAreRefusedAtEmit(t *testing.T) {
	l := startLedger(t)
	r := calls(t, 1, "c")[0]
	r.ReceiptId = "ledger.unknown.0"
	e := newEmitter(t, l.Address, ledger.Options{})
	err := e.Emit(context.Background(), r)
	want := "receipt_id: 'ledger.unknown.0' is in the ledger's namespace: ids starting with 'ledger.' are " +
		"written by the ledger only"
	if err == nil || err.Error() != want {
		t.Fatalf("Emit: %v, want %q", err, want)
	}
	r.ReceiptId = ""
	if err := e.Emit(context.Background(), r); err == nil || err.Error() != "receipt_id: required (retries rely on it)" {
		t.Fatalf("Emit without an id: %v", err)
	}
	if err := e.Close(context.Background()); err != nil || e.Stats().Acknowledged != 0 {
		t.Fatalf("Close: %v, acknowledged %d", err, e.Stats().Acknowledged)
	}
}

func TestResourceExhaustedIsRetriedWithBackOff(t *testing.T) {
	l := startLedger(t, "--rate-per-identity", "400")
	e := newEmitter(t, l.Address, ledger.Options{BatchSize: 200, MaxBackoff: 500 * time.Millisecond})
	emitAll(t, e, calls(t, 1200, "d"))
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.Stats().Acknowledged != 1200 || e.Stats().Retries == 0 {
		t.Fatalf("stats %+v: want 1200 acknowledged and the rate limit hit", e.Stats())
	}
	got := l.ReceiptIDs()
	sort.Strings(got)
	want := ids("d", 1200)
	sort.Strings(want)
	if !equal(got, want) {
		t.Fatalf("the log holds %d receipts, not d-0 ... d-1199 once each", len(got))
	}
}

func TestBoundedBufferBlocksOrFails(t *testing.T) {
	target := fmt.Sprintf("127.0.0.1:%d", freePort(t)) // nothing listens: nothing is ever settled
	ctx := context.Background()
	e := newEmitter(t, target, ledger.Options{MaxBuffer: 5, NoBlock: true, RPCTimeout: 200 * time.Millisecond})
	emitAll(t, e, calls(t, 5, "e"))
	started := time.Now()
	err := e.Emit(ctx, calls(t, 6, "e")[5])
	if !errors.Is(err, ledger.ErrBufferFull) || time.Since(started) > time.Second { // at once, not after EmitTimeout
		t.Fatalf("Emit on a full buffer with NoBlock: %v after %v", err, time.Since(started))
	}
	if err.Error() != "buffer full: 5 receipts are not settled yet (MaxBuffer)" {
		t.Fatalf("message %q", err)
	}

	waiting := newEmitter(t, target, ledger.Options{MaxBuffer: 1, EmitTimeout: 300 * time.Millisecond,
		RPCTimeout: 200 * time.Millisecond})
	emitAll(t, waiting, calls(t, 1, "f"))
	started = time.Now()
	if err := waiting.Emit(ctx, calls(t, 2, "f")[1]); !errors.Is(err, ledger.ErrBufferFull) {
		t.Fatalf("Emit on a full buffer: %v", err)
	}
	if waited := time.Since(started); waited < 300*time.Millisecond {
		t.Fatalf("Emit waited %v, EmitTimeout is 300 ms", waited)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	started = time.Now()
	err = waiting.Emit(short, calls(t, 2, "f")[1])
	if !errors.Is(err, ledger.ErrBufferFull) || time.Since(started) > 5*time.Second ||
		!strings.HasSuffix(err.Error(), "gave up: context deadline exceeded") {
		t.Fatalf("Emit with a context of 50 ms: %v after %v", err, time.Since(started))
	}

	closing, cancelClose := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelClose()
	var u *ledger.UnsettledError
	if err := e.Close(closing); !errors.As(err, &u) || !equal(receiptIDs(u.Receipts), ids("e", 5)) {
		t.Fatalf("Close: %v, want the 5 receipts unsettled", err) // not flushed: said so, not hidden
	}
	if !equal(receiptIDs(e.Unsettled()), ids("e", 5)) || u.Error() != "5 receipt(s) not settled in time" {
		t.Fatalf("Unsettled() %v, %q", receiptIDs(e.Unsettled()), u.Error())
	}
	if err := e.Emit(ctx, calls(t, 1, "g")[0]); err != ledger.ErrClosed {
		t.Fatalf("Emit after Close: %v", err)
	}
	closing2, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	if err := waiting.Close(closing2); !errors.As(err, &u) || !equal(receiptIDs(u.Receipts), []string{"f-0"}) {
		t.Fatalf("Close: %v", err)
	}
}

func TestACallbackThatPanicsIsLoggedCountedAndNeverStopsTheSender(t *testing.T) {
	l := startLedger(t)
	logged := &quiet{}
	e := newEmitter(t, l.Address, ledger.Options{BatchSize: 10, Logger: logged.Logger(),
		OnResult: func(*ledgerpb.Receipt, ledger.Result) { panic("a gateway's bug") }})
	emitAll(t, e, calls(t, 50, "g"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Flush(ctx); err != nil {
		t.Fatalf("the sender stopped at the callback's panic: %v", err)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Acknowledged != 50 || st.CallbackErrors != 50 {
		t.Fatalf("stats %+v", st)
	}
	first := strings.SplitN(logged.String(), "\n", 2)[0]
	if first != "evidence_ledger: OnResult panicked for receipt g-0 (OK); the emitter goes on: a gateway's bug" {
		t.Fatalf("logged %q", first)
	}
}

func TestFlushAndCloseWaitFlushTimeoutThenSaySo(t *testing.T) {
	target := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	e := newEmitter(t, target, ledger.Options{RPCTimeout: 200 * time.Millisecond, FlushTimeout: 500 * time.Millisecond})
	emitAll(t, e, calls(t, 1, "h"))
	started := time.Now()
	var u *ledger.UnsettledError
	if err := e.Flush(context.Background()); !errors.As(err, &u) || u.Count != 1 {
		t.Fatalf("Flush: %v", err)
	}
	if err := e.Close(context.Background()); !errors.As(err, &u) || !equal(receiptIDs(u.Receipts), []string{"h-0"}) {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(started); took < time.Second || took > 5*time.Second {
		t.Fatalf("Flush and Close took %v, FlushTimeout is 500 ms each", took)
	}
}

func TestRetriesAreLoggedWithTheReason(t *testing.T) {
	target := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logged := &quiet{}
	e := newEmitter(t, target, ledger.Options{RPCTimeout: 200 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
		Logger: logged.Logger()})
	emitAll(t, e, calls(t, 1, "i"))
	time.Sleep(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	e.Close(ctx) //nolint:errcheck // unsettled, as the test wants
	first := strings.SplitN(logged.String(), "\n", 2)[0]
	if !regexp.MustCompile(`^evidence_ledger: retrying 1 receipt\(s\) in [0-9.]+ s: (UNAVAILABLE|DEADLINE_EXCEEDED): .+`).
		MatchString(first) {
		t.Fatalf("logged %q", first)
	}
	if e.Stats().Retries == 0 {
		t.Fatal("no retries counted")
	}
}

func TestTLSWithTheDevelopmentCertificates(t *testing.T) {
	certs := t.TempDir()
	runScript(t, "../../scripts/dev-certs.sh", certs)
	c := func(name string) string { return certs + "/" + name }
	l := startLedger(t, "--tls-cert", c("server.pem"), "--tls-key", c("server.key"), "--client-ca", c("ca.pem"),
		"--policy", c("policy.json"))
	creds, err := ledger.TLSFromFiles(c("ca.pem"), c("gateway.pem"), c("gateway.key"), "localhost")
	if err != nil {
		t.Fatal(err)
	}
	e := newEmitter(t, fmt.Sprintf("localhost:%d", l.port), ledger.Options{TLS: creds})
	for _, team := range []string{"team-a", "team-b"} {
		r, err := ledger.ModelCall(ledger.Base{Team: team, RunID: "run-1", StepID: "step-1"},
			ledger.ModelCallFields{Route: "m", Decision: ledger.Allow})
		if err != nil {
			t.Fatal(err)
		}
		emitAll(t, e, []*ledgerpb.Receipt{r})
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	refused := e.Refused()
	if e.Stats().Acknowledged != 1 || len(refused) != 1 || refused[0].Code != codes.PermissionDenied ||
		!strings.Contains(refused[0].Message, "team-b") { // the gateway emits for team-a only
		t.Fatalf("acknowledged %d, refused %+v", e.Stats().Acknowledged, refused)
	}

	// The auditor reads team-a's run; the gateway, an emitter, may not.
	auditor, err := ledger.TLSFromFiles(c("ca.pem"), c("auditor.pem"), c("auditor.key"), "localhost")
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []struct {
		creds credentials.TransportCredentials
		code  codes.Code
	}{{auditor, codes.OK}, {creds, codes.PermissionDenied}} {
		d, err := ledger.NewDashboard(fmt.Sprintf("localhost:%d", l.port), ledger.DashboardOptions{TLS: who.creds})
		if err != nil {
			t.Fatal(err)
		}
		runs, err := runsOnceProjected(d, "team-a")
		if status.Code(err) != who.code || (who.code == codes.OK && len(runs) != 1) {
			t.Fatalf("runs of team-a: %v %v, want %v", runs, err, who.code)
		}
		d.Close()
	}

}

// TestConfigurationErrorsStopTheEmitter: credentials that do not match the
// server, and an identity the ledger refuses, stop the emitter at once
// (issue 38: a TLS mismatch was retried for good): the receipts are
// refused with the reason, it is logged once, and Emit fails with it.
func TestConfigurationErrorsStopTheEmitter(t *testing.T) {
	certs, other := t.TempDir(), t.TempDir()
	runScript(t, "../../scripts/dev-certs.sh", certs, "gateway", "stranger")
	runScript(t, "../../scripts/dev-certs.sh", other)
	c := func(name string) string { return certs + "/" + name }
	l := startLedger(t, "--tls-cert", c("server.pem"), "--tls-key", c("server.key"), "--client-ca", c("ca.pem"),
		"--policy", c("policy.json"))
	plain := startLedger(t)
	tlsAt, plainAt := fmt.Sprintf("localhost:%d", l.port), fmt.Sprintf("localhost:%d", plain.port)
	files := func(dir, who string) credentials.TransportCredentials {
		creds, err := ledger.TLSFromFiles(c("ca.pem"), dir+"/"+who+".pem", dir+"/"+who+".key", "localhost")
		if err != nil {
			t.Fatal(err)
		}
		return creds
	}
	caOnly, err := credentials.NewClientTLSFromFile(c("ca.pem"), "localhost")
	if err != nil {
		t.Fatal(err)
	}
	const how = "ledger.TLSFromFiles(ca, cert, key, serverName)"
	closed := "the server at " + tlsAt + " closed the connection in the TLS handshake: it wants a client " +
		"certificate issued by a CA it trusts: give one in Options.TLS (" + how + ")"
	for _, tc := range []struct {
		name, target string
		creds        credentials.TransportCredentials
		code         codes.Code
		message, why string
	}{
		{"plain text to TLS", tlsAt, nil, codes.FailedPrecondition,
			"the server at " + tlsAt + " speaks TLS: give Options.TLS (" + how + ")", ""},
		{"no client certificate", tlsAt, caOnly, codes.FailedPrecondition, closed, ""},
		{"a certificate of another CA", tlsAt, files(other, "gateway"), codes.FailedPrecondition, closed, ""},
		{"TLS to plain text", plainAt, files(certs, "gateway"), codes.FailedPrecondition,
			"the server at " + plainAt + " speaks plain text, not TLS: leave Options.TLS nil (plain text goes to " +
				"a loopback address only, or with Options.Insecure)", ""},
		{"an identity with no rule", tlsAt, files(certs, "stranger"), codes.PermissionDenied,
			"identity 'uri:spiffe://dev/stranger' has no rule in the policy",
			"PERMISSION_DENIED: identity 'uri:spiffe://dev/stranger' has no rule in the policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := tc.why
			if why == "" {
				why = tc.message
			}
			logged := &quiet{}
			e := newEmitter(t, tc.target, ledger.Options{TLS: tc.creds, MaxBackoff: 200 * time.Millisecond,
				Logger: logged.Logger()})
			started := time.Now()
			emitAll(t, e, calls(t, 1, "c"))
			if err := e.Flush(context.Background()); err != nil || time.Since(started) > 5*time.Second {
				t.Fatalf("Flush: %v after %v", err, time.Since(started))
			}
			var ce *ledger.ConfigurationError
			if err := e.Emit(context.Background(), calls(t, 1, "d")[0]); !errors.As(err, &ce) || ce.Message != why {
				t.Fatalf("Emit after the failure: %v, want %q", err, why)
			}
			if err := e.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			refused := e.Refused()
			if len(refused) != 1 || refused[0].ReceiptID != "c-0" || refused[0].Code != tc.code ||
				refused[0].Message != tc.message || e.Stats().Retries != 0 || e.Failure() == nil ||
				e.Failure().Error() != why {
				t.Fatalf("refused %+v, retries %d, failure %v, logged %q", refused, e.Stats().Retries, e.Failure(),
					logged.String())
			}
			if want := "evidence_ledger: " + why + "; the emitter stops: 1 receipt(s) refused, and Emit fails\n"; logged.String() != want {
				t.Fatalf("logged %q, want %q", logged.String(), want)
			}
		})
	}
}

func TestConcurrentClosesReportTheSameUnsettledReceipts(t *testing.T) {
	target := fmt.Sprintf("127.0.0.1:%d", freePort(t)) // nothing listens
	e := newEmitter(t, target, ledger.Options{RPCTimeout: 100 * time.Millisecond, FlushTimeout: 300 * time.Millisecond})
	emitAll(t, e, calls(t, 3, "j"))
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { errs <- e.Close(context.Background()) }()
	}
	for i := 0; i < 2; i++ {
		var u *ledger.UnsettledError
		if err := <-errs; !errors.As(err, &u) || !equal(receiptIDs(u.Receipts), ids("j", 3)) {
			t.Fatalf("Close %d: %v", i, err)
		}
	}
}

func TestAReceiptSentAgainIsAcknowledgedAsADuplicateOfItsEntry(t *testing.T) {
	l := startLedger(t)
	rs := calls(t, 3, "dup")
	first := newEmitter(t, l.Address, ledger.Options{})
	emitAll(t, first, rs)
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var results []ledger.Result
	var mu sync.Mutex
	again := newEmitter(t, l.Address, ledger.Options{OnResult: func(_ *ledgerpb.Receipt, res ledger.Result) {
		mu.Lock()
		defer mu.Unlock()
		results = append(results, res)
	}})
	emitAll(t, again, rs[1:])
	if err := again.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := again.Stats(); st.Acknowledged != 2 || st.Duplicates != 2 {
		t.Fatalf("stats %+v", st)
	}
	want := []ledger.Result{{ReceiptID: "dup-1", Code: codes.OK, Seq: 1, Duplicate: true},
		{ReceiptID: "dup-2", Code: codes.OK, Seq: 2, Duplicate: true}}
	if fmt.Sprint(results) != fmt.Sprint(want) {
		t.Fatalf("results %+v, want %+v", results, want)
	}
	if got := l.ReceiptIDs(); !equal(got, ids("dup", 3)) {
		t.Fatalf("the log holds %v", got)
	}
}

func TestAnEmitterOrADashboardWithoutATargetIsRefused(t *testing.T) {
	if _, err := ledger.NewEmitter("", ledger.Options{}); err == nil || err.Error() != "target: required, HOST:PORT of the ledger" {
		t.Fatalf("NewEmitter: %v", err)
	}
	if _, err := ledger.NewDashboard("", ledger.DashboardOptions{}); err == nil || err.Error() != "target: required, HOST:PORT of the ledger" {
		t.Fatalf("NewDashboard: %v", err)
	}
}
