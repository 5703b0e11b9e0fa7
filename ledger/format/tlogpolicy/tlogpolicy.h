// A transparency-log trust policy in the C2SP tlog-policy format: the logs
// whose checkpoints are accepted, the witnesses (each a cosignature/v1 key,
// ledger/format/cosign), named groups with thresholds, and the quorum.
//
//   policy  = *(line "\n")             ; items separated by spaces or tabs
//   line    = "log" vkey [url]
//           / "witness" name vkey [url]
//           / "group" name ("all" / "any" / k) 1*name
//           / "quorum" (name / "none")
//           / "monitor" name vkey [url]          ; CONTRACT section 5c
//           / "monitor-quorum" ("all" / "any" / k)
//           / "#" comment / ""          ; leading white space allowed
//
// A group or the quorum names only witnesses and groups defined on earlier
// lines, each member at most once, 1 <= k <= n; names are opaque bytes,
// unique, and never "none"; no two logs and no two witnesses share a
// public key; exactly one quorum line. Octets allowed: tab, newline,
// 0x20-0x7E, 0x80-0xFF. The optional URL of a witness is its submission
// prefix (c2sp.org/tlog-witness): the ledger posts <url>/add-checkpoint.
//
// Monitors (CONTRACT section 5c) cosign checkpoint-time notes' map roots:
// a monitor's vkey is a map-cosignature key (ledger/format/cosign/
// mapcosign.h); its name shares the namespace of witnesses and groups, but
// no group and no quorum may name it; monitor-quorum follows every monitor
// line, at most once, 1 <= k <= the number of monitors; monitors and no
// monitor-quorum line: all of them.
//
// Thread-safe: a Policy is immutable after Parse.
#ifndef LEDGER_FORMAT_TLOGPOLICY_TLOGPOLICY_H_
#define LEDGER_FORMAT_TLOGPOLICY_TLOGPOLICY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/cosign/mapcosign.h"
#include "ledger/format/note/note.h"

namespace ledger::tlogpolicy {

struct Log {
  note::Verifier key;
  std::string url;
  std::string vkey;  // the key as the policy writes it
};

struct Witness {
  std::string name;
  cosign::CosignatureVerifier key;
  std::string url;
};

struct Monitor {
  std::string name;
  cosign::MapCosignatureVerifier key;
  std::string url;
};

struct Group {
  std::string name;
  size_t threshold = 0;
  std::vector<std::string> members;
};

// A witness's verified cosignature on one checkpoint.
struct Cosigned {
  std::string witness;  // its name in the policy
  uint64_t time = 0;    // POSIX seconds
};

struct Evaluation {
  bool quorum = false;             // the quorum is met
  std::vector<Cosigned> cosigned;  // in policy order
  // Witnesses named (through groups) by the quorum that did not cosign,
  // in policy order; empty when the quorum is met.
  std::vector<std::string> missing;
};

// The monitors' verified map cosignatures on one checkpoint-time note.
struct MonitorEvaluation {
  bool quorum = false;               // monitor-quorum is met (always, with no monitor)
  std::vector<Cosigned> cosigned;    // in policy order (Cosigned::witness is the monitor's name)
  std::vector<std::string> missing;  // monitors that did not cosign, when the quorum is not met
};

class Policy {
 public:
  // INVALID_ARGUMENT naming the line and the rule when `text` breaks any
  // rule above.
  static absl::StatusOr<Policy> Parse(std::string_view text);

  const std::vector<Log>& logs() const { return logs_; }
  const std::vector<Witness>& witnesses() const { return witnesses_; }
  const std::vector<Group>& groups() const { return groups_; }
  const std::string& quorum() const { return quorum_; }  // "none", a witness or a group
  const std::vector<Monitor>& monitors() const { return monitors_; }
  // How many monitors must cosign a time note: 0 with no monitor.
  size_t monitor_quorum() const { return monitor_quorum_; }

  // The text of `note` when a log of the policy signed it;
  // PERMISSION_DENIED when none did (or a log's line fails),
  // INVALID_ARGUMENT for a malformed note.
  absl::StatusOr<std::string> OpenCheckpoint(std::string_view note) const;

  // Which witnesses validly cosigned `note` (lines of unknown keys are
  // ignored) and whether that meets the quorum. Does not check the log's
  // signature (OpenCheckpoint does). INVALID_ARGUMENT for a malformed note;
  // PERMISSION_DENIED naming the witness when a line with a policy
  // witness's name and key id fails to verify.
  absl::StatusOr<Evaluation> Evaluate(std::string_view note) const;

  // Which monitors validly cosigned the checkpoint-time note `time_note`
  // (lines of other keys ignored) and whether that meets monitor-quorum.
  // Does not check the log's signature. INVALID_ARGUMENT for a malformed
  // note; PERMISSION_DENIED naming the monitor when its line fails a rule
  // of section 5c.
  absl::StatusOr<MonitorEvaluation> EvaluateMonitors(std::string_view time_note) const;

 private:
  Policy() = default;
  bool Witnessed(const std::string& name, const std::vector<bool>& cosigned) const;
  void Missing(const std::string& name, const std::vector<bool>& cosigned, std::vector<bool>* out) const;
  int WitnessIndex(const std::string& name) const;
  const Group* FindGroup(const std::string& name) const;

  std::vector<Log> logs_;
  std::vector<Witness> witnesses_;
  std::vector<Group> groups_;
  std::string quorum_;
  std::vector<Monitor> monitors_;
  size_t monitor_quorum_ = 0;
};

}  // namespace ledger::tlogpolicy

#endif  // LEDGER_FORMAT_TLOGPOLICY_TLOGPOLICY_H_
