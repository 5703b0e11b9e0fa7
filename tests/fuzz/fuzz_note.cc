// libFuzzer target: the signed-note and checkpoint parsers, with the key of
// tests/vectors/checkpoint.json. No crash, and a checkpoint that parses
// formats back to the same text.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ledger/format/note/note.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto* key = new ledger::note::Verifier(*ledger::note::Verifier::Parse(
      "evidence-ledger.test/vectors+3d39d633+Afx8M1wgusYEUE/VPD4WhawmrEpmk9I9whSYM7m6rFjT"));
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)key->Open(text);
  (void)ledger::note::Verifier::Parse(text);
  if (auto cp = ledger::note::ParseCheckpoint(text); cp.ok()) {
    if (ledger::note::FormatCheckpoint(*cp) != text.substr(0, ledger::note::FormatCheckpoint(*cp).size())) {
      std::abort();
    }
  }
  return 0;
}
