// Mutual TLS with scripts/dev-certs.sh's certificates, and routing by a
// shard map across two ledgers.
import { execFileSync } from "node:child_process";
import * as assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import {
  ConfigurationError, Dashboard, Emitter, fnv1a64, receipts, ShardedEmitter, ShardMap, status,
} from "evidence-ledger";

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

  const halfTls = { ca: Buffer.from(""), cert: readFileSync(c("gateway.pem")) };
  assert.throws(() => new Emitter("localhost:1", { tls: halfTls }),
                new TypeError("tls: cert and key go together (mutual TLS) or not at all"));
});

// Issue 38: a TLS mismatch was retried for good. TLS options that do not match the server, and an identity the
// ledger refuses, stop the emitter at once: the receipts are refused with the reason, logged once, and emit()
// rejects with it.
test("configuration errors stop the emitter with what to give", async (t) => {
  const certs = mkdtempSync(path.join(tmpdir(), "ledger-ts-certs-"));
  const other = mkdtempSync(path.join(tmpdir(), "ledger-ts-other-"));
  t.after(() => [certs, other].forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  execFileSync(path.join(ROOT, "scripts", "dev-certs.sh"), [certs, "gateway", "stranger"], { stdio: "ignore" });
  execFileSync(path.join(ROOT, "scripts", "dev-certs.sh"), [other], { stdio: "ignore" });
  const c = (name: string) => path.join(certs, name);
  const ledger = await Ledger.start("--tls-cert", c("server.pem"), "--tls-key", c("server.key"),
                                    "--client-ca", c("ca.pem"), "--policy", c("policy.json"));
  const plain = await Ledger.start();
  t.after(() => Promise.all([ledger.stop(), plain.stop()]));
  const tlsAt = `localhost:${ledger.port}`, plainAt = `localhost:${plain.port}`;
  const tls = (dir: string, who: string) => ({ ca: readFileSync(c("ca.pem")),
                                               cert: readFileSync(path.join(dir, `${who}.pem`)),
                                               key: readFileSync(path.join(dir, `${who}.key`)) });
  const stranger = "identity 'uri:spiffe://dev/stranger' has no rule in the policy";
  const cases: [string, string, object, status, string, string?][] = [
    ["plain text to TLS", tlsAt, {}, status.FAILED_PRECONDITION,
     `the server at ${tlsAt} speaks TLS: give tls: { ca, cert, key }`],
    ["no client certificate", tlsAt, { tls: { ca: readFileSync(c("ca.pem")) } }, status.FAILED_PRECONDITION,
     `the server at ${tlsAt} wants a client certificate: give tls.cert and tls.key`],
    ["a certificate of another CA", tlsAt, { tls: tls(other, "gateway") }, status.FAILED_PRECONDITION,
     `the server at ${tlsAt} refused the client certificate (it closed the connection in the TLS handshake): ` +
     "give tls.cert and tls.key of a certificate issued by a CA it trusts"],
    ["TLS to plain text", plainAt, { tls: tls(certs, "gateway") }, status.FAILED_PRECONDITION,
     `the server at ${plainAt} speaks plain text, not TLS: leave out tls (plain text goes to a loopback address ` +
     "only, or with insecure: true)"],
    ["an identity with no rule", tlsAt, { tls: tls(certs, "stranger") }, status.PERMISSION_DENIED, stranger,
     `PERMISSION_DENIED: ${stranger}`],
  ];
  for (const [name, target, options, code, message, failure = message] of cases) {
    const logged: string[] = [];
    const e = closing(t, new Emitter(target, { ...options, maxBackoffMs: 200,
                                               logger: { warn: (m) => logged.push(m), error: (m) => logged.push(m) } }));
    const started = performance.now();
    await e.emit(receipts.modelCall("team-a", "run-1", "step-1", { receipt_id: "c-1", route: "m" }));
    assert.equal(await e.flush(10000), true, name);
    assert.ok(performance.now() - started < 5000, name);
    await assert.rejects(e.emit(receipts.modelCall("team-a", "run-1", "step-1", { receipt_id: "c-2", route: "m" })),
                         new ConfigurationError(failure), name);
    assert.equal(await e.close(), true, name);
    assert.deepEqual(e.refused, [{ receipt_id: "c-1", code, message, seq: 0, duplicate: false }], name);
    assert.deepEqual([e.retries, e.unsettled, e.failure?.message], [0, [], failure], name);
    assert.deepEqual(logged, [`${failure}; the emitter stops: 1 receipt(s) refused, and emit() rejects with ` +
                              "ConfigurationError"], name);
  }
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
