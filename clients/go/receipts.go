package ledger

// Receipt constructors (CONTRACT section 3) with the fields a gateway or a
// worker always sets: a fresh receipt_id, occurred_at_us now.
//
// Decisions and statuses are names (Allow, Deny; Succeeded, Failed, ...);
// a name that is not one of them is an error naming the field. Nothing
// else is checked here: the ledger validates receipts and says why it
// refuses one (see Result).

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"evidence-ledger/clients/go/ledgerpb"
)

// Decisions and execution statuses, by the names the contract's JSON uses.
const (
	Allow = "allow"
	Deny  = "deny"

	Succeeded = "succeeded"
	Failed    = "failed"
	TimedOut  = "timed_out"
	Killed    = "killed"
	Error     = "error"
)

// Int64 returns a pointer to v, for the receipts' optional integers (a
// present 0 is written, an absent field is not).
func Int64(v int64) *int64 { return &v }

// Base holds the fields every kind shares.
type Base struct {
	Team, RunID, StepID string
	// ReceiptID is unique per team; a fresh "<kind>-<32 hex>" when empty.
	// Retries reuse it: the ledger appends (team, receipt_id) once.
	ReceiptID string
	// Attempt is the step's attempt; nil leaves it unset (the ledger reads 1).
	Attempt *int64
	// OccurredAtUs is when it happened, microseconds since the epoch; 0: now.
	OccurredAtUs int64
	Workflow     string
	Agent        string
	TraceID      string // W3C trace context: 32 lowercase hex digits
	SpanID       string // 16 lowercase hex digits
	Attributes   map[string]string
}

// AgentStartFields: a container step was authorized or denied. Decision is
// required by the ledger; after TimeoutMs (plus the ledger's grace) a step
// with no agent_exec is declared unknown; CostReservedMicros is what an
// unknown or failed step is charged at least.
type AgentStartFields struct {
	Decision           string
	Reason             string
	TimeoutMs          *int64
	CostReservedMicros *int64
	Namespace          string
	Sandbox            string
	CommandSHA256      string
	CredentialID       string
	Classification     string
}

// AgentExecFields: a container step finished. StartReceiptID is its
// agent_start's receipt_id.
type AgentExecFields struct {
	StartReceiptID string
	Status         string
	ExitCode       *int64
	DurationMs     *int64
	OutputSHA256   string
	OutputBytes    *int64
	DLPFindings    *int64
	CostMicros     *int64
}

// ModelCallFields: a model call the gateway allowed or denied.
type ModelCallFields struct {
	Provider       string
	Model          string
	Route          string
	Decision       string
	Reason         string
	InputTokens    *int64
	OutputTokens   *int64
	CostMicros     *int64
	RequestSHA256  string
	ResponseSHA256 string
	StatusCode     *int64
	LatencyMs      *int64
	CredentialID   string
}

// ToolCallFields: a tool call the gateway allowed or denied.
type ToolCallFields struct {
	Tool           string
	Target         string
	Decision       string
	Reason         string
	RequestSHA256  string
	ResponseSHA256 string
	StatusCode     *int64
	LatencyMs      *int64
	CostMicros     *int64
	CredentialID   string
}

// AgentStart makes an agent_start receipt.
func AgentStart(b Base, f AgentStartFields) (*ledgerpb.Receipt, error) {
	d, err := decision(f.Decision)
	if err != nil {
		return nil, err
	}
	r := base("agent_start", b)
	r.Body = &ledgerpb.Receipt_AgentStart{AgentStart: &ledgerpb.AgentStart{
		Decision: d, Reason: f.Reason, TimeoutMs: f.TimeoutMs, CostReservedMicros: f.CostReservedMicros,
		Namespace: f.Namespace, Sandbox: f.Sandbox, CommandSha256: f.CommandSHA256,
		CredentialId: f.CredentialID, Classification: f.Classification,
	}}
	return r, nil
}

// AgentExec makes an agent_exec receipt.
func AgentExec(b Base, f AgentExecFields) (*ledgerpb.Receipt, error) {
	s, err := execStatus(f.Status)
	if err != nil {
		return nil, err
	}
	r := base("agent_exec", b)
	r.Body = &ledgerpb.Receipt_AgentExec{AgentExec: &ledgerpb.AgentExec{
		StartReceiptId: f.StartReceiptID, Status: s, ExitCode: f.ExitCode, DurationMs: f.DurationMs,
		OutputSha256: f.OutputSHA256, OutputBytes: f.OutputBytes, DlpFindings: f.DLPFindings,
		CostMicros: f.CostMicros,
	}}
	return r, nil
}

