// Typed receipts: their constructors, and what the ledger logs of them.
import * as assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";

import * as protoLoader from "@grpc/proto-loader";
import { Emitter, receipts } from "evidence-ledger";

import { closing, Ledger, ROOT } from "./ledger";

const COMMON = { receipt_id: "", attempt: 1, occurred_at_us: 1, workflow: "", agent: "", trace_id: "", span_id: "",
                 attributes: {} };

test("every field of each kind's proto message has its place in the types, and no other", () => {
  const definition = protoLoader.loadSync("receipt.proto", { includeDirs: [path.join(ROOT, "proto")], keepCase: true });
  const fields = (message: string) => (definition[`evidence.ledger.v1.${message}`] as any).type.field
    .map((f: { name: string }) => f.name).sort();
  // Each object names every field of its type (tsc refuses a missing or unknown one); the constructors refuse a
  // field the proto does not have.
  const start: Required<receipts.AgentStartFields> = { ...COMMON, decision: "allow", reason: "", timeout_ms: 1,
    cost_reserved_micros: 1, namespace: "", sandbox: "", command_sha256: "", credential_id: "", classification: "" };
  const exec: Required<receipts.AgentExecFields> = { ...COMMON, status: "failed", exit_code: 1, duration_ms: 1,
    output_sha256: "", output_bytes: 1, dlp_findings: 1, cost_micros: 1 };
  const model: Required<receipts.ModelCallFields> = { ...COMMON, provider: "", model: "", route: "", decision: "deny",
    reason: "", input_tokens: 1, output_tokens: 1, cost_micros: 1, request_sha256: "", response_sha256: "",
    status_code: 1, latency_ms: 1, credential_id: "" };
  const tool: Required<receipts.ToolCallFields> = { ...COMMON, tool: "", target: "", decision: "allow", reason: "",
    request_sha256: "", response_sha256: "", status_code: 1, latency_ms: 1, cost_micros: 1, credential_id: "" };
  const bodies: [string, object][] = [
    ["AgentStart", receipts.agentStart("t", "r", "s", start).agent_start],
    ["AgentExec", receipts.agentExec("t", "r", "s", "start-1", exec).agent_exec],
    ["ModelCall", receipts.modelCall("t", "r", "s", model).model_call],
    ["ToolCall", receipts.toolCall("t", "r", "s", tool).tool_call],
  ];
  for (const [message, body] of bodies) assert.deepEqual(Object.keys(body).sort(), fields(message), message);
  const kinds = ["agent_start", "agent_exec", "model_call", "tool_call", "step_unknown", "leader_epoch",
                 "key_rotation", "redaction", "retention"];
  const receipt = fields("Receipt").filter((f: string) => !kinds.includes(f));
  const common = Object.keys(receipts.toolCall("t", "r", "s", tool)).filter((k) => k !== "tool_call");
  assert.deepEqual(common.sort(), receipt);
});

test("kinds take names for decisions and statuses", () => {
  const r = receipts.modelCall("team-a", "r", "s", { decision: "deny", reason: "budget", input_tokens: 3 });
  assert.equal(r.model_call.decision, receipts.Decision.DENY);
  const x = receipts.agentExec("team-a", "r", "s", "start-1", { status: receipts.TIMED_OUT });
  assert.equal(x.agent_exec.status, receipts.ExecStatus.TIMED_OUT);
  assert.equal(x.agent_exec.start_receipt_id, "start-1");
  assert.equal(receipts.toolCall("team-a", "r", "s", { decision: 2 }).tool_call.decision, 2);
  assert.throws(() => receipts.toolCall("team-a", "r", "s", { decision: "maybe" as any }),
                new RangeError("decision: 'maybe' is not one of allow, deny"));
  assert.throws(() => receipts.agentExec("team-a", "r", "s", "x", { status: "done" as any }),
                new RangeError("status: 'done' is not one of succeeded, failed, timed_out, killed, error"));
  assert.throws(() => receipts.toolCall("team-a", "r", "s", { model: "m" } as any), new TypeError(
    "tool_call: 'model' is not a field of tool_call (its fields: tool, target, decision, reason, request_sha256, " +
    "response_sha256, status_code, latency_ms, cost_micros, credential_id)"));
  assert.throws(() => receipts.modelCall("team-a", "r", "s", { input_tokens: 1.5 }),
                new TypeError("input_tokens: 1.5 is not an integer"));
  assert.throws(() => receipts.modelCall("team-a", "r", "s", { occurred_at_us: 0.5 }),
                new TypeError("occurred_at_us: 0.5 is not an integer"));
});

