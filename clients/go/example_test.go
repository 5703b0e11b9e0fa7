package ledger_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The example of this module's README.md is examples/emitter/main.go, byte
// for byte, and it logs its three receipts in a real ledgerd.
func TestTheReadmesExampleIsTheExampleAndItRuns(t *testing.T) {
	example, err := os.ReadFile("examples/emitter/main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(example)+"```\n") {
		t.Fatal("clients/go/README.md does not show examples/emitter/main.go as it is: copy the file into its ```go block")
	}
	l := startLedger(t)
	bin := filepath.Join(t.TempDir(), "emitter")
	if out, err := exec.Command("go", "build", "-o", bin, "evidence-ledger/clients/go/examples/emitter").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "LEDGER="+l.Address)
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "logged 3 receipts, 0 refused\n" {
		t.Fatalf("the example: %v\n%s", err, out)
	}
	if got := l.ReceiptIDs(); len(got) != 3 || !strings.HasPrefix(got[0], "agent_start-") ||
		!strings.HasPrefix(got[1], "model_call-") || !strings.HasPrefix(got[2], "agent_exec-") {
		t.Fatalf("the log holds %v", got)
	}
}
