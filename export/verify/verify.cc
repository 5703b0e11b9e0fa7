#include "export/verify/verify.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "export/pack/pack.h"
#include "ledger/hash/hash.h"
#include "ledger/merkle/merkle.h"
#include "ledger/note/note.h"
#include "ledger/receipt/entry.h"

namespace ledger::verify {
namespace {

// The pack is read once, in archive order, and never extracted: small files
// are kept in memory, entries.jsonl and proofs.jsonl are checked as they
// stream out of the archive, in chunks of whole lines on worker threads,
// and every file is hashed on the way. A file that comes before what it
// needs (a pack whose names are not in the order the exporter writes them)
// is spilled to a private temporary file and checked after the archive.
constexpr size_t kSmallFileBytes = size_t{1} << 20;
constexpr size_t kChunkBytes = size_t{1} << 18;
// A leaf holds a receipt of at most 16 KiB; a proof line, 64 hashes.
constexpr size_t kMaxLineBytes = size_t{1} << 20;

size_t MaxInflight() { return 2 * std::max(2u, std::thread::hardware_concurrency()) + 2; }

// A failure found while checking entries and proofs. The one reported is
// the first in line order and, within a line, in the order a single pass
// would meet them (the stage).
struct Failure {
  enum Stage { kDecode = 0, kMissingProof, kOrder, kTreeSize, kProof, kLinks, kScope, kProject };
  uint64_t line;
  int stage;
  std::string file;
  int64_t seq;
  std::string message;
  bool operator<(const Failure& o) const { return std::tie(line, stage) < std::tie(o.line, o.stage); }
};

void KeepFirst(std::optional<Failure>* first, std::optional<Failure> f) {
  if (f && (!*first || *f < **first)) *first = std::move(f);
}

// Whole lines out of a file's pieces, a chunk of about kChunkBytes at a
// time. Lines are split at "\n"; a last line without one is a line.
class LineChunker {
 public:
  // Appends a piece; calls emit(chunk, lines) for each whole chunk.
  // False if a line grows beyond kMaxLineBytes.
  template <typename Emit>
  bool Add(std::string_view piece, Emit emit) {
    buf_.append(piece);
    if (buf_.size() < kChunkBytes) return true;
    size_t cut = buf_.rfind('\n');
    if (cut == std::string::npos) return buf_.size() <= kMaxLineBytes;
    std::string rest = buf_.substr(cut + 1);
    buf_.resize(cut + 1);
    Hand(emit);
    buf_ = std::move(rest);
    return true;
  }
  template <typename Emit>
  void Finish(Emit emit) {
    if (!buf_.empty()) Hand(emit);
  }

 private:
  template <typename Emit>
  void Hand(Emit& emit) {
    size_t lines = 0;
    for (const char* at = buf_.data(); (at = static_cast<const char*>(std::memchr(at, '\n', buf_.data() + buf_.size() - at))) != nullptr; ++at) {
      ++lines;
    }
    if (buf_.back() != '\n') ++lines;
    emit(std::move(buf_), lines);
    buf_ = std::string();
  }
  std::string buf_;
};

// Calls fn(line) for each line of a chunk.
template <typename Fn>
void ForEachLine(std::string_view chunk, Fn fn) {
  size_t at = 0;
  while (at < chunk.size()) {
    size_t nl = chunk.find('\n', at);
    if (nl == std::string_view::npos) nl = chunk.size();
    fn(chunk.substr(at, nl - at));
    at = nl + 1;
  }
}

// What the proof pass needs of each entry line, kept in a temporary file
// between the two passes so that memory does not grow with the pack.
struct Record {
  enum Flags : uint8_t { kParsed = 1, kSameTeam = 2, kSameRun = 4 };
  int64_t tail_seq;  // the seq at the end of the leaf, -1 if none
  hash::Hash leaf_hash;
  uint64_t seq;
  int64_t logged_at_us;
  uint64_t run_prev_plus_one;  // 0: none
  uint8_t flags;
};

// Reads proof lines: the exporter's exact form
// {"seq":N,"leaf_hash":"<hex>","inclusion":["<hex>",...]} fast, reusing the
// hashes the line before spelled the same way (neighbours share most of
// their path), anything else through the general JSON parser.
class ProofLineParser {
 public:
  // False if `line` is not a proof line. `line` MUST stay valid until the
  // next call.
  bool Parse(std::string_view line, int64_t* seq, std::string_view* leaf_hash,
             std::vector<hash::Hash>* path) {
    if (Fast(line, seq, leaf_hash, path)) return true;
    hex_.clear();
    path->clear();
    nlohmann::json proof = nlohmann::json::parse(line, nullptr, false);
    if (proof.is_discarded() || !proof.is_object() || !proof.contains("seq") ||
        !proof["seq"].is_number_unsigned() || !proof.contains("leaf_hash") ||
        !proof["leaf_hash"].is_string() || !proof.contains("inclusion") ||
        !proof["inclusion"].is_array() || proof.size() != 3) {
      return false;
    }
    *seq = proof["seq"].get<int64_t>();
    slow_leaf_hash_ = proof["leaf_hash"].get<std::string>();
    *leaf_hash = slow_leaf_hash_;
    for (const auto& h : proof["inclusion"]) {
      if (!h.is_string()) return false;
      auto parsed = hash::ParseHex(h.get<std::string>());
      if (!parsed.ok()) return false;
      path->push_back(*parsed);
    }
    return true;
  }

