// The fixture of the evidence pack tests: a real log on disk, packs
// exported from it and verified offline, and tampering that re-signs with
// the ledger's key.
#ifndef EXPORT_VERIFY_CC_PACK_TEST_FIXTURE_H_
#define EXPORT_VERIFY_CC_PACK_TEST_FIXTURE_H_

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "export/exporter/exporter.h"
#include "export/pack/pack.h"
#include "export/verify/cc/verify.h"
#include "gtest/gtest.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/storage/log/log.h"
#include "nlohmann/json.hpp"
#include "query/projector/projector.h"
#include "tests/util/temp_dir.h"

namespace ledger {

inline std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void Write(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

// The multiproof.txt of a format 6 pack unpacked in `dir` for the entries
// of entries.jsonl's lines that `keep` keeps, made from the pack's own
// multiproof and entries (CONTRACT section 6): what a forger holding only
// the pack and the ledger's key can make. Every range the new multiproof
// needs holds no kept entry but lies in a range the old walk computed.
inline void KeepInMultiproof(const std::string& dir, const std::function<bool(int line)>& keep) {
  uint64_t size = nlohmann::json::parse(Read(dir + "/manifest.json"))["tree_size"];
  std::vector<uint64_t> seqs, kept;
  std::map<uint64_t, hash::Hash> leaves;
  std::istringstream entries(Read(dir + "/entries.jsonl"));
  std::string line;
  for (int i = 0; std::getline(entries, line); ++i) {
    uint64_t seq = nlohmann::json::parse(line)["seq"];
    seqs.push_back(seq);
    leaves[seq] = hash::LeafHash(line);
    if (keep(i)) kept.push_back(seq);
  }
  std::vector<hash::Hash> nodes;
  std::istringstream in(Read(dir + "/multiproof.txt"));
  while (std::getline(in, line)) nodes.emplace_back(*hash::ParseHex(line));
  auto holds = [](const std::vector<uint64_t>& s, uint64_t lo, uint64_t hi) {
    auto it = std::lower_bound(s.begin(), s.end(), lo);
    return it != s.end() && *it < hi;
  };
  auto split = [](uint64_t n) { return std::bit_floor(n - 1); };
  std::map<std::pair<uint64_t, uint64_t>, hash::Hash> known;
  size_t used = 0;
  std::function<hash::Hash(uint64_t, uint64_t)> root = [&](uint64_t lo, uint64_t hi) {
    hash::Hash h;
    if (!holds(seqs, lo, hi)) {
      h = nodes.at(used++);
    } else if (hi - lo == 1) {
      h = leaves.at(lo);
    } else {
      uint64_t k = split(hi - lo);
      hash::Hash left = root(lo, lo + k);
      h = hash::NodeHash(left, root(lo + k, hi));
    }
    known[{lo, hi}] = h;
    return h;
  };
  root(0, size);
  std::string out;
  std::function<void(uint64_t, uint64_t)> walk = [&](uint64_t lo, uint64_t hi) {
    if (!holds(kept, lo, hi)) {
      hash::AppendHex(known.at({lo, hi}), &out);
      out += "\n";
    } else if (hi - lo > 1) {
      uint64_t k = split(hi - lo);
      walk(lo, lo + k);
      walk(lo + k, hi);
    }
  };
  walk(0, size);
  Write(dir + "/multiproof.txt", out);
}

// Keeps the lines of entries.jsonl that `keep` keeps, unpacked in `dir`,
// with their inclusion proofs: proofs.jsonl's lines (formats 1 to 5) or the
// multiproof made anew (format 6, KeepInMultiproof above).
// `keep` is asked once a line.
inline void KeepEntries(const std::string& dir, const std::function<bool(int line)>& keep) {
  std::vector<bool> kept;
  std::istringstream entries(Read(dir + "/entries.jsonl"));
  for (std::string line; std::getline(entries, line);) kept.push_back(keep(static_cast<int>(kept.size())));
  auto keeps = [&](int i) { return i < static_cast<int>(kept.size()) && kept[i]; };
  if (std::filesystem::exists(dir + "/multiproof.txt")) KeepInMultiproof(dir, keeps);
  for (const char* name : {"entries.jsonl", "proofs.jsonl"}) {
    if (!std::filesystem::exists(dir + "/" + name)) continue;
    std::istringstream in(Read(dir + "/" + name));
    std::string out, line;
    for (int i = 0; std::getline(in, line); ++i) {
      if (keeps(i)) out += line + "\n";
    }
    Write(dir + "/" + name, out);
  }
}

class PackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::Log::Options o;
    o.data_dir = dir_.Sub("data");
    o.origin = "ledger.test/packs";
    o.checkpoint_interval_ms = 60'000;
    o.sequencer.projector = &projector_;
    Configure(o);
    log_ = *log::Log::Open(o, signer_);
    Populate();
  }

