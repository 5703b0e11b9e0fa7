// The Emitter against a real ledgerd.
import * as assert from "node:assert/strict";
import { test } from "node:test";

import { BufferFullError, DEFAULT_FLUSH_TIMEOUT_MS, Emitter, Logger, receipts, Result, status } from "evidence-ledger";

import { closing, freePort, Ledger, sleep } from "./ledger";

function calls(n: number, prefix: string, team = "team-a"): receipts.ModelCallReceipt[] {
  return Array.from({ length: n }, (_, i) => receipts.modelCall(team, `run-${Math.floor(i / 50)}`, `step-${i % 7}`, {
    receipt_id: `${prefix}-${i}`, route: "m", decision: receipts.ALLOW, input_tokens: i }));
}

/** A logger that keeps what it is told. */
function recorder(): Logger & { warnings: string[]; errors: [string, unknown][] } {
  const warnings: string[] = [];
  const errors: [string, unknown][] = [];
  return { warnings, errors, warn: (m) => warnings.push(m), error: (m, e) => errors.push([m, e]) };
}

test("batches and flushes on close", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const results: Result[] = [];
  const e = closing(t, new Emitter(ledger.address, { batchSize: 64, onResult: (_, result) => results.push(result) }));
  for (const r of calls(1000, "a")) await e.emit(r);
  assert.equal(await e.close(), true);
  assert.equal(e.acknowledged, 1000);
  assert.deepEqual(e.refused, []);
  assert.deepEqual(e.unsettled, []);
  assert.deepEqual(results.map((r) => r.seq).sort((a, b) => a - b), Array.from({ length: 1000 }, (_, i) => i));
  assert.deepEqual(await ledger.receiptIds(), Array.from({ length: 1000 }, (_, i) => `a-${i}`));
});

test("a ledger killed mid-stream and restarted loses nothing and duplicates nothing", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const sent = calls(6000, "b");
  let settled = 0;
  const e = closing(t, new Emitter(ledger.address, { batchSize: 100, maxBackoffMs: 500, logger: recorder(),
                                          onResult: () => settled++ }));
  const producer = (async (t) => {
    for (const [i, r] of sent.entries()) {
      await e.emit(r);
      if (i % 20 === 0) await sleep(1);
    }
  })();
  while (settled < 500) await sleep(5);
  await ledger.kill();  // mid-stream: batches in flight, some acknowledged, some not
  const settledAtKill = settled;
  await sleep(500);
  await ledger.start();
  await producer;
  assert.equal(await e.close(60000), true);
  assert.ok(settledAtKill < sent.length, "everything was settled before the kill: the test did not test it");
  assert.deepEqual(e.refused, []);
  assert.equal(e.acknowledged, sent.length);
  assert.ok(e.retries > 0, "the restart was not seen: the test did not test it");
  const ids = await ledger.receiptIds();
  assert.equal(new Set(ids).size, ids.length, "a receipt was appended twice");
  assert.deepEqual([...ids].sort(), sent.map((r) => r.receipt_id).sort());
});

test("refusals are reported, not retried", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const [good, bad] = calls(2, "c");
  bad.team = "Not A Team";
  const e = closing(t, new Emitter(ledger.address));
  await e.emit(good);
  await e.emit(bad);
  assert.equal(await e.close(), true);
  assert.equal(e.acknowledged, 1);
  assert.equal(e.refused.length, 1);
  assert.equal(e.refused[0].receipt_id, "c-1");
  assert.equal(e.refused[0].code, status.INVALID_ARGUMENT);
  assert.match(e.refused[0].message, /^team: /);
  assert.equal(e.retries, 0);
});

test("ids in the ledger's namespace are refused at emit", async (t) => {
  const [r] = calls(1, "c");
  r.receipt_id = "ledger.unknown.0";
  const e = closing(t, new Emitter("127.0.0.1:1"));
  await assert.rejects(e.emit(r), new RangeError("receipt_id: 'ledger.unknown.0' is in the ledger's namespace: " +
                                                 "ids starting with 'ledger.' are written by the ledger only"));
  r.receipt_id = "";
  await assert.rejects(e.emit(r), new TypeError("receipt_id: required (retries rely on it)"));
  assert.equal(await e.close(1000), true);
  assert.equal(e.acknowledged, 0);
  await assert.rejects(e.emit(calls(1, "c")[0]), new Error("emitter is closed"));
});

test("RESOURCE_EXHAUSTED is retried with back-off", async (t) => {
  const ledger = await Ledger.start("--rate-per-identity", "400");
  t.after(() => ledger.stop());
  const logger = recorder();
  const e = closing(t, new Emitter(ledger.address, { batchSize: 200, maxBackoffMs: 500, logger }));
  for (const r of calls(1200, "d")) await e.emit(r);
  assert.equal(await e.close(), true);
  assert.equal(e.acknowledged, 1200);
  assert.ok(e.retries > 0, "the rate limit was never hit");
  assert.match(logger.warnings[0], /^retrying \d+ receipt\(s\) in [0-9.]+ s: RESOURCE_EXHAUSTED: .+/);
  assert.deepEqual((await ledger.receiptIds()).sort(), Array.from({ length: 1200 }, (_, i) => `d-${i}`).sort());
});