 private:
  bool Fast(std::string_view s, int64_t* seq, std::string_view* leaf_hash, std::vector<hash::Hash>* path) {
    constexpr std::string_view kSeq = "{\"seq\":", kLeaf = ",\"leaf_hash\":\"", kInc = "\",\"inclusion\":[";
    if (s.substr(0, kSeq.size()) != kSeq) return false;
    s.remove_prefix(kSeq.size());
    size_t digits = 0;
    int64_t v = 0;
    while (digits < s.size() && digits < 16 && s[digits] >= '0' && s[digits] <= '9') {
      v = v * 10 + (s[digits] - '0');
      ++digits;
    }
    if (digits == 0 || (s[0] == '0' && digits > 1) || s.substr(digits, kLeaf.size()) != kLeaf ||
        s.size() < digits + kLeaf.size() + 64 + kInc.size() ||
        s.substr(digits + kLeaf.size() + 64, kInc.size()) != kInc) {
      return false;
    }
    *seq = v;
    *leaf_hash = s.substr(digits + kLeaf.size(), 64);
    s.remove_prefix(digits + kLeaf.size() + 64 + kInc.size());
    size_t n = 0;
    while (!s.empty() && s[0] == '"' && s.size() >= 66 && s[65] == '"') {
      std::string_view hex = s.substr(1, 64);
      if (n < hex_.size() && hex_[n] == hex) {
        // Spelled as the line before did: the same, already checked, hash.
      } else {
        auto h = hash::ParseHex(hex);
        if (!h.ok()) return Reset(path);
        if (n < hex_.size()) {
          hex_[n] = hex;
          (*path)[n] = *h;
        } else {
          hex_.push_back(hex);
          path->push_back(*h);
        }
      }
      ++n;
      s.remove_prefix(66);
      if (!s.empty() && s[0] == ',' && s.size() > 1 && s[1] == '"') s.remove_prefix(1);
    }
    if (s != "]}") return Reset(path);
    hex_.resize(n);
    path->resize(n);
    return true;
  }
  bool Reset(std::vector<hash::Hash>* path) {
    hex_.clear();
    path->clear();
    return false;
  }

  std::vector<std::string_view> hex_;  // the previous line's hashes as spelled
  std::string slow_leaf_hash_;
};

// The scope of a pack as its manifest says.
struct Scope {
  std::string kind, team, run_id;
  int64_t from_us = 0, to_us = 0;
  uint64_t from_seq = 0, to_seq = 0;
};

// The first entry pass: decodes each line (on worker threads), then, in
// order, checks seq order, the tree size and prev links, projects the
// entry into outcomes and records what the proof pass needs.
class EntryPass {
 public:
  EntryPass(uint64_t tree_size, pack::Outcomes* outcomes, std::ofstream* records)
      : tree_size_(tree_size), outcomes_(outcomes), records_(records) {}

  void AddChunk(std::string chunk, size_t lines) {
    uint64_t first = next_line_;
    next_line_ += lines;
    if (failure_) return;
    inflight_.push_back(std::async(std::launch::async, Decode, std::move(chunk), first));
    while (inflight_.size() > MaxInflight()) TakeOldest();
  }
  // Waits for every chunk.
  void Finish() {
    while (!inflight_.empty()) TakeOldest();
  }
  // A line too long to be an entry.
  void Overlong() {
    Finish();
    KeepFirst(&failure_, Failure{next_line_, Failure::kDecode, pack::kEntries, -1,
                                 absl::StrCat("a line longer than ", kMaxLineBytes, " bytes")});
  }

