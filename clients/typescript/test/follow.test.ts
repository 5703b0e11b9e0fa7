// Following the leader of a replicated shard: the leader read from a
// follower's refusal, the targets' moves, and an Emitter against a node
// that follows (a gRPC server that refuses as one) and real ledgerds.
import * as assert from "node:assert/strict";
import { test } from "node:test";

import * as grpc from "@grpc/grpc-js";
import { Emitter, leaderNamed, receipts, status } from "evidence-ledger";

import { parseTargets, Targets } from "../src/follow";
import { closing, freePort, Ledger, sleep } from "./ledger";

/** A follower's refusal, as ledger/storage/replication/node.cc Node::NotLeader writes it. */
function notLeader(leader: string): string {
  return `replication: node b follows; the leader is a at leader=${leader} (epoch 3); send appends there`;
}
const NO_LEADER = "replication: node b does not lead and no leader is known yet; retry";

function calls(n: number, prefix: string): receipts.ModelCallReceipt[] {
  return Array.from({ length: n }, (_, i) => receipts.modelCall("team-a", "run-1", `step-${i % 7}`, {
    receipt_id: `${prefix}-${i}`, route: "m", decision: receipts.ALLOW, input_tokens: i }));
}

/** A node that follows: it refuses every Append with UNAVAILABLE naming `leader` (changed at will), or,
 * with none, as a node that knows no leader yet; `refused` counts the Appends it refused. */
class Follower {
  leader?: string;
  refused = 0;
  address = "";
  private readonly server = new grpc.Server();

  static async start(leader?: string): Promise<Follower> {
    const f = new Follower();
    f.leader = leader;
    const refuse = (_call: unknown, callback: grpc.sendUnaryData<unknown>) => {
      f.refused++;
      callback({ code: status.UNAVAILABLE, details: f.leader ? notLeader(f.leader) : NO_LEADER });
    };
    f.server.addService({
      Append: { path: "/evidence.ledger.v1.LedgerService/Append", requestStream: false, responseStream: false,
                requestSerialize: (v: Buffer) => v, requestDeserialize: (b: Buffer) => b,
                responseSerialize: (v: Buffer) => v, responseDeserialize: (b: Buffer) => b },
    }, { Append: refuse });
    const port = await new Promise<number>((resolve, reject) =>
      f.server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(),
                         (e, p) => (e ? reject(e) : resolve(p))));
    f.address = `127.0.0.1:${port}`;
    return f;
  }

  stop(): void {
    this.server.forceShutdown();
  }
}

test("the leader is read from a follower's refusal as ledgerctl reads it", () => {
  assert.equal(leaderNamed(status.UNAVAILABLE, notLeader("127.0.0.1:7421")), "127.0.0.1:7421");
  assert.equal(leaderNamed(status.UNAVAILABLE, "leader=[::1]:7421"), "[::1]:7421");
  assert.equal(leaderNamed(status.UNAVAILABLE, "at leader=node-a.ledger:7420; send appends there"),
               "node-a.ledger:7420");
  assert.equal(leaderNamed(status.UNAVAILABLE, "(leader=10.0.0.2:7420)"), "10.0.0.2:7420");
  assert.equal(leaderNamed(status.UNAVAILABLE, NO_LEADER), undefined);
  assert.equal(leaderNamed(status.UNAVAILABLE, "leader= (epoch 3)"), undefined);
  assert.equal(leaderNamed(status.PERMISSION_DENIED, notLeader("127.0.0.1:7421")), undefined);
});

test("a target names one node or several", () => {
  assert.deepEqual(parseTargets("a:1"), ["a:1"]);
  assert.deepEqual(parseTargets("a:1, b:2"), ["a:1", "b:2"]);
  assert.deepEqual(parseTargets(["a:1", "b:2"]), ["a:1", "b:2"]);
  for (const bad of ["", "a:1,", [], ["a:1", ""]]) {
    assert.throws(() => parseTargets(bad), new TypeError(
      `target: HOST:PORT, or several separated by commas (the nodes of a shard), not ${JSON.stringify(bad)}`));
  }
});

test("targets follow the leader named and fall back to the nodes when it fails", () => {
  const t = new Targets(["f1:1", "f2:2"]);
  const step = (code: status, message: string, atOnce: boolean, current: string) => {
    assert.deepEqual([t.failed(code, message), t.current], [atOnce, current], `${status[code]}: ${message}`);
  };
  step(status.UNAVAILABLE, notLeader("l:9"), true, "l:9");
  t.accepted();
  assert.equal(t.current, "l:9");  // later batches too
  step(status.UNAVAILABLE, "connection refused", false, "f1:1");  // back to the node that named it
  step(status.UNAVAILABLE, NO_LEADER, false, "f2:2");  // on to the next
  step(status.DEADLINE_EXCEEDED, "Deadline exceeded", false, "f1:1");
  step(status.RESOURCE_EXHAUSTED, "busy", false, "f1:1");  // back-pressure: stay
  step(status.UNAVAILABLE, notLeader("f1:1"), false, "f2:2");  // names itself: not followed, moved on
});

