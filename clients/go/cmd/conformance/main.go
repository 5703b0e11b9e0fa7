// Command conformance is the Go client's conformance runner
// (clients/conformance/PROTOCOL.md): it reads one line of JSON, the
// scenario, from standard input, builds its receipts with the client's
// constructors, plays its steps through Emitter and Dashboard only, and
// writes one JSON event per line to standard output. It exits 0 after the
// last step; on anything the scenario did not expect it writes
// {"event": "error", "message": ...} and exits 1.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	ledger "evidence-ledger/clients/go"
	"evidence-ledger/clients/go/ledgerpb"
)

type scenario struct {
	Target  string                       `json:"target"`
	TLS     *tlsFiles                    `json:"tls"`
	Options map[string]json.RawMessage   `json:"options"`
	Specs   []map[string]json.RawMessage `json:"receipts"`
	Steps   []step                       `json:"steps"`
}

type tlsFiles struct {
	CA         string `json:"ca"`
	Cert       string `json:"cert"`
	Key        string `json:"key"`
	ServerName string `json:"server_name"`
}

type step struct {
	Do       string `json:"do"`
	From     int    `json:"from"`
	To       int    `json:"to"`
	Team     string `json:"team"`
	RunID    string `json:"run_id"`
	StepID   string `json:"step_id"`
	AfterSeq *int64 `json:"after_seq"`
	Count    int    `json:"count"`
	Attempt  int64  `json:"attempt"`
}

type runner struct {
	in        *bufio.Reader
	out       io.Writer
	target    string
	creds     credentials.TransportCredentials
	opts      ledger.Options
	receipts  []*ledgerpb.Receipt
	order     map[string]int
	emitter   *ledger.Emitter
	dashboard *ledger.Dashboard
}

func main() {
	in := bufio.NewReader(os.Stdin)
	if err := run(in, os.Stdout); err != nil {
		event(os.Stdout, map[string]interface{}{"event": "error", "message": err.Error()})
		os.Exit(1)
	}
}

func run(in *bufio.Reader, out io.Writer) error {
	line, err := in.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return errors.New("scenario: no line on standard input")
	}
	var s scenario
	if err := json.Unmarshal(line, &s); err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	r := &runner{in: in, out: out, target: s.Target, order: map[string]int{}}
	if r.opts, err = options(s.Options); err != nil {
		return err
	}
	r.opts.Logger = log.New(os.Stderr, "", log.LstdFlags)
	if s.TLS != nil {
		if r.creds, err = ledger.TLSFromFiles(s.TLS.CA, s.TLS.Cert, s.TLS.Key, s.TLS.ServerName); err != nil {
			return err
		}
		r.opts.TLS = r.creds
	}
	for i, spec := range s.Specs {
		receipt, err := build(spec)
		if err != nil {
			return fmt.Errorf("receipts[%d]: %w", i, err)
		}
		r.receipts = append(r.receipts, receipt)
		r.order[receipt.ReceiptId] = i
	}
	for _, st := range s.Steps {
		if err := r.step(st); err != nil {
			return err
		}
	}
	if r.dashboard != nil {
		r.dashboard.Close()
	}
	return nil
}

// options maps the protocol's options (milliseconds) to the Emitter's.
func options(in map[string]json.RawMessage) (ledger.Options, error) {
	var o ledger.Options
	for name, raw := range in {
		var n int64
		var b bool
		var err error
		if name == "block" {
			err = json.Unmarshal(raw, &b)
		} else {
			err = json.Unmarshal(raw, &n)
		}
		if err != nil {
			return o, fmt.Errorf("options.%s: %w", name, err)
		}
		ms := time.Duration(n) * time.Millisecond
		switch name {
		case "batch_size":
			o.BatchSize = int(n)
		case "linger_ms":
			o.Linger = ms
			if n == 0 {
				o.Linger = -1 // no linger
			}
		case "max_buffer":
			o.MaxBuffer = int(n)
		case "block":
			o.NoBlock = !b
		case "emit_timeout_ms":
			o.EmitTimeout = ms
		case "flush_timeout_ms":
			o.FlushTimeout = ms
		case "rpc_timeout_ms":
			o.RPCTimeout = ms
		case "max_backoff_ms":
			o.MaxBackoff = ms
		default:
			return o, fmt.Errorf("options.%s: not an option of the protocol", name)
		}
	}
	return o, nil
}

func event(out io.Writer, fields map[string]interface{}) {
	line, _ := json.Marshal(fields)
	out.Write(append(line, '\n')) //nolint:errcheck // unbuffered standard output: nothing to do about it
}

func (r *runner) step(st step) error {
	switch st.Do {
	case "emit":
		return r.emit(st)
	case "wait":
		event(r.out, map[string]interface{}{"event": "waiting"})
		if _, err := r.in.ReadBytes('\n'); err != nil {
			return errors.New("wait: standard input closed")
		}
		return nil
	case "close":
		return r.close()
	case "watch":
		return r.watch(st)
	case "step":
		return r.readStep(st)
	}
	return fmt.Errorf("steps: '%s' is not a step of the protocol", st.Do)
}