  const std::optional<Failure>& failure() const { return failure_; }
  uint64_t entries() const { return entries_; }
  std::optional<uint64_t> last_seq() const { return last_seq_; }
  const std::string& first_team() const { return first_team_; }
  const std::string& first_run() const { return first_run_; }

 private:
  struct Decoded {
    uint64_t first_line;
    std::vector<absl::StatusOr<receipt::Entry>> entries;
    std::vector<hash::Hash> hashes;
    std::vector<int64_t> tail_seqs;
  };

  static Decoded Decode(std::string chunk, uint64_t first_line) {
    Decoded d{first_line, {}, {}, {}};
    ForEachLine(chunk, [&](std::string_view leaf) {
      d.hashes.push_back(hash::LeafHash(leaf));
      auto tail = receipt::SeqOf(leaf);
      d.tail_seqs.push_back(tail.ok() ? static_cast<int64_t>(*tail) : -1);
      d.entries.push_back(receipt::ParseLeaf(leaf));
    });
    return d;
  }

  void TakeOldest() {
    Decoded d = inflight_.front().get();
    inflight_.pop_front();
    for (size_t k = 0; k < d.entries.size() && !failure_; ++k) Check(d.first_line + k, d, k);
  }

  void Check(uint64_t line, Decoded& d, size_t k) {
    Record rec{d.tail_seqs[k], d.hashes[k], 0, 0, 0, 0};
    auto fail = [&](int stage, int64_t seq, std::string message) {
      failure_ = Failure{line, stage, pack::kEntries, seq, std::move(message)};
    };
    absl::StatusOr<receipt::Entry>& entry = d.entries[k];
    if (!entry.ok()) {
      fail(Failure::kDecode, last_seq_ ? static_cast<int64_t>(*last_seq_ + 1) : -1,
           std::string(entry.status().message()));
    } else {
      int64_t seq = static_cast<int64_t>(entry->seq);
      if (last_seq_.has_value() && entry->seq <= *last_seq_) {
        fail(Failure::kOrder, seq, absl::StrCat("seq after ", *last_seq_, " is not ascending"));
      } else if (entry->seq >= tree_size_) {
        fail(Failure::kTreeSize, seq, absl::StrCat("not in the checkpoint's tree of size ", tree_size_));
      } else if (last_seq_.has_value() && entry->seq == *last_seq_ + 1 && entry->prev != last_hash_) {
        fail(Failure::kLinks, seq,
             absl::StrCat("prev expected ", hash::Hex(last_hash_), ", found ", hash::Hex(entry->prev)));
      }
      if (entries_ == 0) {
        first_team_ = entry->receipt.team();
        first_run_ = entry->receipt.run_id();
      }
      rec.seq = entry->seq;
      rec.logged_at_us = entry->logged_at_us;
      rec.run_prev_plus_one = entry->run_prev ? *entry->run_prev + 1 : 0;
      rec.flags = Record::kParsed | (entry->receipt.team() == first_team_ ? Record::kSameTeam : 0) |
                  (entry->receipt.run_id() == first_run_ ? Record::kSameRun : 0);
    }
    // The failing line's record too: its proof is checked, and a proof
    // failure comes before a link failure on the same line.
    records_->write(reinterpret_cast<const char*>(&rec), sizeof rec);
    if (failure_) return;
    last_seq_ = entry->seq;
    last_hash_ = d.hashes[k];
    int64_t seq = static_cast<int64_t>(entry->seq);
    if (auto st = outcomes_->Add(*std::move(entry)); !st.ok()) {
      fail(Failure::kProject, seq, std::string(st.message()));
      return;
    }
    ++entries_;
  }

  const uint64_t tree_size_;
  pack::Outcomes* outcomes_;
  std::ofstream* records_;
  std::deque<std::future<Decoded>> inflight_;
  uint64_t next_line_ = 0, entries_ = 0;
  std::optional<uint64_t> last_seq_;
  hash::Hash last_hash_{};
  std::string first_team_, first_run_;
  std::optional<Failure> failure_;
};

// The second pass: each proof line against its entry's record, its
// inclusion proof against the checkpoint, and the scope checks, chunks on
// worker threads.
class ProofPass {
 public:
  ProofPass(const note::Checkpoint& cp, const Scope& scope, const EntryPass& entries,
            const std::string& records_path)
      : cp_(cp), scope_(scope), first_team_(entries.first_team()), first_run_(entries.first_run()),
        records_(records_path, std::ios::binary) {}