  // Hooks for fixtures built on this one: the log's options, and what it
  // holds to start with (by default two runs of team-a, three steps each).
  virtual void Configure(log::Log::Options& o) {}
  virtual void Populate() {
    std::vector<std::string> json;
    for (int run = 0; run < 2; ++run) {
      for (int step = 0; step < 3; ++step) {
        std::string base = R"("team":"team-a","run_id":"run-)" + std::to_string(run) + R"(","step_id":"s)" +
                           std::to_string(step) + R"(","occurred_at_us":5)";
        std::string id = "r" + std::to_string(run) + "s" + std::to_string(step);
        json.push_back(R"({"receipt_id":")" + id + R"(-start","kind":"agent_start",)" + base +
                       R"(,"decision":"allow","timeout_ms":60000,"cost_reserved_micros":900})");
        json.push_back(R"({"receipt_id":")" + id + R"(-m","kind":"model_call",)" + base +
                       R"(,"route":"m","decision":"deny","reason":"policy <b>","input_tokens":3})");
        if (step != 2) {
          json.push_back(R"({"receipt_id":")" + id + R"(-x","kind":"agent_exec",)" + base + R"(,"start_receipt_id":")" +
                         id + R"(-start","status":"succeeded","cost_micros":40})");
        }
      }
    }
    Append(json);
  }

  // Appends the receipts (JSON texts) and signs a checkpoint.
  void Append(const std::vector<std::string>& json) {
    std::vector<receipt::Receipt> receipts;
    for (const auto& j : json) receipts.push_back(*receipt::FromJsonText(j));
    std::vector<const receipt::Receipt*> ptrs;
    for (const auto& r : receipts) ptrs.push_back(&r);
    std::promise<void> done;
    ASSERT_TRUE(log_->Append("gateway", ptrs,
                             [&](std::vector<sequencer::Outcome> out) {
                               for (const auto& o : out) EXPECT_TRUE(o.status.ok()) << o.status;
                               done.set_value();
                             })
                    .ok());
    done.get_future().wait();
    ASSERT_TRUE(log_->SignCheckpoint().ok());
  }

  std::string Export(const exporter::Scope& scope, const std::string& name,
                     int pack_format = exporter::kLatestPackFormat) {
    std::string path = dir_.Sub(name);
    absl::Status s = exporter::ExportPack(*log_, scope, path, {.pack_format = pack_format});
    EXPECT_TRUE(s.ok()) << s;
    return path;
  }

  verify::Result Verify(const std::string& pack, bool with_key = true) {
    verify::Options o;
    if (with_key) {
      o.vkey = log_->verifier_key();
    } else {
      o.trust_pack_key = true;
    }
    auto r = verify::VerifyPack(pack, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : verify::Result();
  }

  // Unpacks `pack`, lets `edit` change the files, optionally re-signs the
  // manifest over the new digests (as a forger holding the key could not,
  // but as a test of the later checks must), and packs it again.
  std::string Tamper(const std::string& pack, const std::function<void(const std::string& dir)>& edit, bool resign) {
    std::string dir = dir_.Sub("t" + std::to_string(++tampered_));
    std::filesystem::create_directories(dir);
    auto files = *pack::ExtractArchive(pack, dir, pack::Limits());
    edit(dir);
    std::erase_if(files, [](const auto& f) { return !std::filesystem::exists(f.second); });
    if (resign) {
      nlohmann::json manifest = nlohmann::json::parse(Read(files[pack::kManifest]));
      for (const auto& [name, path] : files) {
        if (name == pack::kManifest || name == pack::kManifestSig) continue;
        manifest["files"][name] = *pack::FileSha256(path);
      }
      std::string text = manifest.dump() + "\n";
      Write(files[pack::kManifest], text);
      Write(files[pack::kManifestSig], *log_->SignNoteAt(0, hash::Hex(hash::Sha256(text)) + "\n"));
    }
    std::string out = dir + ".tar.gz";
    EXPECT_TRUE(pack::WriteArchive(files, out).ok());
    return out;
  }

  void ExpectFailure(const verify::Result& r, const std::string& file, int64_t seq, const std::string& message_start) {
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.file, file);
    EXPECT_EQ(r.seq, seq);
    EXPECT_EQ(r.message.substr(0, message_start.size()), message_start) << r.message;
  }

  testing::TempDir dir_;
  query::StepProjector projector_;
  note::Signer signer_ = *note::Signer::Generate("ledger.test/packs");
  std::unique_ptr<log::Log> log_;
  int tampered_ = 0;
};

}  // namespace ledger

#endif  // EXPORT_VERIFY_CC_PACK_TEST_FIXTURE_H_
