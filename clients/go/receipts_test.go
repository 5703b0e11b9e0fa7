package ledger_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	ledger "evidence-ledger/clients/go"
	"evidence-ledger/clients/go/ledgerpb"
)

func TestKindsTakeNamesForDecisionsAndStatuses(t *testing.T) {
	b := ledger.Base{Team: "team-a", RunID: "r", StepID: "s"}
	r, err := ledger.ModelCall(b, ledger.ModelCallFields{Decision: "deny", Reason: "budget", InputTokens: ledger.Int64(3)})
	if err != nil || r.GetModelCall().Decision != ledgerpb.Decision_DECISION_DENY {
		t.Fatalf("%v %v", r, err)
	}
	x, err := ledger.AgentExec(b, ledger.AgentExecFields{StartReceiptID: "start-1", Status: ledger.TimedOut})
	if err != nil || x.GetAgentExec().Status != ledgerpb.ExecStatus_EXEC_STATUS_TIMED_OUT {
		t.Fatalf("%v %v", x, err)
	}
	if _, err := ledger.ToolCall(b, ledger.ToolCallFields{Decision: "maybe"}); err == nil ||
		err.Error() != "decision: 'maybe' is not one of allow, deny" {
		t.Fatalf("ToolCall with decision maybe: %v", err)
	}
	if _, err := ledger.AgentExec(b, ledger.AgentExecFields{Status: "SUCCEEDED"}); err == nil ||
		err.Error() != "status: 'SUCCEEDED' is not one of succeeded, failed, timed_out, killed, error" {
		t.Fatalf("AgentExec with status SUCCEEDED: %v", err)
	}
}

func TestConstructorsSetAFreshIDAndTheTimeAndNothingUnasked(t *testing.T) {
	before := time.Now().UnixMicro()
	r, err := ledger.AgentStart(ledger.Base{Team: "team-a", RunID: "r", StepID: "s"},
		ledger.AgentStartFields{Decision: ledger.Allow, TimeoutMs: ledger.Int64(0)})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^agent_start-[0-9a-f]{32}$`).MatchString(r.ReceiptId) {
		t.Fatalf("receipt_id %q", r.ReceiptId)
	}
	if r.GetOccurredAtUs() < before || r.GetOccurredAtUs() > time.Now().UnixMicro() {
		t.Fatalf("occurred_at_us %d", r.GetOccurredAtUs())
	}
	r.OccurredAtUs = nil
	r.ReceiptId = "x"
	got := protojson.MarshalOptions{UseProtoNames: true}.Format(r)
	got = strings.Join(strings.Fields(got), "")
	// A present 0 is kept (timeout_ms); attempt and the rest were not asked for.
	want := `{"receipt_id":"x","team":"team-a","run_id":"r","step_id":"s","agent_start":{"decision":"DECISION_ALLOW","timeout_ms":"0"}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	a, _ := ledger.AgentStart(ledger.Base{Team: "t"}, ledger.AgentStartFields{})
	b, _ := ledger.AgentStart(ledger.Base{Team: "t"}, ledger.AgentStartFields{})
	if a.ReceiptId == b.ReceiptId {
		t.Fatal("two receipts with one id")
	}
}