  void AddChunk(std::string chunk, size_t lines) {
    uint64_t first = next_line_;
    next_line_ += lines;
    if (failure_ || exhausted_) {
      if (exhausted_) more_proofs_ = true;
      return;
    }
    std::vector<Record> recs(lines);
    records_.read(reinterpret_cast<char*>(recs.data()), static_cast<std::streamsize>(lines * sizeof(Record)));
    size_t got = static_cast<size_t>(records_.gcount()) / sizeof(Record);
    if (got < lines) {
      exhausted_ = true;
      more_proofs_ = true;
      recs.resize(got);
    }
    std::optional<Record> before = previous_;
    if (!recs.empty()) previous_ = recs.back();
    inflight_.push_back(std::async(std::launch::async, &ProofPass::Check, this, std::move(chunk), first,
                                   std::move(recs), before));
    while (inflight_.size() > MaxInflight()) TakeOldest();
  }
  // Waits for every chunk; then, if entries remain, the first without a
  // proof fails.
  void Finish() {
    while (!inflight_.empty()) TakeOldest();
    Record rec;
    if (!failure_ && !exhausted_ &&
        records_.read(reinterpret_cast<char*>(&rec), sizeof rec).gcount() == sizeof rec) {
      failure_ = Failure{next_line_, Failure::kMissingProof, pack::kProofs, rec.tail_seq, "fewer proofs than entries"};
    }
  }
  void Overlong() {
    Finish();
    KeepFirst(&failure_, Failure{next_line_, Failure::kProof, pack::kProofs, -1,
                                 absl::StrCat("a line longer than ", kMaxLineBytes, " bytes")});
  }

  const std::optional<Failure>& failure() const { return failure_; }
  bool more_proofs() const { return more_proofs_; }

 private:
  void TakeOldest() {
    KeepFirst(&failure_, inflight_.front().get());
    inflight_.pop_front();
  }

  std::optional<Failure> Check(std::string chunk, uint64_t first_line, std::vector<Record> recs,
                               std::optional<Record> before) const {
    merkle::InclusionVerifier inclusion(cp_.size, cp_.root);
    ProofLineParser parser;
    std::vector<hash::Hash> path;
    std::optional<Failure> failure;
    size_t k = 0;
    ForEachLine(chunk, [&](std::string_view line) {
      if (failure || k >= recs.size()) return;
      const Record& rec = recs[k];
      const Record* prev = k > 0 ? &recs[k - 1] : before ? &*before : nullptr;
      uint64_t at = first_line + k++;
      auto fail = [&](int stage, std::string message) {
        bool scope = stage == Failure::kScope;
        failure = Failure{at, stage, scope ? pack::kEntries : pack::kProofs,
                          scope ? static_cast<int64_t>(rec.seq) : rec.tail_seq, std::move(message)};
      };
      int64_t proof_seq = -1;
      std::string_view proof_leaf_hash;
      if (rec.tail_seq < 0 || !parser.Parse(line, &proof_seq, &proof_leaf_hash, &path) ||
          proof_seq != rec.tail_seq) {
        return fail(Failure::kProof, "not the proof line of this entry");
      }
      std::string leaf_hex = hash::Hex(rec.leaf_hash);
      if (proof_leaf_hash != leaf_hex) {
        return fail(Failure::kProof, absl::StrCat("leaf_hash expected ", leaf_hex, ", found ", std::string(proof_leaf_hash)));
      }
      if (static_cast<uint64_t>(rec.tail_seq) < cp_.size) {
        if (auto st = inclusion.Verify(static_cast<uint64_t>(rec.tail_seq), rec.leaf_hash, path); !st.ok()) {
          return fail(Failure::kProof, std::string(st.message()));
        }
      }
      if (!(rec.flags & Record::kParsed)) return;
      std::optional<uint64_t> last_seq;
      if (prev != nullptr) last_seq = prev->seq;
      std::string scope_failure = ScopeFailure(rec, last_seq);
      if (!scope_failure.empty()) fail(Failure::kScope, std::move(scope_failure));
    });
    return failure;
  }