test("two nodes that name each other are followed at once three times, then after the back-off", () => {
  const t = new Targets(["a:1"]);
  const hops = Array.from({ length: 5 },
                          () => t.failed(status.UNAVAILABLE, notLeader(t.current === "a:1" ? "b:2" : "a:1")));
  assert.deepEqual(hops, [true, true, true, false, false]);
  t.accepted();
  assert.equal(t.failed(status.UNAVAILABLE, notLeader("c:3")), true);
});

test("a leader that may not be dialed is not followed", () => {
  const t = new Targets(["127.0.0.1:1"], (address) => address.startsWith("127."));
  assert.equal(t.failed(status.UNAVAILABLE, notLeader("10.0.0.2:7420")), false);
  assert.deepEqual([t.current, t.followed], ["127.0.0.1:1", undefined]);
});

test("a follower sends the batch to the leader it names, and the emitter stays there", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const follower = await Follower.start(ledger.address);
  t.after(() => follower.stop());
  const warnings: string[] = [];
  const e = closing(t, new Emitter(follower.address, { batchSize: 50, lingerMs: 0, maxBackoffMs: 500,
                                                       logger: { warn: (m) => warnings.push(m), error: () => {} } }));
  const sent = calls(300, "fl");
  for (const r of sent) await e.emit(r);
  assert.equal(await e.close(30000), true);
  assert.deepEqual([e.acknowledged, e.duplicates, e.refused], [300, 0, []]);
  assert.equal(follower.refused, 1, "the first batch; every later one goes to the leader");
  assert.deepEqual(await ledger.receiptIds(), sent.map((r) => r.receipt_id));
  assert.ok(warnings.includes(`${follower.address} does not lead: following the leader it names at ` +
                              `${ledger.address}: UNAVAILABLE: ${notLeader(ledger.address)}`), warnings.join("\n"));
});

test("when the leader followed dies the emitter goes back to the follower and on to the new leader", async (t) => {
  const old = await Ledger.start();
  t.after(() => old.stop());
  const fresh = await Ledger.start();
  t.after(() => fresh.stop());
  const follower = await Follower.start(old.address);
  t.after(() => follower.stop());
  const e = closing(t, new Emitter(follower.address, { batchSize: 10, lingerMs: 0, maxBackoffMs: 200,
                                                       logger: { warn: () => {}, error: () => {} } }));
  const [first, second] = [calls(50, "f1"), calls(50, "f2")];
  for (const r of first) await e.emit(r);
  assert.equal(await e.flush(30000), true);
  await old.kill();
  follower.leader = undefined;  // the lease has not expired yet
  for (const r of second) await e.emit(r);
  await sleep(500);
  assert.equal(e.acknowledged, 50, "with no leader known only the first 50 are acknowledged");
  follower.leader = fresh.address;  // a new leader took over
  assert.equal(await e.close(30000), true);
  assert.deepEqual([e.acknowledged, e.refused], [100, []]);
  assert.ok(e.retries > 0);
  assert.deepEqual(await fresh.receiptIds(), second.map((r) => r.receipt_id));
});

test("a list of nodes is tried in turn past one that is down", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const down = `127.0.0.1:${await freePort()}`;
  for (const [n, target] of [[0, [down, ledger.address]], [1, `${down},${ledger.address}`]] as const) {
    const e = closing(t, new Emitter(target, { maxBackoffMs: 200, logger: { warn: () => {}, error: () => {} } }));
    for (const r of calls(20, `ls${n}`)) await e.emit(r);
    assert.equal(await e.close(10000), true, JSON.stringify(target));
    assert.deepEqual([e.acknowledged, e.refused], [20, []]);
  }
  assert.deepEqual(await ledger.receiptIds(), [...calls(20, "ls0"), ...calls(20, "ls1")].map((r) => r.receipt_id));
});

test("every node of a list is checked for plain text before any is dialed", () => {
  assert.throws(() => new Emitter(["127.0.0.1:7420", "10.0.0.5:7420"]), new Error(
    'address "10.0.0.5:7420" is not a loopback address: give TLS options (CA, certificate and key), ' +
    "or ask for plain text explicitly with insecure: true"));
});
