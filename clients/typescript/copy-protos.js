// Copies the ledger's protos into dist/proto, so that the built package
// stands alone (src/stubs.ts loads them from beside itself).
const fs = require("fs");
const path = require("path");

const from = path.join(__dirname, "..", "..", "proto");
const to = path.join(__dirname, "dist", "proto");
fs.mkdirSync(to, { recursive: true });
for (const name of ["receipt.proto", "ledger_service.proto", "query.proto"]) {
  fs.copyFileSync(path.join(from, name), path.join(to, name));
}
