package ledger

// Emitter: sends receipts to the ledger in batches, from a goroutine.
//
// Guarantees:
//   - A receipt is settled when the ledger acknowledged it (appended, or
//     already there: a retry answered as a duplicate) or refused it for good
//     (INVALID_ARGUMENT, PERMISSION_DENIED, ALREADY_EXISTS, ...). Refusals
//     go to OnResult and to Refused(); nothing is dropped silently.
//   - UNAVAILABLE, RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED, for a whole
//     request or for single receipts, are retried with the same receipt_id
//     after an exponential back-off with jitter: the ledger appends a
//     (team, receipt_id) once, so retries never make duplicates. Receipt
//     ids are unique per team only; ids starting with "ledger." are the
//     ledger's and refused by Emit.
//   - The buffer is bounded (MaxBuffer receipts not yet settled): Emit
//     waits for room (up to EmitTimeout, or until its context ends) or,
//     with NoBlock, fails at once; either way with ErrBufferFull.
//   - Flush and Close wait FlushTimeout (30 s) at most, or until their
//     context ends. A Close that could not flush in time returns an
//     *UnsettledError holding the receipts it could not settle, for the
//     caller to keep (they are also in Unsettled()).
//   - OnResult(receipt, result) is called on the emitter's goroutine once
//     per receipt when it is settled. A panic in it is logged, counted in
//     Stats().CallbackErrors, and never stops the sender. Keep it quick: it
//     runs before the next batch is sent.
//   - Every retry is logged, with the receipts' count, the delay and the
//     reason (the gRPC code and message).
//   - A configuration error is never retried: a whole request refused with
//     UNAUTHENTICATED or PERMISSION_DENIED, or a connection that fails in
//     the handshake because Options.TLS does not match what the server
//     speaks (learned from a probe of its TLS handshake: "the server at
//     HOST:PORT speaks TLS: give Options.TLS ..."). The batch and every
//     receipt queued are settled as refused with it (FAILED_PRECONDITION
//     and that message for a TLS mismatch), it is logged once, Failure()
//     returns it, and Emit fails with it (a *ConfigurationError) from then
//     on: every later receipt would meet it too.
//   - Replicated shards: the target may name several nodes of the shard,
//     separated by commas. A node that follows refuses an append with
//     UNAVAILABLE naming the leader (leader=HOST:PORT): the batch goes there
//     at once, with the same TLS credentials (the server name checked as
//     before) and dial options, and so do the next ones. When the followed
//     leader fails (UNAVAILABLE or a deadline) the Emitter goes back to the
//     configured nodes, and on each such failure moves on to the next of
//     them. The receipt_id stays the same on every node, so no receipt is
//     appended twice (follow.go).
//
// Thread safety: every method may be called from any goroutine.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"evidence-ledger/clients/go/ledgerpb"
)

// LedgerIDPrefix starts the receipt ids the ledger keeps for itself
// (CONTRACT section 3).
const LedgerIDPrefix = "ledger."

var (
	// ErrBufferFull: Emit found MaxBuffer receipts unsettled, and was told
	// not to wait or waited in vain.
	ErrBufferFull = errors.New("buffer full")
	// ErrClosed: Emit after Close.
	ErrClosed = errors.New("emitter is closed")
)

// ConfigurationError is what stopped an Emitter (Failure) and what Emit
// returns from then on: its credentials do not match what the server
// speaks, or the ledger refused its identity.
type ConfigurationError struct {
	Message string
}

func (e *ConfigurationError) Error() string { return e.Message }

// UnsettledError is what Flush and Close return when they ran out of time:
// Receipts are those not settled (from Close: every one, in emit order, for
// the caller to keep; from Flush: their count only, Receipts is nil).
type UnsettledError struct {
	Count    int
	Receipts []*ledgerpb.Receipt
}

func (e *UnsettledError) Error() string {
	return fmt.Sprintf("%d receipt(s) not settled in time", e.Count)
}