// ModelCall makes a model_call receipt.
func ModelCall(b Base, f ModelCallFields) (*ledgerpb.Receipt, error) {
	d, err := decision(f.Decision)
	if err != nil {
		return nil, err
	}
	r := base("model_call", b)
	r.Body = &ledgerpb.Receipt_ModelCall{ModelCall: &ledgerpb.ModelCall{
		Provider: f.Provider, Model: f.Model, Route: f.Route, Decision: d, Reason: f.Reason,
		InputTokens: f.InputTokens, OutputTokens: f.OutputTokens, CostMicros: f.CostMicros,
		RequestSha256: f.RequestSHA256, ResponseSha256: f.ResponseSHA256, StatusCode: f.StatusCode,
		LatencyMs: f.LatencyMs, CredentialId: f.CredentialID,
	}}
	return r, nil
}

// ToolCall makes a tool_call receipt.
func ToolCall(b Base, f ToolCallFields) (*ledgerpb.Receipt, error) {
	d, err := decision(f.Decision)
	if err != nil {
		return nil, err
	}
	r := base("tool_call", b)
	r.Body = &ledgerpb.Receipt_ToolCall{ToolCall: &ledgerpb.ToolCall{
		Tool: f.Tool, Target: f.Target, Decision: d, Reason: f.Reason, RequestSha256: f.RequestSHA256,
		ResponseSha256: f.ResponseSHA256, StatusCode: f.StatusCode, LatencyMs: f.LatencyMs,
		CostMicros: f.CostMicros, CredentialId: f.CredentialID,
	}}
	return r, nil
}

func base(kind string, b Base) *ledgerpb.Receipt {
	id := b.ReceiptID
	if id == "" {
		var random [16]byte
		if _, err := rand.Read(random[:]); err != nil {
			panic("crypto/rand: " + err.Error()) // the system has no randomness left: nothing can go on
		}
		id = kind + "-" + hex.EncodeToString(random[:])
	}
	at := b.OccurredAtUs
	if at == 0 {
		at = time.Now().UnixMicro()
	}
	var attributes map[string]string
	if len(b.Attributes) > 0 {
		attributes = make(map[string]string, len(b.Attributes))
		for k, v := range b.Attributes {
			attributes[k] = v
		}
	}
	return &ledgerpb.Receipt{
		ReceiptId: id, Team: b.Team, RunId: b.RunID, StepId: b.StepID, Attempt: b.Attempt,
		Workflow: b.Workflow, Agent: b.Agent, OccurredAtUs: &at, TraceId: b.TraceID, SpanId: b.SpanID,
		Attributes: attributes,
	}
}

// decision reads "allow" or "deny"; "" leaves the decision unset.
func decision(name string) (ledgerpb.Decision, error) {
	v, err := enumByName("decision", name, "DECISION_", ledgerpb.Decision_value)
	return ledgerpb.Decision(v), err
}

// execStatus reads "succeeded", "failed", "timed_out", "killed" or "error";
// "" leaves the status unset.
func execStatus(name string) (ledgerpb.ExecStatus, error) {
	v, err := enumByName("status", name, "EXEC_STATUS_", ledgerpb.ExecStatus_value)
	return ledgerpb.ExecStatus(v), err
}

func enumByName(field, name, prefix string, values map[string]int32) (int32, error) {
	if name == "" {
		return 0, nil
	}
	if v, ok := values[prefix+strings.ToUpper(name)]; ok && v != 0 && name == strings.ToLower(name) {
		return v, nil
	}
	return 0, fmt.Errorf("%s: '%s' is not one of %s", field, name, strings.Join(enumNames(prefix, values), ", "))
}

// enumNames lists an enum's names in lower case, in value order, without
// UNSPECIFIED.
func enumNames(prefix string, values map[string]int32) []string {
	names := make([]string, len(values))
	for name, v := range values {
		names[v] = strings.ToLower(strings.TrimPrefix(name, prefix))
	}
	return names[1:]
}

// Receipt is the receipt message of proto/receipt.proto.
type Receipt = ledgerpb.Receipt