func (r *runner) emit(st step) error {
	if r.emitter == nil {
		e, err := ledger.NewEmitter(r.target, r.opts)
		if err != nil {
			return err
		}
		r.emitter = e
	}
	if st.From < 0 || st.To > len(r.receipts) || st.From > st.To {
		return fmt.Errorf("emit: from %d to %d: not a range of the %d receipts", st.From, st.To, len(r.receipts))
	}
	for i := st.From; i < st.To; i++ {
		began := time.Now()
		err := r.emitter.Emit(context.Background(), r.receipts[i])
		switch {
		case errors.Is(err, ledger.ErrBufferFull):
			event(r.out, map[string]interface{}{"event": "buffer_full", "index": i,
				"waited_ms": time.Since(began).Milliseconds()})
		case err != nil:
			return fmt.Errorf("emit %d: %w", i, err)
		default:
			event(r.out, map[string]interface{}{"event": "emitted", "index": i})
		}
	}
	return nil
}

func (r *runner) close() error {
	if r.emitter == nil {
		e, err := ledger.NewEmitter(r.target, r.opts)
		if err != nil {
			return err
		}
		r.emitter = e
	}
	e := r.emitter
	r.emitter = nil
	err := e.Close(context.Background())
	var left *ledger.UnsettledError
	if err != nil && !errors.As(err, &left) {
		return err
	}
	refused := e.Refused()
	sort.SliceStable(refused, func(i, j int) bool { return r.rank(refused[i].ReceiptID) < r.rank(refused[j].ReceiptID) })
	unsettled := e.Unsettled()
	sort.SliceStable(unsettled, func(i, j int) bool { return r.rank(unsettled[i].ReceiptId) < r.rank(unsettled[j].ReceiptId) })
	refusals := []map[string]string{}
	for _, res := range refused {
		refusals = append(refusals, map[string]string{"receipt_id": res.ReceiptID, "code": ledger.CodeName(res.Code),
			"message": res.Message})
	}
	ids := []string{}
	for _, u := range unsettled {
		ids = append(ids, u.ReceiptId)
	}
	st := e.Stats()
	event(r.out, map[string]interface{}{"event": "closed", "flushed": err == nil, "acknowledged": st.Acknowledged,
		"duplicates": st.Duplicates, "retries": st.Retries, "refused": refusals, "unsettled": ids})
	return nil
}

func (r *runner) rank(id string) int {
	if i, ok := r.order[id]; ok {
		return i
	}
	return len(r.order)
}

func (r *runner) dash() (*ledger.Dashboard, error) {
	if r.dashboard == nil {
		// The Emitter takes the nodes of a shard separated by commas, as the
		// scenario gives them; a Dashboard reads from the first.
		first := strings.SplitN(r.target, ",", 2)[0]
		d, err := ledger.NewDashboard(first, ledger.DashboardOptions{TLS: r.creds})
		if err != nil {
			return nil, err
		}
		r.dashboard = d
	}
	return r.dashboard, nil
}

func (r *runner) watch(st step) error {
	if st.Count <= 0 {
		return nil
	}
	d, err := r.dash()
	if err != nil {
		return err
	}
	after := int64(-1)
	if st.AfterSeq != nil {
		after = *st.AfterSeq
	}
	seen := 0
	err = d.Watch(context.Background(), ledger.StepQuery{Team: st.Team, RunID: st.RunID}, after,
		func(c *ledgerpb.StepChange) error {
			s := c.Step
			event(r.out, map[string]interface{}{"event": "change", "seq": c.Seq, "run_id": s.RunId,
				"step_id": s.StepId, "attempt": s.Attempt, "state": ledger.StateName(s.State)})
			if seen++; seen == st.Count {
				return ledger.ErrStopWatch
			}
			return nil
		})
	if err != nil {
		return rpcError("watch", err)
	}
	if seen < st.Count {
		return fmt.Errorf("watch: the ledger ended the watch after %d of %d changes", seen, st.Count)
	}
	return nil
}

func (r *runner) readStep(st step) error {
	d, err := r.dash()
	if err != nil {
		return err
	}
	attempt := st.Attempt
	if attempt == 0 {
		attempt = 1
	}
	s, err := d.Step(context.Background(), st.Team, st.RunID, st.StepID, attempt)
	if err != nil {
		return rpcError("step", err)
	}
	event(r.out, map[string]interface{}{"event": "step", "state": ledger.StateName(s.State), "run_id": s.RunId,
		"step_id": s.StepId, "attempt": s.Attempt})
	return nil
}

func rpcError(what string, err error) error {
	if st, ok := status.FromError(err); ok {
		return fmt.Errorf("%s: %s: %s", what, ledger.CodeName(st.Code()), st.Message())
	}
	return fmt.Errorf("%s: %w", what, err)
}
