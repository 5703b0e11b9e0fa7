package ledger_test

// A real ledgerd for the tests: build/cmd/ledgerd (LEDGER_BUILD, set by
// test.sh) on a free loopback port with its data in a temporary
// directory, which a test can SIGKILL and start again on the same port and
// data.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	ledger "evidence-ledger/clients/go"

	"evidence-ledger/clients/go/ledgerpb"
)

// binDir holds programs the tests build (removed at the end).
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ledger-go-client-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildDir(t *testing.T) string {
	dir := os.Getenv("LEDGER_BUILD")
	if dir == "" {
		t.Fatal("LEDGER_BUILD: the build directory with cmd/ledgerd (clients/go/test.sh sets it)")
	}
	return dir
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type testLedger struct {
	t       *testing.T
	work    string
	port    int
	Address string
	http    string // ledgerd's HTTP address (metrics), as it printed it
	args    []string
	cmd     *exec.Cmd
}

func startLedger(t *testing.T, args ...string) *testLedger {
	t.Helper()
	return startLedgerOn(t, "127.0.0.1", args...)
}

// startLedgerOn starts ledgerd listening on host (off loopback, ledgerd
// wants --insecure or TLS among args).
func startLedgerOn(t *testing.T, host string, args ...string) *testLedger {
	t.Helper()
	l := &testLedger{t: t, work: t.TempDir(), port: freePort(t), args: args}
	l.Address = net.JoinHostPort(host, fmt.Sprint(l.port))
	l.Start()
	t.Cleanup(l.Stop)
	return l
}

// Start starts ledgerd and returns once it listens.
func (l *testLedger) Start() {
	l.t.Helper()
	errLog, err := os.OpenFile(filepath.Join(l.work, "ledgerd.err"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		l.t.Fatal(err)
	}
	defer errLog.Close()
	args := append([]string{"--data", filepath.Join(l.work, "data"), "--listen", l.Address,
		"--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "20", "--unknown-grace-ms", "100",
		"--sweep-interval-ms", "50"}, l.args...)
	l.cmd = exec.Command(filepath.Join(buildDir(l.t), "cmd", "ledgerd"), args...)
	l.cmd.Stderr = errLog
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		l.t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	reader := bufio.NewReader(out)
	line, _ := reader.ReadString('\n')
	httpLine, _ := reader.ReadString('\n')
	go io.Copy(io.Discard, reader) //nolint:errcheck // ledgerd's further lines are not read
	l.http = strings.TrimSpace(strings.TrimPrefix(httpLine, "http on "))
	if !strings.HasPrefix(line, "listening on") || !strings.HasPrefix(httpLine, "http on ") {
		l.cmd.Process.Kill() //nolint:errcheck
		l.cmd.Wait()         //nolint:errcheck
		log, _ := os.ReadFile(filepath.Join(l.work, "ledgerd.err"))
		l.t.Fatalf("ledgerd did not start: %q\n%s", line, log)
	}
}

// Kill SIGKILLs ledgerd: whatever it had not made durable is gone.
func (l *testLedger) Kill() {
	l.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck
	l.cmd.Wait()                          //nolint:errcheck
}

// Stop ends ledgerd with SIGTERM, if it runs.
func (l *testLedger) Stop() {
	if l.cmd.ProcessState != nil {
		return
	}
	l.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
	done := make(chan struct{})
	go func() { l.cmd.Wait(); close(done) }() //nolint:errcheck
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		l.Kill()
	}
}

// metric returns the value of an unlabelled gauge of ledgerd's /metrics.
func (l *testLedger) metric(name string) uint64 {
	l.t.Helper()
	resp, err := http.Get("http://" + l.http + "/metrics")
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		l.t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name+" ") {
			n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, name+" ")), 10, 64)
			if err != nil {
				l.t.Fatalf("%s: %q", name, line)
			}
			return n
		}
	}
	l.t.Fatalf("/metrics has no %s", name)
	return 0
}

// ReceiptIDs returns every receipt_id in the log, in seq order (duplicates
// kept), once the checkpoint has caught up with the head.
func (l *testLedger) ReceiptIDs() []string {
	l.t.Helper()
	conn, err := grpc.Dial(l.Address, grpc.WithInsecure(), ledger.CodecOption())
	if err != nil {
		l.t.Fatal(err)
	}
	defer conn.Close()
	stub := ledgerpb.NewLedgerServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Every acknowledged entry is in the head (ledger_tree_size); read once
	// the latest checkpoint covers the head, however late it is signed.
	var size uint64
	for {
		head := l.metric("ledger_tree_size")
		cp, err := stub.GetCheckpoint(ctx, &ledgerpb.GetCheckpointRequest{})
		if err != nil {
			l.t.Fatal(err)
		}
		if cp.TreeSize >= head {
			size = cp.TreeSize
			break
		}
		if ctx.Err() != nil {
			l.t.Fatalf("the checkpoint stays at %d entries, the head is at %d", cp.TreeSize, head)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stream, err := stub.GetEntries(ctx, &ledgerpb.GetEntriesRequest{FromSeq: 0, ToSeq: size})
	if err != nil {
		l.t.Fatal(err)
	}
	var ids []string
	for {
		e, err := stream.Recv()
		if err == io.EOF {
			return ids
		}
		if err != nil {
			l.t.Fatal(err)
		}
		var leaf struct {
			Receipt struct {
				ReceiptID string `json:"receipt_id"`
			} `json:"receipt"`
		}
		if err := json.Unmarshal(e.Leaf, &leaf); err != nil {
			l.t.Fatal(err)
		}
		ids = append(ids, leaf.Receipt.ReceiptID)
	}
}
