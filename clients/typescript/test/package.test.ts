// The built package stands alone: what npm would pack (dist/, the protos
// in it, and the README.md npm always packs) emits to a ledger from a
// directory of its own.
import { execFile, execFileSync } from "node:child_process";
import * as assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { Ledger } from "./ledger";

const PACKAGE = path.join(__dirname, "..", "..");

test("npm packs dist/ with the protos, and the copy runs alone", async (t) => {
  const packed = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"],
                                         { cwd: PACKAGE, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
  const files: string[] = packed[0].files.map((f: { path: string }) => f.path);
  for (const name of ["dist/index.js", "dist/index.d.ts", "dist/conformance.js", "dist/proto/receipt.proto",
                      "dist/proto/ledger_service.proto", "dist/proto/query.proto", "package.json"]) {
    assert.ok(files.includes(name), `${name} is not packed`);
  }
  assert.deepEqual(files.filter((f) => !f.startsWith("dist/") && f !== "package.json" && f !== "README.md"), []);

  const copy = mkdtempSync(path.join(tmpdir(), "ledger-ts-package-"));
  t.after(() => rmSync(copy, { recursive: true, force: true }));
  for (const f of files) cpSync(path.join(PACKAGE, f), path.join(copy, f));
  symlinkSync(path.join(PACKAGE, "node_modules"), path.join(copy, "node_modules"));
  writeFileSync(path.join(copy, "emit.js"), `
    const { Emitter, receipts } = require("evidence-ledger");
    const e = new Emitter(process.argv[2]);
    e.emit(receipts.toolCall("team-a", "r", "s", { receipt_id: "alone-1", tool: "t", decision: "allow" }))
      .then(() => e.close()).then((flushed) => console.log(flushed, e.acknowledged));
  `);
  const ledger = await Ledger.start();
  t.after(() => ledger.stop());
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(copy, "emit.js"), ledger.address],
                                               { cwd: copy });
  assert.equal(stdout, "true 1\n");
  assert.deepEqual(await ledger.receiptIds(), ["alone-1"]);
});
