// VerifyPack (verify.h): the chain of its steps (steps.h), each taking the
// values the steps before it produced.
#include "export/verify/cc/verify.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "export/pack/pack.h"
#include "export/pack/team_window.h"
#include "export/verify/cc/steps.h"
#include "ledger/format/note/note.h"
#include "util/text/terminal.h"

namespace ledger::verify {

Result Fail(Result r, const std::string& file, int64_t seq, const std::string& message) {
  r.ok = false;
  // A hostile pack chooses some of the text (names, ids, hashes): what a
  // terminal would act on is escaped (util/text).
  r.file = text::TerminalEscape(file);
  r.seq = seq;
  r.message = text::TerminalEscape(message);
  return r;
}

namespace {

// The key options, before the pack is opened: INVALID_ARGUMENT naming what
// is wrong with them (verify.h, VerifyPack).
absl::Status CheckKeyOptions(const Options& options) {
  if (options.trust_pack_key && !options.vkey.empty()) {
    return absl::InvalidArgumentError("verify: a key given and trust_pack_key set: give one or the other");
  }
  if (options.keys) {
    if (options.trust_pack_key) {
      return absl::InvalidArgumentError("verify: keys given and trust_pack_key set: give one or the other");
    }
    return absl::OkStatus();
  }
  if (!options.trust_pack_key && !(options.vkey.empty() && options.policy)) {
    if (options.vkey.empty()) {
      return absl::InvalidArgumentError("verify: no key given (vkey) and trust_pack_key not set");
    }
    if (auto given = note::Verifier::Parse(options.vkey); !given.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("verify: vkey: ", given.status().message()));
    }
  }
  return absl::OkStatus();
}

// NOT_FOUND, naming the path and why, when the pack's file cannot be
// opened for reading or is a directory: nothing of it is judged then.
absl::Status Readable(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  int error = fd < 0 ? errno : 0;
  struct stat st;
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) error = EISDIR;
  if (fd >= 0) ::close(fd);
  if (error == 0) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("cannot read the pack ", path, ": ", std::strerror(error)));
}

}  // namespace

absl::StatusOr<Result> VerifyPack(const std::string& pack_path, const Options& options) {
  if (absl::Status s = CheckKeyOptions(options); !s.ok()) return s;
  if (absl::Status s = Readable(pack_path); !s.ok()) return s;
  Step<Archive> archive = ReadArchive(pack_path, options.progress);
  if (Stop* stop = archive.stop()) return std::move(*stop);
  const Files& files = archive->files;
  StreamedChecks& streamed = *archive->streamed;
  Step<Keyed> keyed = CheckKeyAndManifest(files, archive->unchecked.manifest, options);
  if (Stop* stop = keyed.stop()) return std::move(*stop);
  Step<Checkpointed> checkpointed =
      CheckCheckpoint(files.small.at(pack::kCheckpoint), archive->unchecked.cp, *keyed, options);
  if (Stop* stop = checkpointed.stop()) return std::move(*stop);
  Step<Timed> timed = CheckConsistencyAndTime(files.Find(pack::kConsistency), files.Find(pack::kCheckpointTime), *keyed,
                                              *checkpointed, options);
  if (Stop* stop = timed.stop()) return std::move(*stop);
  Step<Proven> proven = CheckEntriesAndProofs(
      streamed.stream(), files.Find(pack::kRunHead), files.Find(pack::kTeamWindow), files.Find(pack::kRedactions),
      files.Find(pack::kRetention), files.Find(pack::kRetentionPolicy), *keyed, *checkpointed, std::move(*timed));
  if (Stop* stop = proven.stop()) return std::move(*stop);
  Step<Projected> projected =
      CheckOutcomes(pack_path, files.digests.at(pack::kOutcomes), keyed->manifest, streamed, std::move(*proven));
  if (Stop* stop = projected.stop()) return std::move(*stop);
  return CheckReport(pack_path, files, streamed, keyed->manifest, options.report_by_digest, std::move(*projected));
}

}  // namespace ledger::verify
