package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	ledger "evidence-ledger/clients/go"
	"evidence-ledger/clients/go/ledgerpb"
)

// spec is a receipt spec: the receipt's fields and its kind's, by their
// proto names. A field absent from the spec stays unset.
type spec struct {
	Kind         string            `json:"kind"`
	ReceiptID    string            `json:"receipt_id"`
	Team         string            `json:"team"`
	RunID        string            `json:"run_id"`
	StepID       string            `json:"step_id"`
	Attempt      *int64            `json:"attempt"`
	OccurredAtUs int64             `json:"occurred_at_us"`
	Workflow     string            `json:"workflow"`
	Agent        string            `json:"agent"`
	TraceID      string            `json:"trace_id"`
	SpanID       string            `json:"span_id"`
	Attributes   map[string]string `json:"attributes"`

	Decision           string `json:"decision"`
	Status             string `json:"status"`
	Reason             string `json:"reason"`
	TimeoutMs          *int64 `json:"timeout_ms"`
	CostReservedMicros *int64 `json:"cost_reserved_micros"`
	Namespace          string `json:"namespace"`
	Sandbox            string `json:"sandbox"`
	CommandSHA256      string `json:"command_sha256"`
	CredentialID       string `json:"credential_id"`
	Classification     string `json:"classification"`
	StartReceiptID     string `json:"start_receipt_id"`
	ExitCode           *int64 `json:"exit_code"`
	DurationMs         *int64 `json:"duration_ms"`
	OutputSHA256       string `json:"output_sha256"`
	OutputBytes        *int64 `json:"output_bytes"`
	DLPFindings        *int64 `json:"dlp_findings"`
	CostMicros         *int64 `json:"cost_micros"`
	Provider           string `json:"provider"`
	Model              string `json:"model"`
	Route              string `json:"route"`
	InputTokens        *int64 `json:"input_tokens"`
	OutputTokens       *int64 `json:"output_tokens"`
	RequestSHA256      string `json:"request_sha256"`
	ResponseSHA256     string `json:"response_sha256"`
	StatusCode         *int64 `json:"status_code"`
	LatencyMs          *int64 `json:"latency_ms"`
	Tool               string `json:"tool"`
	Target             string `json:"target"`
}

var common = "kind receipt_id team run_id step_id attempt occurred_at_us workflow agent trace_id span_id attributes"

// The fields of each kind, as proto/receipt.proto names them.
var kinds = map[string]string{
	"agent_start": "decision reason timeout_ms cost_reserved_micros namespace sandbox command_sha256 credential_id " +
		"classification",
	"agent_exec": "start_receipt_id status exit_code duration_ms output_sha256 output_bytes dlp_findings cost_micros",
	"model_call": "provider model route decision reason input_tokens output_tokens cost_micros request_sha256 " +
		"response_sha256 status_code latency_ms credential_id",
	"tool_call": "tool target decision reason request_sha256 response_sha256 status_code latency_ms cost_micros " +
		"credential_id",
}

// build makes the receipt of a spec with its kind's constructor.
func build(fields map[string]json.RawMessage) (*ledgerpb.Receipt, error) {
	raw, _ := json.Marshal(fields)
	var s spec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	own, ok := kinds[s.Kind]
	if !ok {
		names := make([]string, 0, len(kinds))
		for k := range kinds {
			names = append(names, k)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("kind: '%s' is not one of %s", s.Kind, strings.Join(names, ", "))
	}
	allowed := map[string]bool{}
	for _, f := range strings.Fields(common + " " + own) {
		allowed[f] = true
	}
	for name := range fields {
		if !allowed[name] {
			return nil, fmt.Errorf("%s: no field %q", s.Kind, name)
		}
	}
	b := ledger.Base{Team: s.Team, RunID: s.RunID, StepID: s.StepID, ReceiptID: s.ReceiptID, Attempt: s.Attempt,
		OccurredAtUs: s.OccurredAtUs, Workflow: s.Workflow, Agent: s.Agent, TraceID: s.TraceID, SpanID: s.SpanID,
		Attributes: s.Attributes}
	switch s.Kind {
	case "agent_start":
		return ledger.AgentStart(b, ledger.AgentStartFields{Decision: s.Decision, Reason: s.Reason,
			TimeoutMs: s.TimeoutMs, CostReservedMicros: s.CostReservedMicros, Namespace: s.Namespace,
			Sandbox: s.Sandbox, CommandSHA256: s.CommandSHA256, CredentialID: s.CredentialID,
			Classification: s.Classification})
	case "agent_exec":
		return ledger.AgentExec(b, ledger.AgentExecFields{StartReceiptID: s.StartReceiptID, Status: s.Status,
			ExitCode: s.ExitCode, DurationMs: s.DurationMs, OutputSHA256: s.OutputSHA256, OutputBytes: s.OutputBytes,
			DLPFindings: s.DLPFindings, CostMicros: s.CostMicros})
	case "model_call":
		return ledger.ModelCall(b, ledger.ModelCallFields{Provider: s.Provider, Model: s.Model, Route: s.Route,
			Decision: s.Decision, Reason: s.Reason, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
			CostMicros: s.CostMicros, RequestSHA256: s.RequestSHA256, ResponseSHA256: s.ResponseSHA256,
			StatusCode: s.StatusCode, LatencyMs: s.LatencyMs, CredentialID: s.CredentialID})
	default:
		return ledger.ToolCall(b, ledger.ToolCallFields{Tool: s.Tool, Target: s.Target, Decision: s.Decision,
			Reason: s.Reason, RequestSHA256: s.RequestSHA256, ResponseSHA256: s.ResponseSHA256,
			StatusCode: s.StatusCode, LatencyMs: s.LatencyMs, CostMicros: s.CostMicros,
			CredentialID: s.CredentialID})
	}
}
