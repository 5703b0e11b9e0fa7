// libFuzzer target: the evidence-pack reader and the proof-line reader.
// Any bytes as a pack: no crash, nothing written outside the scratch
// directory, bounded by the limits. Any bytes as proofs.jsonl: each line
// read by the verifier's parser, after the lines before it, as the
// reference reads it alone.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "export/pack/pack.h"
#include "export/verify/cc/proof_line.h"

namespace {

void ProofLinesAsTheReferenceReadsThem(std::string_view text) {
  ledger::verify::ProofLineParser parser;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    std::optional<ledger::verify::ProofLine> want = ledger::verify::ParseProofLine(line);
    int64_t seq = -1;
    std::string_view leaf_hash;
    bool ok = parser.Parse(line, &seq, &leaf_hash);
    if (ok != want.has_value()) std::abort();
    if (ok && !(ledger::verify::ProofLine{seq, std::string(leaf_hash), parser.path()} == *want)) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ProofLinesAsTheReferenceReadsThem(std::string_view(reinterpret_cast<const char*>(data), size));
  ledger::pack::ScratchDir dir("fuzz-pack");
  std::string pack = dir.path() + "/in.tar.gz", out = dir.path() + "/out";
  std::filesystem::create_directory(out);
  {
    std::ofstream f(pack, std::ios::binary);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  ledger::pack::Limits limits;
  limits.max_file_bytes = 1 << 20;
  limits.max_total_bytes = 4 << 20;
  (void)ledger::pack::ExtractArchive(pack, out, limits);
  // Only regular files directly in `out`.
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (e.path().parent_path() != out && e.path() != pack && e.path() != out) std::abort();
    if (!e.is_regular_file() && e.path() != out) std::abort();
  }
  return 0;
}