  // Why an entry is outside the pack's scope, or "".
  std::string ScopeFailure(const Record& rec, std::optional<uint64_t> last_seq) const {
    bool team = (rec.flags & Record::kSameTeam) && first_team_ == scope_.team;
    bool run = (rec.flags & Record::kSameRun) && first_run_ == scope_.run_id;
    std::optional<uint64_t> run_prev;
    if (rec.run_prev_plus_one > 0) run_prev = rec.run_prev_plus_one - 1;
    if (scope_.kind == "run") {
      if (!team || !run) return "not an entry of the pack's run";
      if (run_prev != last_seq) {
        return absl::StrCat("run_prev expected ",
                            last_seq ? std::to_string(*last_seq) : "none (the run's first entry)", ", found ",
                            run_prev ? std::to_string(*run_prev) : "none");
      }
    } else if (scope_.kind == "team") {
      if (!team || rec.logged_at_us < scope_.from_us || rec.logged_at_us >= scope_.to_us) {
        return "not an entry of the pack's team and time window";
      }
    } else if (rec.seq != (last_seq ? *last_seq + 1 : scope_.from_seq)) {
      return absl::StrCat("seq expected ", last_seq ? *last_seq + 1 : scope_.from_seq, " (the range has a gap)");
    }
    return "";
  }

