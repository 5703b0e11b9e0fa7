// libFuzzer target: the evidence-pack reader. Any bytes as a pack: no crash,
// nothing written outside the scratch directory, bounded by the limits.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "export/pack/pack.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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
