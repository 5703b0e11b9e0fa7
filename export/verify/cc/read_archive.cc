// The first step of VerifyPack: the pack read once, in archive order, and
// never extracted (steps.h, ReadArchive), and the checks that run as it
// streams (StreamedChecks).
#include <algorithm>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "export/pack/pack.h"
#include "export/verify/cc/internal/digest_thread.h"
#include "export/verify/cc/internal/file_checks.h"
#include "export/verify/cc/steps.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/entry.h"
#include "util/text/progress.h"

namespace ledger::verify {

StreamedChecks::StreamedChecks() : dir_("ledger-verify"), stream_(dir_.path(), &outcomes_) {}

absl::Status StreamedChecks::Entries(uint64_t tree_size, NextPiece next) {
  if (auto s = stream_.Entries(tree_size, next); !s.ok()) return s;
  outcomes_digest_ = std::async(std::launch::async, [&outcomes = outcomes_]() -> absl::StatusOr<std::string> {
    // Hashed on a thread of its own while the next pieces are written:
    // after the entries this is the longest of the verifier's threads.
    DigestThread recomputed;
    if (auto s = outcomes.Write([&](std::string_view piece) { recomputed.Update(piece); }); !s.ok()) return s;
    return hash::Hex(recomputed.Final());
  });
  return absl::OkStatus();
}

absl::Status StreamedChecks::Proofs(const std::string& name, const note::Checkpoint& cp, const Scope& scope,
                                    const std::string& manifest_text, const std::string& checkpoint_note,
                                    const std::string& time_note, NextPiece next) {
  if (outcomes_digest_.valid()) {
    report_digest_ = std::async(std::launch::async,
                                [&outcomes = outcomes_, outcomes_digest = outcomes_digest_, manifest = manifest_text,
                                 note = checkpoint_note, time = time_note]() -> absl::StatusOr<std::string> {
                                  if (!outcomes_digest.get().ok()) return outcomes_digest.get().status();
                                  hash::Sha256Stream rebuilt;
                                  auto s = RebuildReport(manifest, outcomes, note, time,
                                                         [&](std::string_view piece) { rebuilt.Update(piece); });
                                  if (!s.ok()) return s;
                                  return hash::Hex(rebuilt.Final());
                                });
  }
  if (name == pack::kMultiproof) return stream_.Multiproof(cp, scope, next);
  return stream_.Proofs(cp, scope, next);
}

const std::string* Files::Find(const std::string& name) const {
  auto found = small.find(name);
  return found == small.end() ? nullptr : &found->second;
}

namespace {

// A small file is kept in memory; one larger is refused.
constexpr size_t kSmallFileBytes = size_t{1} << 20;  // 1 MiB

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

// Whether what `name` (entries.jsonl, proofs.jsonl or multiproof.txt) is
// checked against
// was read: the checkpoint for the entries; the entries and the manifest's
// scope for the proofs.
// In a pack of format 8 the multiproof walks redactions.jsonl's lines too,
// which come after it in the archive: it is checked once the archive is
// read (`at_end`).
bool Ready(const std::string& name, const Unchecked& unchecked, const StreamCheck& stream, bool at_end) {
  if (name == pack::kEntries) return unchecked.cp.has_value();
  if (name == pack::kMultiproof && !at_end && unchecked.manifest.ok() && unchecked.manifest->format >= 8) return false;
  return stream.entries_checked() && unchecked.scope() != nullptr;
}

// The seq, leaf hash and line number of each line of redactions.jsonl that
// has a seq, in file order (a line without one is refused by the
// redactions' check).
std::vector<StreamCheck::Redaction> RedactionSeqs(const std::string* file) {
  std::vector<StreamCheck::Redaction> out;
  if (file == nullptr) return out;
  std::string_view rest = *file;
  for (uint64_t n = 1; !rest.empty(); ++n) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (auto seq = receipt::SeqOf(line); seq.ok()) out.push_back({*seq, hash::LeafHash(line), n});
  }
  return out;
}

// entries.jsonl, proofs.jsonl or multiproof.txt (`name`), `next` giving its
// pieces, checked
// against what was read before it; `name` MUST be Ready.
// Each line of entries.jsonl read is told to `progress`, when there is one.
absl::Status CheckStreamed(const std::string& name, NextPiece read, const Files& files, const Unchecked& unchecked,
                           StreamedChecks& streamed, text::ProgressMeter* progress) {
  auto counted = [&]() -> absl::StatusOr<std::string_view> {
    auto piece = read();
    if (piece.ok() && name == pack::kEntries) {
      progress->Add(text::Newlines(*piece));
    }
    return piece;
  };
  NextPiece next = progress != nullptr ? NextPiece(counted) : read;
  if (name == pack::kProofs || name == pack::kMultiproof) {
    if (name == pack::kMultiproof) {
      std::vector<StreamCheck::Redaction> extra = RedactionSeqs(files.Find(pack::kRedactions));
      // Format 9's retention entry, walked with them in seq order.
      for (StreamCheck::Redaction r : RedactionSeqs(files.Find(pack::kRetention))) {
        r.file = pack::kRetention;
        auto at = std::find_if(extra.begin(), extra.end(), [&](const auto& e) { return e.seq >= r.seq; });
        if (at == extra.end() || at->seq != r.seq) extra.insert(at, r);
      }
      streamed.SetRedactions(std::move(extra));
    }
    // The manifest and checkpoint are read by now; their texts are what
    // the checks that follow hold the report to.
    return streamed.Proofs(
        name, *unchecked.cp, *unchecked.scope(), files.small.at(pack::kManifest), files.small.at(pack::kCheckpoint),
        files.Find(pack::kCheckpointTime) ? *files.Find(pack::kCheckpointTime) : std::string(), next);
  }
  return streamed.Entries(unchecked.cp->size, next);
}

// Gives `take` every piece of a file up to its end: the status of reading it.
absl::Status ReadToEnd(NextPiece next, absl::FunctionRef<void(std::string_view)> take) {
  while (true) {
    auto piece = next();
    if (!piece.ok() || piece->empty()) return piece.status();
    take(*piece);
  }
}

// Appends a small file's pieces to `content`, stopping once it is larger
// than kSmallFileBytes: the status of reading it.
absl::Status ReadSmall(NextPiece next, std::string& content) {
  while (content.size() <= kSmallFileBytes) {
    auto piece = next();
    if (!piece.ok() || piece->empty()) return piece.status();
    content.append(*piece);
  }
  return absl::OkStatus();
}

// Writes a file's pieces to `path`: the status of reading it, or nullopt
// when `path` cannot be written.
std::optional<absl::Status> Spill(NextPiece next, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  absl::Status read = ReadToEnd(
      next, [&](std::string_view piece) { out.write(piece.data(), static_cast<std::streamsize>(piece.size())); });
  out.close();
  if (!out) return std::nullopt;
  return read;
}

// The file `name` of the archive, `next` giving its pieces, read into
// `archive`: a small file kept (the checkpoint and the manifest parsed,
// unchecked); entries and proofs checked as they stream, or written to the
// scratch directory and named in `spilled` when what they are checked
// against comes later; outcomes and the report only hashed (by `next`).
std::optional<Stop> ReadFile(const std::string& name, NextPiece next, Archive& archive,
                             std::map<std::string, std::string>& spilled, text::ProgressMeter* progress) {
  absl::Status read;
  if (name == pack::kEntries || name == pack::kProofs || name == pack::kMultiproof) {
    if (Ready(name, archive.unchecked, archive.streamed->stream(), /*at_end=*/false)) {
      read = CheckStreamed(name, next, archive.files, archive.unchecked, *archive.streamed, progress);
    } else {
      std::string path = archive.streamed->scratch_dir() + "/" + name;
      std::optional<absl::Status> spilled_read = Spill(next, path);
      if (!spilled_read) return absl::UnavailableError("verify: cannot write a temporary file");
      read = *spilled_read;
      spilled[name] = path;
    }
  } else if (name == pack::kOutcomes || name == pack::kReport) {
    read = ReadToEnd(next, [](std::string_view) {});
  } else {
    std::string& content = archive.files.small[name];
    read = ReadSmall(next, content);
    if (content.size() > kSmallFileBytes) return Fail(Result(), name, -1, "larger than 1 MiB");
    if (name == pack::kCheckpoint) archive.unchecked.cp = UncheckedCheckpoint(content);
    if (name == pack::kManifest) archive.unchecked.manifest = manifest::Parse(content);
  }
  if (!read.ok()) return Fail(Result(), "archive", -1, std::string(read.message()));
  return std::nullopt;
}

// The files written aside (`spilled`: name, path) because they came before
// what they are checked against, checked now that the archive is read: an
// error when one cannot be read.
absl::Status CheckSpilled(const std::map<std::string, std::string>& spilled, const Files& files,
                          const Unchecked& unchecked, StreamedChecks& streamed, text::ProgressMeter* progress) {
  for (const char* name : {pack::kEntries, pack::kProofs, pack::kMultiproof}) {
    auto path = spilled.find(name);
    if (path == spilled.end() || !Ready(name, unchecked, streamed.stream(), /*at_end=*/true)) continue;
    std::ifstream in(path->second, std::ios::binary);
    std::string buf(1 << 18, '\0');
    auto next = [&]() -> absl::StatusOr<std::string_view> {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      return std::string_view(buf.data(), static_cast<size_t>(in.gcount()));
    };
    if (auto s = CheckStreamed(name, next, files, unchecked, streamed, progress); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

Step<Archive> ReadArchive(const std::string& pack_path, text::ProgressMeter* progress) {
  Archive archive{.files = {}, .unchecked = {}, .streamed = std::make_unique<StreamedChecks>()};
  if (archive.streamed->scratch_dir().empty()) {
    return absl::UnavailableError("verify: cannot create a temporary directory (set TMPDIR to a writable one)");
  }
  auto opened = pack::PackReader::Open(pack_path, pack::Limits());
  if (!opened.ok()) return Fail(Result(), "archive", -1, std::string(opened.status().message()));
  pack::PackReader& reader = **opened;
  DigestThread file_digest;
  std::map<std::string, std::string> spilled;
  while (true) {
    auto name = reader.Next();
    if (!name.ok()) return Fail(Result(), "archive", -1, std::string(name.status().message()));
    if (!name->has_value()) break;
    const std::string file = **name;
    auto next = [&]() -> absl::StatusOr<std::string_view> {
      auto piece = reader.Read();
      if (piece.ok()) file_digest.Update(*piece);
      if (progress != nullptr) progress->SetWork(reader.bytes_read(), reader.file_bytes());
      return piece;
    };
    if (std::optional<Stop> stop = ReadFile(file, next, archive, spilled, progress)) return *std::move(stop);
    archive.files.digests[file] = hash::Hex(file_digest.Final());
  }
  if (auto s = CheckSpilled(spilled, archive.files, archive.unchecked, *archive.streamed, progress); !s.ok()) {
    return s;
  }
  return archive;
}

}  // namespace ledger::verify
