// Plain text (no TLS) is dialed only to this machine unless asked for with
// `insecure` (security issue 31, item 8: the clients dialed any host in
// plain text, silently).
import * as assert from "node:assert/strict";
import { createServer, Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { test } from "node:test";

import { Dashboard, Emitter, receipts, ShardedDashboard, ShardedEmitter, ShardMap, status } from "evidence-ledger";

import { closing, Ledger, sleep } from "./ledger";

const refusal = (target: string) => new Error(`address ${JSON.stringify(target)} is not a loopback address: ` +
  "give TLS options (CA, certificate and key), or ask for plain text explicitly with insecure: true");

test("plain text to an address off this machine is refused", () => {
  for (const target of ["10.0.0.5:7420", "ledger:7420", "ledger.example.com:7420", "localhost.example.com:7420",
                        "127.0.0.1.example.com:7420", ":7420", "[fd00::2]:7420", "[::ffff:10.0.0.5]:7420",
                        "dns:///ledger:7420", "dns://8.8.8.8/localhost:7420", "ipv4:10.0.0.5:7420"]) {
    assert.throws(() => new Emitter(target), refusal(target), target);
    assert.throws(() => new Dashboard(target), refusal(target), target);
  }
});

test("every shard's address is checked before any shard is dialed", async (t) => {
  const accepted: Socket[] = [];
  const near = createServer((socket) => accepted.push(socket));  // shard 0, a loopback address: never dialed either
  await new Promise<void>((resolve) => near.listen(0, "127.0.0.1", resolve));
  t.after(() => { accepted.forEach((s) => s.destroy()); near.close(); });
  const map = new ShardMap({ version: 1, shards: [
    { shard: 0, address: `127.0.0.1:${(near.address() as { port: number }).port}` },
    { shard: 1, address: "10.0.0.5:7420" }] });
  const want = new Error(`shard 1: ${refusal("10.0.0.5:7420").message}`);
  assert.throws(() => closing(t, new ShardedEmitter(map)), want);
  assert.throws(() => new ShardedDashboard(map), want);
  await sleep(200);
  assert.equal(accepted.length, 0, "shard 0 was dialed");
});

test("plain text to loopback or a unix socket, and TLS to any address, are dialed as before", () => {
  for (const target of ["localhost:7420", "LocalHost:7420", "127.0.0.1:7420", "127.1.2.3:7420", "[::1]:7420",
                        "::1", "127.0.0.1", "dns:///localhost:7420", "passthrough:///127.0.0.1:7420",
                        "unix:/run/ledger.sock", "unix:///run/ledger.sock"]) {
    new Emitter(target).close(0);
    new Dashboard(target).close();
  }
  new Emitter("10.0.0.5:7420", { tls: { ca: Buffer.from("") } }).close(0);
});

/** An IPv4 address of this machine off loopback; undefined if it has none. */
function nonLoopbackIPv4(): string | undefined {
  return Object.values(networkInterfaces()).flat()
    .find((a) => a && a.family === "IPv4" && !a.internal && !a.address.startsWith("169.254."))?.address;
}

test("insecure dials plain text to an address off loopback", async (t) => {
  const host = nonLoopbackIPv4();
  if (!host) {
    // No such address here: insecure at least gets past the refusal to a
    // connection that fails (TEST-NET-3 answers nobody).
    const d = new Dashboard("203.0.113.1:7420", { insecure: true, timeoutMs: 300 });
    t.after(() => d.close());
    await assert.rejects(d.steps("team-a"), (e: any) => [status.UNAVAILABLE, status.DEADLINE_EXCEEDED].includes(e.code));
    return;
  }
  const ledger = await Ledger.startOn(host, "--insecure");
  t.after(() => ledger.stop());
  assert.throws(() => new Emitter(ledger.address), refusal(ledger.address));
  const e = closing(t, new Emitter(ledger.address, { insecure: true }));
  for (const id of ["insecure-0", "insecure-1"]) {
    await e.emit(receipts.modelCall("team-a", "run-1", "step-1", { receipt_id: id, route: "m", decision: "allow" }));
  }
  assert.equal(await e.close(), true);
  assert.equal(e.acknowledged, 2);
  assert.deepEqual(await ledger.receiptIds(), ["insecure-0", "insecure-1"]);
  const d = new Dashboard(ledger.address, { insecure: true });
  t.after(() => d.close());
  const deadline = Date.now() + 10000;
  while ((await d.runs("team-a")).length === 0 && Date.now() < deadline) await sleep(50);
  assert.deepEqual((await d.runs("team-a")).map((r) => r.run_id), ["run-1"]);
  const map = new ShardMap({ version: 1, shards: [{ shard: 0, address: ledger.address }] });
  closing(t, new ShardedEmitter(map, { insecure: true }));
});