// Result is how the ledger settled a receipt.
type Result struct {
	ReceiptID string
	// Code is codes.OK when appended (or already there); else why it was
	// refused.
	Code codes.Code
	// Message is the refusal's message, naming the field and the rule; ""
	// when OK.
	Message string
	// Seq is the entry's position in the log when OK.
	Seq uint64
	// Duplicate: OK because the ledger already held this receipt (a retry).
	Duplicate bool
}

// Stats counts what an Emitter did.
type Stats struct {
	Acknowledged   int // receipts the ledger appended or already held
	Duplicates     int // of those, the ones it already held
	Retries        int // receipts sent again (a batch of 10 sent twice counts 10)
	CallbackErrors int // panics of OnResult (logged, then ignored)
}

// Options of an Emitter. A zero field takes its default.
type Options struct {
	// TLS: credentials for mutual TLS (see TLSFromFiles); nil: plain text,
	// which NewEmitter refuses for a target that is not a loopback address
	// (127.0.0.0/8, ::1, localhost) or a unix socket, unless Insecure.
	TLS credentials.TransportCredentials
	// Insecure: plain text to a target off this machine, where anyone on
	// the way reads the receipts and the ledger cannot tell who sent them.
	Insecure bool
	// BatchSize: receipts per Append (default 200, at most 1000).
	BatchSize int
	// Linger: how long the sender waits for a batch to fill (default 20 ms;
	// negative: not at all).
	Linger time.Duration
	// MaxBuffer: receipts emitted and not yet settled (default 10000).
	MaxBuffer int
	// NoBlock: Emit fails at once with ErrBufferFull when the buffer is
	// full, instead of waiting EmitTimeout for room.
	NoBlock bool
	// EmitTimeout: how long Emit waits for room (default 30 s; negative:
	// not at all).
	EmitTimeout time.Duration
	// FlushTimeout: how long Flush and Close wait at most (default 30 s;
	// negative: until their context ends).
	FlushTimeout time.Duration
	// RPCTimeout: the deadline of each Append (default 10 s, also for a
	// negative value).
	RPCTimeout time.Duration
	// MaxBackoff: the longest pause between retries, and between attempts
	// to reconnect (default 5 s, also for a negative value).
	MaxBackoff time.Duration
	// OnResult is called once per receipt when it is settled.
	OnResult func(*ledgerpb.Receipt, Result)
	// Logger gets retries and OnResult's panics (default log.Default()).
	Logger *log.Logger
	// DialOptions are added to the connection's.
	DialOptions []grpc.DialOption
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 200
	}
	if o.BatchSize > 1000 {
		o.BatchSize = 1000
	}
	if o.MaxBuffer <= 0 {
		o.MaxBuffer = 10000
	}
	def(&o.Linger, 20*time.Millisecond)
	def(&o.EmitTimeout, 30*time.Second)
	def(&o.FlushTimeout, 30*time.Second)
	if o.RPCTimeout <= 0 {
		o.RPCTimeout = 10 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = log.Default()
	}
	return o
}

var retryable = map[codes.Code]bool{codes.Unavailable: true, codes.ResourceExhausted: true, codes.DeadlineExceeded: true}

const firstBackoff = 50 * time.Millisecond

// Emitter sends receipts to one ledger (one shard: its node, or the node
// that leads it). Make it with NewEmitter; Close it.
type Emitter struct {
	opts      Options
	targets   *targets         // the sender's only
	connected string           // the target conn is to; the sender's only
	conn      *grpc.ClientConn // replaced by the sender only; Close closes it once the sender returned
	stub      ledgerpb.LedgerServiceClient
	stopRPC   context.CancelFunc // ends an Append in flight at Close
	rpcCtx    context.Context
	done      chan struct{} // closed when the sender has returned
	closeOnce sync.Once

	mu        sync.Mutex
	changed   chan struct{}       // closed (and replaced) at every change below
	queue     []*ledgerpb.Receipt // not yet sent, or to be sent again; first in front
	unsettled int                 // queued + in flight
	closed    bool                // Emit refuses
	stop      bool                // the sender returns
	stats     Stats
	refused   []Result
	left      []*ledgerpb.Receipt // after Close: never settled
	failure   *ConfigurationError // what stopped the emitter, if anything
	answered  map[string]bool     // targets that answered a request; the sender's only
}

