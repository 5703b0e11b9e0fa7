// pack_outcomes: outcomes.json recomputed from entries.jsonl (stdin to
// stdout), as the exporter and the verifier compute it. Tamper tests use it
// to rebuild a pack as an operator holding the ledger's key could.
#include <iostream>
#include <string>

#include "export/pack/pack.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"

int main() {
  ledger::pack::Outcomes outcomes;
  std::string line;
  while (std::getline(std::cin, line)) {
    auto entry = ledger::receipt::ParseStored(line);
    if (!entry.ok()) {
      std::cerr << "pack_outcomes: " << entry.status().message() << "\n";
      return 1;
    }
    if (auto s = outcomes.Add(*std::move(entry)); !s.ok()) {
      std::cerr << "pack_outcomes: " << s.message() << "\n";
      return 1;
    }
  }
  auto s = outcomes.Write([](std::string_view piece) { std::cout << piece; });
  if (!s.ok()) {
    std::cerr << "pack_outcomes: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