  const note::Checkpoint cp_;
  const Scope scope_;
  const std::string first_team_, first_run_;
  std::ifstream records_;
  std::deque<std::future<std::optional<Failure>>> inflight_;
  std::optional<Record> previous_;
  uint64_t next_line_ = 0;
  bool exhausted_ = false, more_proofs_ = false;
  std::optional<Failure> failure_;
};

// A checkpoint's body, read before its signature can be checked (the key
// may come later in the archive); it is verified before anything that
// used it is reported.
std::optional<note::Checkpoint> UncheckedCheckpoint(std::string_view signed_note) {
  size_t end = signed_note.find("\n\n");
  if (end == std::string_view::npos) return std::nullopt;
  auto cp = note::ParseCheckpoint(signed_note.substr(0, end + 1));
  if (!cp.ok()) return std::nullopt;
  return *cp;
}

std::optional<Scope> ScopeOf(const std::string& manifest_text) {
  nlohmann::json m = nlohmann::json::parse(manifest_text, nullptr, false);
  if (m.is_discarded() || !m.is_object() || !m.contains("scope") || !m["scope"].is_object()) return std::nullopt;
  const nlohmann::json& s = m["scope"];
  Scope scope;
  try {
    scope.kind = s.value("kind", "");
    scope.team = s.value("team", "");
    scope.run_id = s.value("run_id", "");
    scope.from_us = s.value("from_us", int64_t{0});
    scope.to_us = s.value("to_us", int64_t{0});
    scope.from_seq = s.value("from_seq", uint64_t{0});
    scope.to_seq = s.value("to_seq", uint64_t{0});
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  if (scope.kind != "run" && scope.kind != "team" && scope.kind != "seq") return std::nullopt;
  return scope;
}

// A message as an auditor's terminal and JSON may show it: a hostile pack
// chooses some of its text (names, hashes), so every byte outside printable
// ASCII, and the backslash, is written \xNN.
std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out += c;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

Result Fail(Result r, std::string file, int64_t seq, std::string message) {
  r.ok = false;
  r.file = Printable(file);
  r.seq = seq;
  r.message = Printable(message);
  return r;
}

}  // namespace

nlohmann::json Result::Json() const {
  nlohmann::json j = {{"ok", ok},
                      {"trusted_key_in_pack", trusted_key_in_pack},
                      {"origin", origin},
                      {"tree_size", tree_size},
                      {"entries", entries}};
  if (since_size.has_value()) j["consistent_with_size"] = *since_size;
  if (!scope.empty()) j["scope"] = nlohmann::json::parse(scope, nullptr, false);
  if (!ok) {
    j["failure"] = {{"file", file}, {"message", message}};
    if (seq >= 0) j["failure"]["seq"] = seq;
  }
  return j;
}

std::string Result::Summary() const {
  std::string out;
  if (trusted_key_in_pack) {
    out += "WARNING: no --vkey given; the key inside the pack was trusted. Compare it with the "
           "ledger operator's published key.\n";
  }
  if (ok) {
    absl::StrAppend(&out, "OK: ", entries, " entries of ", scope, " verified against the checkpoint of ",
                    origin, " at tree size ", tree_size, ".\n");
    if (since_size.has_value()) {
      absl::StrAppend(&out, "The checkpoint is consistent with the earlier one at size ", *since_size,
                      ".\n");
    }
  } else {
    absl::StrAppend(&out, "FAILED: ", file, seq >= 0 ? absl::StrCat(" seq ", seq) : "", ": ",
                    message, "\n");
  }
  return out;
}

absl::StatusOr<Result> VerifyPack(const std::string& pack_path, const Options& options) {
  Result r;
  pack::ScratchDir dir("ledger-verify");
  if (dir.path().empty()) return absl::UnavailableError("verify: cannot create a temporary directory");
  auto reader = pack::PackReader::Open(pack_path, pack::Limits());
  if (!reader.ok()) return Fail(r, "archive", -1, std::string(reader.status().message()));

  // One pass over the archive.
  std::map<std::string, std::string> small, digests, spilled;
  std::optional<note::Checkpoint> unchecked_cp;
  std::optional<Scope> scope;
  pack::Outcomes outcomes;
  const std::string records_path = dir.path() + "/records";
  std::optional<EntryPass> entry_pass;
  std::optional<ProofPass> proof_pass;
  // The outcomes' digest, recomputed while the proofs are checked.
  std::future<absl::StatusOr<std::string>> outcomes_digest;
  // Checks entries.jsonl or proofs.jsonl from `next` (pieces; empty at the end).
  auto check = [&](const std::string& name, auto next) -> absl::Status {
    LineChunker chunker;
    if (name == pack::kEntries) {
      std::ofstream records(records_path, std::ios::binary | std::ios::trunc);
      entry_pass.emplace(unchecked_cp->size, &outcomes, &records);
      auto emit = [&](std::string chunk, size_t lines) { entry_pass->AddChunk(std::move(chunk), lines); };
      bool fits = true;
      while (true) {
        auto piece = next();
        if (!piece.ok()) {
          entry_pass->Finish();
          return piece.status();
        }
        if (piece->empty()) break;
        if (fits && !chunker.Add(*piece, emit)) fits = false;
      }
      if (fits) {
        chunker.Finish(emit);
        entry_pass->Finish();
      } else {
        entry_pass->Overlong();
      }
      records.close();
      if (!records) return absl::UnavailableError("verify: cannot write a temporary file");
      outcomes_digest = std::async(std::launch::async, [&outcomes]() -> absl::StatusOr<std::string> {
        hash::Sha256Stream recomputed;
        if (auto s = outcomes.Write([&](std::string_view piece) { recomputed.Update(piece); }); !s.ok()) return s;
        return hash::Hex(recomputed.Final());
      });
      return absl::OkStatus();
    }
    proof_pass.emplace(*unchecked_cp, *scope, *entry_pass, records_path);
    auto emit = [&](std::string chunk, size_t lines) { proof_pass->AddChunk(std::move(chunk), lines); };
    bool fits = true;
    while (true) {
      auto piece = next();
      if (!piece.ok()) {
        proof_pass->Finish();
        return piece.status();
      }
      if (piece->empty()) break;
      if (fits && !chunker.Add(*piece, emit)) fits = false;
    }
    if (fits) {
      chunker.Finish(emit);
      proof_pass->Finish();
    } else {
      proof_pass->Overlong();
    }
    return absl::OkStatus();
  };
  auto ready = [&](const std::string& name) {
    if (name == pack::kEntries) return unchecked_cp.has_value();
    return entry_pass.has_value() && scope.has_value();
  };
  while (true) {
    auto name = (*reader)->Next();
    if (!name.ok()) return Fail(r, "archive", -1, std::string(name.status().message()));
    if (!name->has_value()) break;
    const std::string file = **name;
    hash::Sha256Stream sha;
    auto next = [&]() -> absl::StatusOr<std::string_view> {
      auto piece = (*reader)->Read();
      if (piece.ok()) sha.Update(*piece);
      return piece;
    };
    absl::Status read;
    if (file == pack::kEntries || file == pack::kProofs) {
      if (ready(file)) {
        read = check(file, next);
      } else {
        std::string path = dir.path() + "/" + file;
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        while (true) {
          auto piece = next();
          if (!piece.ok() || piece->empty()) {
            read = piece.status();
            break;
          }
          out.write(piece->data(), static_cast<std::streamsize>(piece->size()));
        }
        out.close();
        if (!out) return absl::UnavailableError("verify: cannot write a temporary file");
        spilled[file] = path;
      }
    } else if (file == pack::kOutcomes || file == pack::kReport) {
      while (true) {
        auto piece = next();
        if (!piece.ok() || piece->empty()) {
          read = piece.status();
          break;
        }
      }
    } else {
      std::string& content = small[file];
      while (true) {
        auto piece = next();
        if (!piece.ok() || piece->empty()) {
          read = piece.status();
          break;
        }
        content.append(*piece);
        if (content.size() > kSmallFileBytes) {
          return Fail(r, file, -1, absl::StrCat("larger than ", kSmallFileBytes, " bytes"));
        }
      }
      if (file == pack::kCheckpoint) unchecked_cp = UncheckedCheckpoint(content);
      if (file == pack::kManifest) scope = ScopeOf(content);
    }
    if (!read.ok()) return Fail(r, "archive", -1, std::string(read.message()));
    digests[file] = hash::Hex(sha.Final());
  }
  // Files that came before what they need.
  for (const char* name : {pack::kEntries, pack::kProofs}) {
    if (!spilled.count(name) || !ready(name)) continue;
    std::ifstream in(spilled[name], std::ios::binary);
    std::string buf(1 << 18, '\0');
    auto next = [&]() -> absl::StatusOr<std::string_view> {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      return std::string_view(buf.data(), static_cast<size_t>(in.gcount()));
    };
    if (auto s = check(name, next); !s.ok()) return s;
  }

  for (const char* name : {pack::kCheckpoint, pack::kEntries, pack::kVkey, pack::kManifest,
                           pack::kManifestSig, pack::kOutcomes, pack::kProofs, pack::kReport}) {
    if (!digests.count(name)) return Fail(r, name, -1, "missing");
  }

  // The key.
  std::string pack_vkey = small[pack::kVkey];
  while (!pack_vkey.empty() && pack_vkey.back() == '\n') pack_vkey.pop_back();
  std::string vkey = options.vkey;
  if (vkey.empty()) {
    vkey = pack_vkey;
    r.trusted_key_in_pack = true;
  } else if (vkey != pack_vkey) {
    return Fail(r, pack::kVkey, -1,
                absl::StrCat("expected the given key ", vkey, ", found ", pack_vkey));
  }
  auto verifier = note::Verifier::Parse(vkey);
  if (!verifier.ok()) return Fail(r, pack::kVkey, -1, std::string(verifier.status().message()));

  // The manifest and every file's digest.
  const std::string& manifest_text = small[pack::kManifest];
  auto signed_digest = verifier->Open(small[pack::kManifestSig]);
  if (!signed_digest.ok()) {
    return Fail(r, pack::kManifestSig, -1, std::string(signed_digest.status().message()));
  }
  std::string digest = hash::Hex(hash::Sha256(manifest_text)) + "\n";
  if (*signed_digest != digest) {
    return Fail(r, pack::kManifest, -1,
                absl::StrCat("SHA-256 is ", digest.substr(0, 64), ", the signature covers ",
                             signed_digest->substr(0, 64)));
  }
  nlohmann::json manifest = nlohmann::json::parse(manifest_text, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("files") ||
      !manifest["files"].is_object() || manifest.value("format", 0) != pack::kFormatVersion) {
    return Fail(r, pack::kManifest, -1, "not a format 1 manifest");
  }
  r.origin = manifest.value("origin", "");
  r.tree_size = manifest.value("tree_size", uint64_t{0});
  r.scope = manifest["scope"].dump();
  for (const auto& [name, sha] : digests) {
    if (name == pack::kManifest || name == pack::kManifestSig) continue;
    if (!manifest["files"].contains(name)) return Fail(r, name, -1, "not listed in the manifest");
    const nlohmann::json& listed = manifest["files"][name];
    std::string want = listed.is_string() ? listed.get<std::string>() : "";
    if (sha != want) return Fail(r, name, -1, absl::StrCat("SHA-256 expected ", want, ", found ", sha));
  }
  for (const auto& [name, sha] : manifest["files"].items()) {
    if (!digests.count(name)) return Fail(r, name, -1, "listed in the manifest but missing");
  }

  // The checkpoint.
  auto cp_text = verifier->Open(small[pack::kCheckpoint]);
  if (!cp_text.ok()) return Fail(r, pack::kCheckpoint, -1, std::string(cp_text.status().message()));
  auto cp = note::ParseCheckpoint(*cp_text);
  if (!cp.ok()) return Fail(r, pack::kCheckpoint, -1, std::string(cp.status().message()));
  if (cp->origin != r.origin || cp->origin != verifier->name()) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("origin '", cp->origin, "', manifest and key say '", r.origin, "'"));
  }
  if (cp->size != r.tree_size || hash::Hex(cp->root) != manifest.value("root", "")) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("size ", cp->size, " root ", hash::Hex(cp->root), ", the manifest says size ",
                             r.tree_size, " root ", manifest.value("root", "")));
  }
  // What the entries were checked against, before the signature was, is
  // what the signature covers.
  if (!unchecked_cp || unchecked_cp->size != cp->size || unchecked_cp->root != cp->root) {
    return Fail(r, pack::kCheckpoint, -1, "its text is not the one its signature covers");
  }

  // The consistency proof from an earlier checkpoint, when there is one.
  if (digests.count(pack::kConsistency)) {
    nlohmann::json c = nlohmann::json::parse(small[pack::kConsistency], nullptr, false);
    if (c.is_discarded() || !c.is_object() || !c.contains("old_checkpoint") ||
        !c["old_checkpoint"].is_string() || !c.contains("proof") || !c["proof"].is_array()) {
      return Fail(r, pack::kConsistency, -1, "not {\"old_checkpoint\":...,\"proof\":[...]}");
    }
    auto old_text = verifier->Open(c["old_checkpoint"].get<std::string>());
    if (!old_text.ok()) {
      return Fail(r, pack::kConsistency, -1,
                  absl::StrCat("old_checkpoint: ", old_text.status().message()));
    }
    auto old = note::ParseCheckpoint(*old_text);
    if (!old.ok() || old->origin != cp->origin) {
      return Fail(r, pack::kConsistency, -1, "old_checkpoint: not a checkpoint of this log");
    }
    std::vector<hash::Hash> proof;
    for (const auto& h : c["proof"]) {
      auto parsed = h.is_string() ? hash::ParseHex(h.get<std::string>())
                                  : absl::StatusOr<hash::Hash>(absl::InvalidArgumentError("hash"));
      if (!parsed.ok()) return Fail(r, pack::kConsistency, -1, "proof: not a list of hex hashes");
      proof.push_back(*parsed);
    }
    if (auto s = merkle::VerifyConsistency(old->size, cp->size, old->root, cp->root, proof); !s.ok()) {
      return Fail(r, pack::kConsistency, -1, std::string(s.message()));
    }
    r.since_size = old->size;
  }

  // Entries and proofs.
  if (!scope) {
    return Fail(r, pack::kManifest, -1,
                absl::StrCat("unknown scope kind '", manifest["scope"].is_object() ? manifest["scope"].value("kind", "") : "", "'"));
  }
  if (!entry_pass || !proof_pass) return absl::InternalError("verify: entries or proofs were not checked");
  std::optional<Failure> first = entry_pass->failure();
  KeepFirst(&first, proof_pass->failure());
  if (first) return Fail(r, first->file, first->seq, first->message);
  if (proof_pass->more_proofs()) return Fail(r, pack::kProofs, -1, "more proofs than entries");
  std::optional<uint64_t> last_seq = entry_pass->last_seq();
  if (scope->kind == "seq" && (!last_seq || *last_seq + 1 != scope->to_seq)) {
    return Fail(r, pack::kEntries, -1, "the seq range ends early");
  }
  r.entries = entry_pass->entries();
  if (!manifest.contains("counts") || !manifest["counts"].is_object() ||
      r.entries != manifest["counts"].value("entries", uint64_t{0})) {
    return Fail(r, pack::kManifest, -1,
                absl::StrCat("counts.entries says ",
                             manifest.contains("counts") && manifest["counts"].is_object()
                                 ? manifest["counts"].value("entries", uint64_t{0})
                                 : uint64_t{0},
                             ", the pack has ", r.entries));
  }

  // Outcomes, compared by digest, so that neither document is held in memory.
  if (!outcomes_digest.valid()) return absl::InternalError("verify: outcomes were not recomputed");
  auto recomputed = outcomes_digest.get();
  if (!recomputed.ok()) return Fail(r, pack::kOutcomes, -1, std::string(recomputed.status().message()));
  if (*recomputed != digests[pack::kOutcomes]) {
    return Fail(r, pack::kOutcomes, -1, "differs from the outcomes recomputed from the entries");
  }
  r.ok = true;
  return r;
}

}  // namespace ledger::verify