// NewEmitter connects (lazily: a ledger that is down is retried) to target,
// HOST:PORT, or to the first of the nodes of a replicated shard, HOST:PORT
// separated by commas ("node-a:7420,node-b:7420"), and starts the sender.
// Without TLS it fails, dialing nothing, for a target that is not a
// loopback address, unless Insecure; a leader that a node names is followed
// only where a target would be dialed.
func NewEmitter(target string, opts Options) (*Emitter, error) {
	opts = opts.withDefaults()
	list, err := splitTargets(target)
	if err != nil {
		return nil, err
	}
	for _, t := range list {
		if err := checkPlainText(t, opts.TLS, opts.Insecure); err != nil {
			return nil, err
		}
	}
	conn, err := dial(list[0], opts.TLS, opts.Insecure, opts.MaxBackoff, opts.DialOptions)
	if err != nil {
		return nil, err
	}
	mayDial := func(address string) bool { return checkPlainText(address, opts.TLS, opts.Insecure) == nil }
	ctx, cancel := context.WithCancel(context.Background())
	e := &Emitter{opts: opts, targets: &targets{configured: list, mayDial: mayDial}, connected: list[0],
		conn: conn, stub: ledgerpb.NewLedgerServiceClient(conn), rpcCtx: ctx, stopRPC: cancel,
		done: make(chan struct{}), changed: make(chan struct{}), answered: map[string]bool{}}
	go e.run()
	return e, nil
}

// dial connects with the codec, the credentials (plain text as
// checkPlainText allows), and gRPC's reconnect back-off capped at
// maxBackoff: a restarted ledger is reached again within it, not after
// gRPC's default of up to 120 s.
func dial(target string, tls credentials.TransportCredentials, insecure bool, maxBackoff time.Duration,
	extra []grpc.DialOption) (*grpc.ClientConn, error) {
	if target == "" {
		return nil, errors.New("target: required, HOST:PORT of the ledger")
	}
	if err := checkPlainText(target, tls, insecure); err != nil {
		return nil, err
	}
	reconnect := backoff.DefaultConfig
	reconnect.MaxDelay = maxBackoff
	if reconnect.BaseDelay > maxBackoff/5 {
		reconnect.BaseDelay = maxBackoff / 5
	}
	opts := []grpc.DialOption{CodecOption(), grpc.WithInsecure(),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnect, MinConnectTimeout: 20 * time.Second})}
	if tls != nil {
		opts[1] = grpc.WithTransportCredentials(tls)
	}
	conn, err := grpc.Dial(target, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	return conn, nil
}

