// The Dashboard against a real ledgerd: steps, runs, and a watch that
// resumes across a restart of the ledger.
import * as assert from "node:assert/strict";
import { test } from "node:test";

import { Dashboard, Emitter, receipts, status, StepChange, stateName } from "evidence-ledger";

import { closing, Ledger, sleep } from "./ledger";

test("steps, run and watch", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const d = new Dashboard(ledger.address);
  t.after(() => d.close());
  const changes: StepChange[] = [];
  const watcher = (async (t) => {
    for await (const change of d.watch("team-w")) {
      changes.push(change);
      if (changes.length === 4) return;
    }
  })();
  const start = receipts.agentStart("team-w", "run-1", "build", { decision: receipts.ALLOW, timeout_ms: 600000 });
  const lost = receipts.agentStart("team-w", "run-1", "test", { decision: receipts.ALLOW, timeout_ms: 50 });
  const e = closing(t, new Emitter(ledger.address));
  await e.emit(start);
  await e.emit(receipts.modelCall("team-w", "run-1", "build", { route: "m", decision: receipts.DENY }));
  await e.emit(receipts.agentExec("team-w", "run-1", "build", start.receipt_id, { status: receipts.SUCCEEDED }));
  await e.emit(lost);
  assert.equal(await e.close(), true);
  const deadline = Date.now() + 20000;
  while ((await d.steps("team-w", { states: ["unknown"] })).length === 0 && Date.now() < deadline) await sleep(50);
  const unknown = await d.steps("team-w", { states: ["unknown"] });
  assert.deepEqual(unknown.map((s) => s.step_id), ["test"]);
  const build = await d.step("team-w", "run-1", "build");
  assert.equal(build.state, "STEP_STATE_SUCCEEDED");
  assert.equal(stateName(build.state), "succeeded");
  assert.equal(build.calls.model_calls_denied, 1);
  const run = await d.run("team-w", "run-1");
  assert.deepEqual([run.steps_succeeded, run.steps_unknown], [1, 1]);
  assert.deepEqual((await d.runs("team-w")).map((r) => r.run_id), ["run-1"]);
  await watcher;
  // build started, build succeeded, test started, test declared unknown
  assert.deepEqual(changes.map((c) => [c.step.step_id, stateName(c.step.state)]),
                   [["build", "pending"], ["build", "succeeded"], ["test", "pending"], ["test", "unknown"]]);
  assert.deepEqual(changes.map((c) => c.seq), [...changes.map((c) => c.seq)].sort((a, b) => a - b));
  await assert.rejects(d.steps("team-w", { states: ["lost" as any] }),
                new RangeError("states: 'lost' is not one of pending, succeeded, failed, denied, unknown"));
});

test("a watch resumes after the ledger restarts: every change once, in seq order", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const d = new Dashboard(ledger.address);
  t.after(() => d.close());
  const changes: StepChange[] = [];
  let seen = 0;
  const watcher = (async (t) => {
    for await (const change of d.watch("team-r", { afterSeq: -1 })) {
      changes.push(change);
      seen++;
      if (changes.length === 8) return;
    }
  })();
  const starts = [0, 1, 2, 3].map((i) => receipts.agentStart("team-r", "run-1", `s${i}`, { decision: "allow",
                                                                                          timeout_ms: 600000 }));
  const before = closing(t, new Emitter(ledger.address));
  for (const s of starts) await before.emit(s);
  await before.emit(receipts.agentExec("team-r", "run-1", "s0", starts[0].receipt_id, { status: "succeeded" }));
  await before.emit(receipts.agentExec("team-r", "run-1", "s1", starts[1].receipt_id, { status: "failed" }));
  assert.equal(await before.close(), true);
  while (seen < 6) await sleep(10);
  await ledger.kill();
  await sleep(200);
  await ledger.start();
  const after = closing(t, new Emitter(ledger.address));
  await after.emit(receipts.agentExec("team-r", "run-1", "s2", starts[2].receipt_id, { status: "succeeded" }));
  await after.emit(receipts.agentExec("team-r", "run-1", "s3", starts[3].receipt_id, { status: "killed" }));
  assert.equal(await after.close(), true);
  await watcher;
  assert.deepEqual(changes.map((c) => c.seq), [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(changes.slice(6).map((c) => [c.step.step_id, stateName(c.step.state)]),
                   [["s2", "succeeded"], ["s3", "failed"]]);
});

test("a watch that may not retry ends with the ledger's error", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const d = new Dashboard(ledger.address);
  t.after(() => d.close());
  const watch = d.watch("team-x", { retry: false });
  const ended = assert.rejects(watch.next(), (e: any) => e.code === status.UNAVAILABLE);
  await sleep(300);
  await ledger.kill();
  await ended;
});