test("the bounded buffer waits or rejects", async (t) => {
  const port = await freePort();  // nothing listens: nothing is ever settled
  const e = closing(t, new Emitter(`127.0.0.1:${port}`, { maxBuffer: 5, block: false, rpcTimeoutMs: 200,
                                                          logger: recorder() }));
  for (const r of calls(5, "e")) await e.emit(r);
  await assert.rejects(e.emit(calls(6, "e")[5]), new BufferFullError("maxBuffer: 5 receipts are not settled yet"));
  const waiting = closing(t, new Emitter(`127.0.0.1:${port}`, { maxBuffer: 1, emitTimeoutMs: 300, rpcTimeoutMs: 200,
                                                     logger: recorder() }));
  await waiting.emit(calls(1, "f")[0]);
  const started = Date.now();
  await assert.rejects(waiting.emit(calls(2, "f")[1]), BufferFullError);
  assert.ok(Date.now() - started >= 290, `waited ${Date.now() - started} ms, not 300`);
  assert.equal(await e.close(200), false);  // not flushed: said so, not hidden
  assert.deepEqual(e.unsettled.map((r) => r.receipt_id), ["e-0", "e-1", "e-2", "e-3", "e-4"]);
  assert.equal(await e.close(200), false);  // a second close keeps the account
  assert.deepEqual(e.unsettled.map((r) => r.receipt_id), ["e-0", "e-1", "e-2", "e-3", "e-4"]);
  assert.equal(await waiting.close(200), false);
  assert.deepEqual(waiting.unsettled.map((r) => r.receipt_id), ["f-0"]);
});

test("a callback that throws is logged, counted, and never stops the sender", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const logger = recorder();
  let asyncCalls = 0;
  const e = closing(t, new Emitter(ledger.address, { batchSize: 10, logger, onResult: (receipt) => {
    if (receipt.receipt_id.endsWith("7")) return Promise.reject(new Error("an async bug")).finally(() => asyncCalls++);
    throw new Error("a gateway's bug");
  } }));
  for (const r of calls(50, "g")) await e.emit(r);
  assert.equal(await e.flush(10000), true, "the sender stopped at the callback's error: flush hangs");
  assert.equal(await e.close(10000), true);
  await sleep(10);
  assert.equal(e.acknowledged, 50);
  assert.equal(asyncCalls, 5);
  assert.equal(e.callbackErrors, 50);
  assert.equal(logger.errors[0][0], "onResult threw for receipt g-0 (OK); the emitter goes on");
  assert.deepEqual(logger.errors[0][1], new Error("a gateway's bug"));
});

test("options are checked at construction", () => {
  assert.throws(() => new Emitter("127.0.0.1:1", { batchSize: 0 }),
                new RangeError("batchSize: must be an integer of at least 1, not 0"));
  assert.throws(() => new Emitter("127.0.0.1:1", { maxBuffer: 2.5 }),
                new RangeError("maxBuffer: must be an integer of at least 1, not 2.5"));

  assert.throws(() => new Emitter("127.0.0.1:1", { onResult: "print" as any }),
                new TypeError("onResult: must be a function onResult(receipt, result), not \"print\""));
});

test("flush and close wait 30 s by default, then say so", async (t) => {
  const port = await freePort();  // nothing listens: nothing is ever settled
  const e = closing(t, new Emitter(`127.0.0.1:${port}`, { rpcTimeoutMs: 200, flushTimeoutMs: 500,
                                                          logger: recorder() }));
  await e.emit(calls(1, "h")[0]);
  const started = Date.now();
  assert.equal(await e.flush(), false, `flushed: ${JSON.stringify(e.refused)}`);
  assert.equal(await e.close(), false, `flushed: ${JSON.stringify(e.refused)}`);
  const took = Date.now() - started;
  assert.ok(took >= 950 && took < 20000, `took ${took} ms, not twice flushTimeoutMs (and far from twice 30 s)`);
  assert.deepEqual(e.unsettled.map((r) => r.receipt_id), ["h-0"]);
  assert.equal(DEFAULT_FLUSH_TIMEOUT_MS, 30000);
});

test("retries are logged with the reason", async (t) => {
  const port = await freePort();
  const logger = recorder();
  const e = closing(t, new Emitter(`127.0.0.1:${port}`, { rpcTimeoutMs: 200, maxBackoffMs: 100, logger }));
  await e.emit(calls(1, "i")[0]);
  await sleep(500);
  await e.close(100);
  assert.match(logger.warnings[0], /^retrying 1 receipt\(s\) in [0-9.]+ s: (UNAVAILABLE|DEADLINE_EXCEEDED): .+/);
});