// Emit queues a receipt (made with AgentStart, ModelCall, ...). It fails for
// a receipt without its id or with an id of the ledger's, with
// ErrBufferFull when the buffer stays full (until EmitTimeout or ctx's
// end), with ErrClosed after Close, and with a *ConfigurationError once
// the emitter met one (Failure).
func (e *Emitter) Emit(ctx context.Context, r *ledgerpb.Receipt) error {
	if r == nil {
		return errors.New("receipt: required")
	}
	if r.ReceiptId == "" {
		return errors.New("receipt_id: required (retries rely on it)")
	}
	if strings.HasPrefix(r.ReceiptId, LedgerIDPrefix) {
		return fmt.Errorf("receipt_id: '%s' is in the ledger's namespace: ids starting with '%s' are "+
			"written by the ledger only", r.ReceiptId, LedgerIDPrefix)
	}
	var timer *time.Timer // made when the buffer is full
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		if e.failure != nil {
			return e.failure
		}
		if e.closed {
			return ErrClosed
		}
		if e.unsettled < e.opts.MaxBuffer {
			break
		}
		if e.opts.NoBlock {
			return fmt.Errorf("%w: %d receipts are not settled yet (MaxBuffer)", ErrBufferFull, e.unsettled)
		}
		if timer == nil {
			timer = time.NewTimer(e.opts.EmitTimeout)
			defer timer.Stop()
		}
		changed := e.changed
		e.mu.Unlock()
		var why string
		select {
		case <-changed:
		case <-timer.C:
			why = "waited " + e.opts.EmitTimeout.String() + " (EmitTimeout)"
		case <-ctx.Done():
			why = "gave up: " + ctx.Err().Error()
		}
		e.mu.Lock()
		if why != "" && e.unsettled >= e.opts.MaxBuffer {
			return fmt.Errorf("%w: %d receipts are not settled yet (MaxBuffer); %s", ErrBufferFull, e.unsettled, why)
		}
	}
	e.queue = append(e.queue, r)
	e.unsettled++
	e.notify()
	return nil
}

// Flush waits until every receipt emitted so far is settled: at most
// FlushTimeout, or until ctx ends. An *UnsettledError (Count only) when
// they are not.
func (e *Emitter) Flush(ctx context.Context) error {
	if e.opts.FlushTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.opts.FlushTimeout)
		defer cancel()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for e.unsettled > 0 {
		changed := e.changed
		e.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
		}
		e.mu.Lock()
		if ctx.Err() != nil && e.unsettled > 0 {
			return &UnsettledError{Count: e.unsettled}
		}
	}
	return nil
}

// Close flushes (as Flush), then stops the sender (ending an Append in
// flight) and closes the connection. When the flush ran out of time it
// returns an *UnsettledError with the receipts never settled, in emit
// order, for the caller to keep; they are also in Unsettled(). Closing
// twice returns what the first Close returned.
func (e *Emitter) Close(ctx context.Context) error {
	e.closeOnce.Do(func() { // a second Close waits for the first
		e.Flush(ctx) //nolint:errcheck // what is left is counted below
		e.mu.Lock()
		e.closed, e.stop = true, true
		e.notify()
		e.mu.Unlock()
		e.stopRPC()
		<-e.done
		e.conn.Close()
		e.mu.Lock()
		e.left, e.queue = e.queue, nil
		e.mu.Unlock()
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.left) > 0 {
		return &UnsettledError{Count: len(e.left), Receipts: append([]*ledgerpb.Receipt(nil), e.left...)}
	}
	return nil
}

// Unsettled returns, after Close, the receipts never settled, in emit order.
func (e *Emitter) Unsettled() []*ledgerpb.Receipt {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*ledgerpb.Receipt(nil), e.left...)
}

// Refused returns the receipts the ledger refused for good, in the order
// they were settled.
func (e *Emitter) Refused() []Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Result(nil), e.refused...)
}

// Stats returns the counts so far.
func (e *Emitter) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// notify wakes every waiter. Holds mu.
func (e *Emitter) notify() {
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *Emitter) settle(r *ledgerpb.Receipt, res Result) {
	e.mu.Lock()
	e.unsettled--
	if res.Code == codes.OK {
		e.stats.Acknowledged++
		if res.Duplicate {
			e.stats.Duplicates++
		}
	} else {
		e.refused = append(e.refused, res)
	}
	e.notify()
	e.mu.Unlock()
	if e.opts.OnResult != nil {
		e.callback(r, res)
	}
}

func (e *Emitter) callback(r *ledgerpb.Receipt, res Result) {
	defer func() {
		if p := recover(); p != nil {
			e.mu.Lock()
			e.stats.CallbackErrors++
			e.mu.Unlock()
			e.opts.Logger.Printf("evidence_ledger: OnResult panicked for receipt %s (%s); the emitter goes on: %v",
				res.ReceiptID, CodeName(res.Code), p)
		}
	}()
	e.opts.OnResult(r, res)
}

