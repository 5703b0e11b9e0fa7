package ledger_test

// The conformance runner (cmd/conformance) played as
// clients/conformance/PROTOCOL.md says, against a real ledgerd: the
// events it writes, exactly.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var runner struct {
	once sync.Once
	bin  string
	err  error
}

// buildRunner builds cmd/conformance once for every test of the package.
func buildRunner(t *testing.T) string {
	t.Helper()
	runner.once.Do(func() {
		runner.bin = filepath.Join(binDir, "conformance")
		out, err := exec.Command("go", "build", "-o", runner.bin, "evidence-ledger/clients/go/cmd/conformance").CombinedOutput()
		if err != nil {
			runner.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if runner.err != nil {
		t.Fatal(runner.err)
	}
	return runner.bin
}

type runnerProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events *bufio.Reader
}

func startRunner(t *testing.T, bin string, scenario map[string]interface{}) *runnerProc {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Stderr = io.Discard
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(scenario)
	stdin.Write(append(line, '\n')) //nolint:errcheck
	return &runnerProc{t: t, cmd: cmd, stdin: stdin, events: bufio.NewReader(stdout)}
}

// next returns the next event's line.
func (r *runnerProc) next() string {
	r.t.Helper()
	line, err := r.events.ReadString('\n')
	if err != nil {
		r.t.Fatalf("the runner wrote no more events: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}

func (r *runnerProc) exit() error {
	r.stdin.Close()
	return r.cmd.Wait()
}

func spec(kind, id string, fields map[string]interface{}) map[string]interface{} {
	s := map[string]interface{}{"kind": kind, "receipt_id": id, "team": "team-a", "run_id": "r1",
		"step_id": "s-" + id, "occurred_at_us": 1767225600000000}
	for k, v := range fields {
		s[k] = v
	}
	return s
}

func TestConformanceRunnerBatchesRefusesAndCloses(t *testing.T) {
	l := startLedger(t)
	bin := buildRunner(t)
	var receipts []interface{}
	for i := 0; i < 8; i++ {
		id := fmt.Sprintf("c-%d", i)
		switch i % 4 {
		case 0:
			receipts = append(receipts, spec("agent_start", id, map[string]interface{}{"decision": "allow", "timeout_ms": 60000}))
		case 1:
			receipts = append(receipts, spec("agent_exec", id, map[string]interface{}{"status": "succeeded",
				"start_receipt_id": "c-0", "attempt": 1}))
		case 2:
			receipts = append(receipts, spec("model_call", id, map[string]interface{}{"decision": "deny", "route": "m",
				"input_tokens": 0, "attributes": map[string]string{"k": "v"}}))
		default:
			receipts = append(receipts, spec("tool_call", id, map[string]interface{}{"tool": "grep", "decision": "allow"}))
		}
	}
	receipts[5].(map[string]interface{})["trace_id"] = "not-hex"
	r := startRunner(t, bin, map[string]interface{}{"target": l.Address,
		"options":  map[string]interface{}{"batch_size": 3, "linger_ms": 50},
		"receipts": receipts, "steps": []interface{}{
			map[string]interface{}{"do": "emit", "from": 0, "to": 8},
			map[string]interface{}{"do": "close"},
			map[string]interface{}{"do": "wait"},
			map[string]interface{}{"do": "step", "team": "team-a", "run_id": "r1", "step_id": "s-c-4"},
		}})
	for i := 0; i < 8; i++ {
		if got, want := r.next(), fmt.Sprintf(`{"event":"emitted","index":%d}`, i); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	closed := r.next()
	want := `{"acknowledged":7,"duplicates":0,"event":"closed","flushed":true,"refused":[{"code":"INVALID_ARGUMENT",` +
		`"message":"trace_id: must be 32 lowercase hex digits, not all zero (W3C trace context)","receipt_id":"c-5"}],"retries":0,"unsettled":[]}`
	if closed != want {
		t.Fatalf("got  %s\nwant %s", closed, want)
	}
	if got := r.next(); got != `{"event":"waiting"}` {
		t.Fatalf("got %s", got)
	}
	d := newDashboard(t, l.Address)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); { // the projection follows the log
		if run, err := d.Run(context.Background(), "team-a", "r1"); err == nil && run.Entries == 7 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.stdin.Write([]byte("\n")) //nolint:errcheck
	if got := r.next(); got != `{"attempt":1,"event":"step","run_id":"r1","state":"pending","step_id":"s-c-4"}` {
		t.Fatalf("step: %s", got)
	}
	if err := r.exit(); err != nil {
		t.Fatalf("runner: %v", err)
	}
}

func TestConformanceRunnerRetriesAfterAKillAndReportsAFullBuffer(t *testing.T) {
	l := startLedger(t)
	bin := buildRunner(t)
	var receipts []interface{}
	for i := 0; i < 200; i++ {
		receipts = append(receipts, spec("model_call", fmt.Sprintf("k-%d", i), map[string]interface{}{"route": "m", "decision": "allow"}))
	}
	r := startRunner(t, bin, map[string]interface{}{"target": l.Address,
		"options":  map[string]interface{}{"batch_size": 25, "max_backoff_ms": 200},
		"receipts": receipts, "steps": []interface{}{
			map[string]interface{}{"do": "emit", "from": 0, "to": 100},
			map[string]interface{}{"do": "wait"},
			map[string]interface{}{"do": "emit", "from": 100, "to": 200},
			map[string]interface{}{"do": "close"},
		}})
	for i := 0; i < 100; i++ {
		r.next()
	}
	if got := r.next(); got != `{"event":"waiting"}` {
		t.Fatalf("got %s", got)
	}
	l.Kill()
	r.stdin.Write([]byte("\n")) //nolint:errcheck
	for i := 100; i < 200; i++ {
		if got, want := r.next(), fmt.Sprintf(`{"event":"emitted","index":%d}`, i); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	time.Sleep(300 * time.Millisecond)
	l.Start()
	var closed struct {
		Flushed      bool     `json:"flushed"`
		Acknowledged int      `json:"acknowledged"`
		Unsettled    []string `json:"unsettled"`
	}
	if err := json.Unmarshal([]byte(r.next()), &closed); err != nil || !closed.Flushed || closed.Acknowledged != 200 {
		t.Fatalf("closed: %+v %v", closed, err)
	}
	if err := r.exit(); err != nil {
		t.Fatal(err)
	}
	got := l.ReceiptIDs()
	if len(got) != 200 || !equal(sorted(got), sorted(ids("k", 200))) {
		t.Fatalf("the log holds %d receipts, not k-0 ... k-199 once each", len(got))
	}

	nowhere := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	for _, block := range []bool{false, true} {
		r := startRunner(t, bin, map[string]interface{}{"target": nowhere,
			"options":  map[string]interface{}{"max_buffer": 2, "block": block, "emit_timeout_ms": 300, "flush_timeout_ms": 200},
			"receipts": receipts[:3], "steps": []interface{}{
				map[string]interface{}{"do": "emit", "from": 0, "to": 3},
				map[string]interface{}{"do": "close"},
			}})
		r.next()
		r.next()
		var full struct {
			Event    string `json:"event"`
			Index    int    `json:"index"`
			WaitedMs int64  `json:"waited_ms"`
		}
		if err := json.Unmarshal([]byte(r.next()), &full); err != nil || full.Event != "buffer_full" || full.Index != 2 ||
			(block && full.WaitedMs < 300) || (!block && full.WaitedMs > 100) {
			t.Fatalf("block %v: %+v %v", block, full, err)
		}
		if got := r.next(); !strings.HasPrefix(got, `{"acknowledged":0,"duplicates":0,"event":"closed","flushed":false,"refused":[],`) ||
			!strings.HasSuffix(got, `"unsettled":["k-0","k-1"]}`) {
			t.Fatalf("block %v: closed %s", block, got)
		}
		if err := r.exit(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConformanceRunnerReportsWhatItCannotPlay(t *testing.T) {
	bin := buildRunner(t)
	r := startRunner(t, bin, map[string]interface{}{"target": "127.0.0.1:1",
		"receipts": []interface{}{spec("model_call", "x", map[string]interface{}{"tool": "grep"})}})
	if got := r.next(); got != `{"event":"error","message":"receipts[0]: model_call: no field \"tool\""}` {
		t.Fatalf("got %s", got)
	}
	if err := r.exit(); err == nil || r.cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("exit: %v", err)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
