// pack_report: report.html rebuilt from a pack's files, as the exporter and
// the verifier write it (pack::WriteReport): entries.jsonl on stdin, the
// page on stdout; arguments the manifest.json, checkpoint and
// checkpoint-time files ("" for none). Tamper tests use it to rebuild a
// pack as an operator holding the ledger's key could, page included.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "export/manifest/manifest.h"
#include "export/pack/pack.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"

namespace {

std::string Read(const char* path) {
  if (path[0] == '\0') return "";
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int Fail(const std::string& why) {
  std::cerr << "pack_report: " << why << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return Fail("usage: pack_report MANIFEST CHECKPOINT CHECKPOINT_TIME < entries.jsonl");
  auto manifest = ledger::manifest::Parse(Read(argv[1]));
  if (!manifest.ok()) return Fail(std::string(manifest.status().message()));
  manifest->files.clear();  // the page is made before the digests exist
  ledger::pack::Outcomes outcomes;
  std::string line;
  while (std::getline(std::cin, line)) {
    auto entry = ledger::receipt::ParseStored(line);
    if (!entry.ok()) return Fail(std::string(entry.status().message()));
    if (auto s = outcomes.Add(*std::move(entry)); !s.ok()) return Fail(std::string(s.message()));
  }
  auto s = ledger::pack::WriteReport(*manifest, outcomes, Read(argv[2]), Read(argv[3]),
                                     [](std::string_view piece) { std::cout << piece; });
  return s.ok() ? 0 : Fail(std::string(s.message()));
}
