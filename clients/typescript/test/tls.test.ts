// Mutual TLS with scripts/dev-certs.sh's certificates, and routing by a
// shard map across two ledgers.
import { execFileSync } from "node:child_process";
import * as assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { Dashboard, Emitter, fnv1a64, receipts, ShardedEmitter, ShardMap, status } from "evidence-ledger";

import { BUILD, closing, Ledger, ROOT } from "./ledger";

test("a gateway over mutual TLS with the development certificates", async (t) => {
  const certs = mkdtempSync(path.join(tmpdir(), "ledger-ts-certs-"));
  t.after(() => rmSync(certs, { recursive: true, force: true }));
  execFileSync(path.join(ROOT, "scripts", "dev-certs.sh"), [certs, "gateway", "auditor", "stranger"],
               { stdio: "ignore" });
  const c = (name: string) => path.join(certs, name);
  const ledger = await Ledger.start("--tls-cert", c("server.pem"), "--tls-key", c("server.key"),
                                    "--client-ca", c("ca.pem"), "--policy", c("policy.json"));
  t.after(() => ledger.stop());
  const tls = (who: string) => ({ ca: readFileSync(c("ca.pem")), cert: readFileSync(c(`${who}.pem`)),
                                  key: readFileSync(c(`${who}.key`)) });
  const emitter = closing(t, new Emitter(`localhost:${ledger.port}`, { tls: tls("gateway") }));
  await emitter.emit(receipts.modelCall("team-a", "run-1", "step-1", { route: "m", decision: receipts.ALLOW }));
  await emitter.emit(receipts.modelCall("team-b", "run-1", "step-1", { receipt_id: "b-1", route: "m",
                                                                        decision: receipts.ALLOW }));
  assert.equal(await emitter.close(), true);
  assert.deepEqual(emitter.unsettled, []);
  assert.equal(emitter.acknowledged, 1);
  assert.deepEqual(emitter.refused.map((r) => [r.receipt_id, r.code]), [["b-1", status.PERMISSION_DENIED]]);
  assert.match(emitter.refused[0].message, /team-b/);

  // By IP, the name checked is given; an auditor reads, a stranger may not.
  const auditor = new Dashboard(`127.0.0.1:${ledger.port}`, { tls: { ...tls("auditor"), serverName: "localhost" } });
  t.after(() => auditor.close());
  assert.equal((await auditor.run("team-a", "run-1")).calls.model_calls_allowed, 1);
  const stranger = new Dashboard(`localhost:${ledger.port}`, { tls: tls("stranger") });
  t.after(() => stranger.close());
  await assert.rejects(stranger.run("team-a", "run-1"), (e: any) => e.code === status.PERMISSION_DENIED);

  // An identity with no rule is refused, for good: reported, never retried.
  const outsider = closing(t, new Emitter(`localhost:${ledger.port}`, { tls: tls("stranger") }));
  await outsider.emit(receipts.modelCall("team-a", "run-1", "step-1", { receipt_id: "s-1", route: "m" }));
  assert.equal(await outsider.close(), true);
  assert.deepEqual([outsider.acknowledged, outsider.retries], [0, 0]);
  assert.deepEqual(outsider.refused.map((r) => [r.receipt_id, r.code]), [["s-1", status.PERMISSION_DENIED]]);

  // Without a client certificate the ledger refuses the connection: nothing is settled.
  const anonymous = closing(t, new Emitter(`localhost:${ledger.port}`, { tls: { ca: readFileSync(c("ca.pem")) },
                                                              rpcTimeoutMs: 300, logger: { warn() {}, error() {} } }));
  await anonymous.emit(receipts.modelCall("team-a", "run-1", "step-1", { receipt_id: "anon-1", route: "m" }));
  assert.equal(await anonymous.close(500), false);
  assert.deepEqual(anonymous.unsettled.map((r) => r.receipt_id), ["anon-1"]);
  const halfTls = { ca: Buffer.from(""), cert: readFileSync(c("gateway.pem")) };
  assert.throws(() => new Emitter("localhost:1", { tls: halfTls }),
                new TypeError("tls: cert and key go together (mutual TLS) or not at all"));
});

test("the shard map routes as ledgerctl does", async (t) => {
  assert.equal(fnv1a64(""), 14695981039346656037n);
  assert.equal(fnv1a64("a"), 0xaf63dc4c8601ec8cn);
  const [a, b] = [await Ledger.start(), await Ledger.start()];
  t.after(() => Promise.all([a.stop(), b.stop()]));
  const file = path.join(a.work, "shard-map.json");
  writeFileSync(file, JSON.stringify({ version: 1, shards: [{ shard: 1, address: b.address },
                                                            { shard: 0, address: a.address }],
                                       teams: { "team-pinned": 1 } }));
  const map = ShardMap.load(file);
  const teams = ["team-pinned", "team-a", "team-b", "team-c", "team-d", "équipe-ü"];  // the last: routed, not emitted
  const expected = teams.map((team) => JSON.parse(execFileSync(path.join(BUILD, "cmd", "ledgerctl"),
    ["--shard-map", file, "route", "--team", team], { encoding: "utf8" })).shard as number);
  assert.deepEqual(teams.map((team) => map.shardFor(team)), expected);
  assert.deepEqual(new Set(expected), new Set([0, 1]), "every team on one shard: the test did not test routing");
  const e = closing(t, new ShardedEmitter(map));
  for (const team of teams.filter((name) => /^[a-z-]+$/.test(name))) {
    await e.emit(receipts.toolCall(team, "run-1", "s", { receipt_id: `${team}-1`, tool: "t", decision: "allow" }));
  }
  assert.equal(await e.close(), true);
  assert.deepEqual(e.refused, []);
  assert.equal(e.acknowledged, teams.length - 1);
  const on = (shard: number) => teams.filter((name, i) => expected[i] === shard && /^[a-z-]+$/.test(name))
    .map((team) => `${team}-1`).sort();
  assert.deepEqual((await a.receiptIds()).sort(), on(0));
  assert.deepEqual((await b.receiptIds()).sort(), on(1));
  assert.throws(() => new ShardMap({ version: 2 }), new Error("shard map: version: must be 1"));
  assert.throws(() => new ShardMap({ version: 1, shards: [{ shard: 1, address: "a" }] }),
                new Error("shard map: shards: numbered 0 to n-1, each once"));
  assert.throws(() => new ShardMap({ version: 1, shards: [{ shard: 0, address: "a" }], teams: { t: 1 } }),
                new Error("shard map: teams.t: not a shard of this map"));
});