// take returns the next batch, after letting it fill for Linger; nil when
// the sender must stop.
func (e *Emitter) take() []*ledgerpb.Receipt {
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(e.queue) == 0 && !e.stop {
		e.wait(0, true)
	}
	if e.stop {
		return nil
	}
	if len(e.queue) < e.opts.BatchSize && e.opts.Linger > 0 {
		deadline := time.Now().Add(e.opts.Linger)
		for len(e.queue) < e.opts.BatchSize && !e.stop && time.Now().Before(deadline) {
			e.wait(time.Until(deadline), false)
		}
		if e.stop {
			return nil
		}
	}
	n := len(e.queue)
	if n > e.opts.BatchSize {
		n = e.opts.BatchSize
	}
	batch := append([]*ledgerpb.Receipt(nil), e.queue[:n]...)
	e.queue = e.queue[n:]
	return batch
}

// wait releases mu until the next change, or until d has passed when
// forever is false (at once when d <= 0).
func (e *Emitter) wait(d time.Duration, forever bool) {
	if !forever && d <= 0 {
		return
	}
	changed := e.changed
	e.mu.Unlock()
	if forever {
		<-changed
	} else {
		t := time.NewTimer(d)
		select {
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
	e.mu.Lock()
}

func (e *Emitter) run() {
	defer close(e.done)
	backoff := firstBackoff
	for {
		batch := e.take()
		if batch == nil {
			return
		}
		ctx, cancel := context.WithTimeout(e.rpcCtx, e.opts.RPCTimeout)
		resp, err := e.stub.Append(ctx, &ledgerpb.AppendRequest{Receipts: batch})
		cancel()
		if err != nil {
			st := status.Convert(err)
			if e.rpcCtx.Err() != nil { // Close: the batch stays unsettled
				e.requeue(batch, false)
				return
			}
			if e.configurationError(batch, st.Code(), st.Message()) {
				continue
			}
			if retryable[st.Code()] {
				e.requeue(batch, true)
				if !e.failed(st.Code(), st.Message()) {
					e.pause(backoff, len(batch), st.Code(), st.Message())
					backoff = next(backoff, e.opts.MaxBackoff)
				}
				continue
			}
			for _, r := range batch {
				e.settle(r, Result{ReceiptID: r.ReceiptId, Code: st.Code(), Message: st.Message()})
			}
			continue
		}
		e.targets.accepted()
		e.answered[e.connected] = true
		var retry []*ledgerpb.Receipt
		var whyCode codes.Code
		var whyMessage string
		for i, r := range batch {
			if i >= len(resp.Results) { // a ledger that answered short: send the rest again
				retry = append(retry, batch[i:]...)
				whyCode, whyMessage = codes.Unavailable, "the ledger answered fewer results than receipts"
				break
			}
			res := resp.Results[i]
			code := codes.Code(res.Code)
			if retryable[code] {
				if retry == nil {
					whyCode, whyMessage = code, res.Message
				}
				retry = append(retry, r)
				continue
			}
			e.settle(r, Result{ReceiptID: r.ReceiptId, Code: code, Message: res.Message, Seq: res.Seq,
				Duplicate: res.Duplicate})
		}
		if len(retry) > 0 {
			e.requeue(retry, true)
			if LeaderNamed(whyCode, whyMessage) == "" || !e.failed(whyCode, whyMessage) {
				e.pause(backoff, len(retry), whyCode, whyMessage)
				backoff = next(backoff, e.opts.MaxBackoff)
			}
		} else {
			backoff = firstBackoff
		}
	}
}

// configurationError, when a request failed for a reason no retry mends
// (the guarantees above), settles the batch and every receipt queued as
// refused with it, logs it and keeps it (Failure): true then.
func (e *Emitter) configurationError(batch []*ledgerpb.Receipt, code codes.Code, message string) bool {
	var why string
	switch {
	case code == codes.Unauthenticated || code == codes.PermissionDenied:
		why = CodeName(code) + ": " + message
	case e.opts.TLS != nil && e.answered[e.connected]:
		return false // it took these credentials before: not a mismatch
	default:
		why = tlsMismatch(code, message, e.connected, e.opts.TLS != nil,
			func(target string) string { return tlsProbe(target, 3*time.Second) })
		if why == "" {
			return false
		}
		code, message = codes.FailedPrecondition, why
	}
	e.mu.Lock()
	e.failure = &ConfigurationError{Message: why}
	queued := e.queue
	e.queue = nil
	e.mu.Unlock()
	e.opts.Logger.Printf("evidence_ledger: %s; the emitter stops: %d receipt(s) refused, and Emit fails", why,
		len(batch)+len(queued))
	for _, r := range append(append([]*ledgerpb.Receipt(nil), batch...), queued...) {
		e.settle(r, Result{ReceiptID: r.ReceiptId, Code: code, Message: message})
	}
	return true
}

// Failure returns the configuration error that stopped the emitter, or nil.
func (e *Emitter) Failure() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failure == nil {
		return nil
	}
	return e.failure
}

// failed moves to the target to send to after a failure (targets.failed),
// logging a leader followed, and dials it: true when the batch goes again at
// once.
func (e *Emitter) failed(code codes.Code, message string) bool {
	before := e.targets.current()
	atOnce := e.targets.failed(code, message)
	target := e.targets.current()
	if target == e.connected {
		return atOnce
	}
	if e.targets.followed != "" {
		e.opts.Logger.Printf("evidence_ledger: %s does not lead: following the leader it names at %s: %s: %s",
			before, target, CodeName(code), message)
	}
	conn, err := dial(target, e.opts.TLS, e.opts.Insecure, e.opts.MaxBackoff, e.opts.DialOptions)
	if err != nil {
		e.opts.Logger.Printf("evidence_ledger: staying on %s: %v", e.connected, err)
		return false
	}
	e.conn.Close()
	e.conn, e.stub, e.connected = conn, ledgerpb.NewLedgerServiceClient(conn), target
	return atOnce
}

func next(backoff, max time.Duration) time.Duration {
	if backoff*2 > max {
		return max
	}
	return backoff * 2
}

// pause logs the retry, then sleeps for the back-off with jitter (x0.5 to
// x1.5), or until Close stops the sender.
func (e *Emitter) pause(backoff time.Duration, count int, code codes.Code, message string) {
	delay := time.Duration(float64(backoff) * (0.5 + rand.Float64()))
	e.opts.Logger.Printf("evidence_ledger: retrying %d receipt(s) in %.2f s: %s: %s", count, delay.Seconds(),
		CodeName(code), message)
	e.mu.Lock()
	defer e.mu.Unlock()
	deadline := time.Now().Add(delay)
	for !e.stop && time.Now().Before(deadline) {
		e.wait(time.Until(deadline), false)
	}
}

// requeue puts receipts back in front, in order.
func (e *Emitter) requeue(batch []*ledgerpb.Receipt, retry bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if retry {
		e.stats.Retries += len(batch)
	}
	e.queue = append(append([]*ledgerpb.Receipt(nil), batch...), e.queue...)
	e.notify()
}

// CodeName is a gRPC code's canonical name: "INVALID_ARGUMENT", ...
func CodeName(c codes.Code) string {
	if name, ok := codeNames[c]; ok {
		return name
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}

var codeNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN",
	codes.InvalidArgument: "INVALID_ARGUMENT", codes.DeadlineExceeded: "DEADLINE_EXCEEDED",
	codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED", codes.OutOfRange: "OUT_OF_RANGE",
	codes.Unimplemented: "UNIMPLEMENTED", codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE",
	codes.DataLoss: "DATA_LOSS", codes.Unauthenticated: "UNAUTHENTICATED",
}