test("constructors give a fresh receipt_id and occurred_at_us now, and leave the rest to the ledger", () => {
  const before = Date.now() * 1000;
  const r = receipts.toolCall("Not A Team", "", "s", { trace_id: "xyz", latency_ms: -1 });
  assert.match(r.receipt_id, /^tool_call-[0-9a-f]{32}$/);
  assert.notEqual(receipts.toolCall("t", "r", "s").receipt_id, r.receipt_id);
  assert.ok(r.occurred_at_us >= before - 1000 && r.occurred_at_us <= Date.now() * 1000 + 1000, `${r.occurred_at_us}`);
  assert.deepEqual({ ...r, receipt_id: "", occurred_at_us: 0 }, {
    receipt_id: "", occurred_at_us: 0, team: "Not A Team", run_id: "", step_id: "s", trace_id: "xyz",
    tool_call: { latency_ms: -1 } });
});

test("the ledger logs each kind with exactly the fields set, a present 0 included", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const at = 1767225600000000;
  const sent = [
    receipts.agentStart("team-a", "run-1", "s1", { receipt_id: "k-0", occurred_at_us: at, decision: "allow",
                                                    timeout_ms: 60000, attributes: { b: "2", a: "1" } }),
    receipts.agentExec("team-a", "run-1", "s1", "k-0", { receipt_id: "k-1", occurred_at_us: at, attempt: 1,
                                                          status: "succeeded", exit_code: 0 }),
    receipts.modelCall("team-a", "run-1", "s1", { receipt_id: "k-2", occurred_at_us: at, provider: "openai",
                                                   model: "gpt-4o", route: "m", decision: "deny", reason: "budget",
                                                   input_tokens: 9007199254740991, output_tokens: 0,
                                                   trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
                                                   span_id: "00f067aa0ba902b7" }),
    receipts.toolCall("team-a", "run-1", "s1", { receipt_id: "k-3", occurred_at_us: at, tool: "search",
                                                  decision: "allow", cost_micros: 56, workflow: "wf", agent: "ag" }),
  ];
  const e = closing(t, new Emitter(ledger.address));
  for (const r of sent) await e.emit(r);
  assert.equal(await e.close(), true);
  assert.deepEqual(e.refused, []);
  const common = { team: "team-a", run_id: "run-1", step_id: "s1", occurred_at_us: at, attempt: 1 };
  assert.deepEqual(await ledger.receipts(), [
    { ...common, kind: "agent_start", receipt_id: "k-0", attributes: { a: "1", b: "2" }, decision: "allow",
      timeout_ms: 60000 },
    { ...common, kind: "agent_exec", receipt_id: "k-1", start_receipt_id: "k-0", status: "succeeded",
      exit_code: 0 },
    { ...common, kind: "model_call", receipt_id: "k-2", trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
      span_id: "00f067aa0ba902b7", provider: "openai", model: "gpt-4o", route: "m", decision: "deny", reason: "budget",
      input_tokens: 9007199254740991, output_tokens: 0 },
    { ...common, kind: "tool_call", receipt_id: "k-3", workflow: "wf", agent: "ag", tool: "search", decision: "allow",
      cost_micros: 56 },
  ]);
});
