// dist/conformance.js (clients/conformance/PROTOCOL.md) against a real
// ledgerd: the events of each step, and the error event.
import { spawn } from "node:child_process";
import * as assert from "node:assert/strict";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";

import { freePort, Ledger } from "./ledger";

const RUNNER = path.join(__dirname, "..", "..", "dist", "conformance.js");

/** Runs the runner on `scenario`; `onEvent` may answer a "waiting" event. */
async function play(scenario: object, onEvent: (event: any) => Promise<void> | void = () => {}):
    Promise<{ events: any[]; code: number | null }> {
  const runner = spawn(process.execPath, [RUNNER], { stdio: ["pipe", "pipe", "ignore"] });
  const exited = new Promise<number | null>((resolve) => runner.once("exit", resolve));
  runner.stdin.write(JSON.stringify(scenario) + "\n");
  const events: any[] = [];
  for await (const line of createInterface({ input: runner.stdout })) {
    const event = JSON.parse(line);
    events.push(event);
    await onEvent(event);
    if (event.event === "waiting") runner.stdin.write("\n");
  }
  return { events, code: await exited };
}

const AT = 1767225600000000;

test("the runner plays emit, close, step and watch, one event per line", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const place = { team: "team-a", run_id: "r1", step_id: "s1", occurred_at_us: AT };
  const { events, code } = await play({
    target: ledger.address, tls: null, options: { batch_size: 2, linger_ms: 10, max_backoff_ms: 200 },
    receipts: [
      { ...place, kind: "agent_start", receipt_id: "c-0", decision: "allow", timeout_ms: 600000 },
      { ...place, kind: "model_call", receipt_id: "c-1", route: "m", decision: "deny", trace_id: "xyz" },
      { ...place, kind: "agent_exec", receipt_id: "c-2", start_receipt_id: "c-0", status: "succeeded", exit_code: 0 },
    ],
    steps: [{ do: "emit", from: 0, to: 3 }, { do: "wait" }, { do: "close" },
            { do: "step", team: "team-a", run_id: "r1", step_id: "s1" },
            { do: "watch", team: "team-a", run_id: "r1", after_seq: -1, count: 2 }],
  });
  assert.deepEqual(events, [
    { event: "emitted", index: 0 }, { event: "emitted", index: 1 }, { event: "emitted", index: 2 },
    { event: "waiting" },
    { event: "closed", flushed: true, acknowledged: 2, duplicates: 0, retries: 0,
      refused: [{ receipt_id: "c-1", code: "INVALID_ARGUMENT",
                  message: "trace_id: must be 32 lowercase hex digits, not all zero (W3C trace context)" }],
      unsettled: [] },
    { event: "step", state: "succeeded", run_id: "r1", step_id: "s1", attempt: 1 },
    { event: "change", seq: 0, run_id: "r1", step_id: "s1", attempt: 1, state: "pending" },
    { event: "change", seq: 1, run_id: "r1", step_id: "s1", attempt: 1, state: "succeeded" },
  ]);
  assert.equal(code, 0);
});

test("a full buffer, then what close could not settle", async () => {
  const port = await freePort();  // nothing listens
  const { events, code } = await play({
    target: `127.0.0.1:${port}`,
    options: { max_buffer: 2, block: true, emit_timeout_ms: 300, flush_timeout_ms: 200, rpc_timeout_ms: 100 },
    receipts: [0, 1, 2].map((i) => ({ kind: "tool_call", receipt_id: `f-${i}`, team: "team-a", run_id: "r",
                                      step_id: "s", tool: "t" })),
    steps: [{ do: "emit", from: 0, to: 3 }, { do: "close" }],
  });
  assert.deepEqual(events.slice(0, 2), [{ event: "emitted", index: 0 }, { event: "emitted", index: 1 }]);
  assert.equal(events[2].event, "buffer_full");
  assert.ok(events[2].waited_ms >= 300, `waited ${events[2].waited_ms} ms`);
  assert.deepEqual({ ...events[3], retries: 0 }, { event: "closed", flushed: false, acknowledged: 0, duplicates: 0,
                                                   retries: 0, refused: [], unsettled: ["f-0", "f-1"] });
  assert.equal(code, 0);
});

test("what the scenario did not expect is an error event and exit 1", async () => {
  const bad = async (scenario: object) => play({ target: "127.0.0.1:1", ...scenario });
  assert.deepEqual(await bad({ receipts: [{ kind: "tool_call", receipt_id: "x", model: "m" }] }), { code: 1, events: [{
    event: "error", message: "receipt x: tool_call: 'model' is not a field of tool_call (its fields: tool, target, " +
    "decision, reason, request_sha256, response_sha256, status_code, latency_ms, cost_micros, credential_id)" }] });
  assert.deepEqual(await bad({ receipts: [{ kind: "step_unknown" }] }), { code: 1, events: [{
    event: "error", message: "kind: 'step_unknown' is not one of agent_start, agent_exec, model_call, tool_call" }] });
  assert.deepEqual(await bad({ options: { linger: 1 } }), { code: 1, events: [{
    event: "error", message: "options.linger: not an option of the protocol" }] });
  assert.deepEqual(await bad({ steps: [{ do: "sleep" }] }), { code: 1, events: [{
    event: "error", message: "steps: 'sleep' is not a step of the protocol" }] });
});
