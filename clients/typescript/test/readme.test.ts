// The example of this client's README.md is examples/emitter.ts, word for
// word, and it runs against a real ledgerd.
import { execFile } from "node:child_process";
import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { Ledger, ROOT } from "./ledger";

const EXAMPLE = path.join(ROOT, "clients", "typescript", "examples", "emitter.ts");

test("the README's example is examples/emitter.ts", () => {
  const readme = readFileSync(path.join(ROOT, "clients", "typescript", "README.md"), "utf8");
  const marker = "(`clients/typescript/examples/emitter.ts`):\n\n```ts\n";
  const at = readme.indexOf(marker);
  assert.notEqual(at, -1, "clients/typescript/README.md: no TypeScript example after " + JSON.stringify(marker));
  const start = at + marker.length;
  assert.equal(readme.slice(start, readme.indexOf("```\n", start)), readFileSync(EXAMPLE, "utf8"));
});

test("the example emits a step's receipts to a ledger", async (t) => {
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const compiled = path.join(__dirname, "..", "examples", "emitter.js");
  const { stdout } = await promisify(execFile)(process.execPath, [compiled], {
    env: { ...process.env, LEDGER: ledger.address } });
  assert.equal(stdout, "logged 3 receipts, 0 refused\n");
  const kinds = (await ledger.receipts()).map((r) => [r.kind, r.step_id]);
  assert.deepEqual(kinds, [["agent_start", "summarize"], ["model_call", "summarize"], ["agent_exec", "summarize"]]);
});
