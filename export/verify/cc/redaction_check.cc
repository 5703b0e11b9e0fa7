// CheckRedactions (internal/file_checks.h): a pack's erased entries against
// their redaction entries (CONTRACT section 8, "In a pack (format 8)").
#include <map>

#include "absl/strings/str_cat.h"
#include "export/verify/cc/internal/file_checks.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"

namespace ledger::verify {

std::optional<FileFailure> CheckRedactions(const manifest::Manifest& m, const std::string* file,
                                           const std::vector<StreamCheck::Erased>& erased, Result* r) {
  auto fail = [](const char* file, int64_t seq, std::string message) {
    return std::optional<FileFailure>(FileFailure{file, seq, std::move(message)});
  };
  if (m.format < 8) {
    if (file != nullptr) return fail(pack::kRedactions, -1, "only a pack of format 8 carries redactions");
    if (!erased.empty()) {
      return fail(pack::kEntries, static_cast<int64_t>(erased.front().seq),
                  absl::StrCat("line ", erased.front().line + 1, ": a redacted line, in a pack of format ", m.format,
                               " (only a pack of format 8 holds erased entries)"));
    }
    return std::nullopt;
  }
  // The lines of redactions.jsonl, by seq.
  struct Line {
    uint64_t line = 0;
    receipt::Entry entry;
    bool named = false;
  };
  std::map<uint64_t, Line> lines;
  if (file != nullptr) {
    std::string_view rest = *file;
    uint64_t n = 0;
    std::optional<uint64_t> last;
    while (!rest.empty()) {
      size_t end = rest.find('\n');
      if (end == std::string_view::npos) {
        return fail(pack::kRedactions, -1, absl::StrCat("line ", n + 1, ": no newline at its end"));
      }
      std::string_view text = rest.substr(0, end);
      rest.remove_prefix(end + 1);
      ++n;
      auto entry = receipt::ParseLeaf(text);
      if (!entry.ok()) return fail(pack::kRedactions, -1, absl::StrCat("line ", n, ": ", entry.status().message()));
      const receipt::Receipt& rc = entry->receipt;
      if (!rc.has_redaction() || entry->emitter != receipt::kLedgerEmitter) {
        return fail(pack::kRedactions, static_cast<int64_t>(entry->seq),
                    absl::StrCat("line ", n, ": not a redaction entry of the ledger's"));
      }
      if (auto valid = receipt::Canonicalize(rc, receipt::Author::kLedger); !valid.ok()) {
        return fail(pack::kRedactions, static_cast<int64_t>(entry->seq),
                    absl::StrCat("line ", n, ": ", valid.status().message()));
      }
      if (last && entry->seq <= *last) {
        return fail(pack::kRedactions, static_cast<int64_t>(entry->seq),
                    absl::StrCat("line ", n, ": seq ", entry->seq, " is not above the line before it (", *last, ")"));
      }
      last = entry->seq;
      lines[entry->seq] = Line{n, *std::move(entry)};
    }
  }
  if (erased.empty()) {
    // A format 8 pack holding no erased entry is format 7's content.
    if (file != nullptr) return fail(pack::kRedactions, -1, "a pack with no redacted entry carries no redactions");
    return std::nullopt;
  }
  for (const StreamCheck::Erased& e : erased) {
    if (file == nullptr) {
      return fail(pack::kRedactions, -1,
                  absl::StrCat("missing: entries.jsonl line ", e.line + 1, " is redacted by seq ", e.by));
    }
    auto it = lines.find(e.by);
    if (it == lines.end()) {
      return fail(pack::kEntries, static_cast<int64_t>(e.seq),
                  absl::StrCat("line ", e.line + 1, ": seq ", e.seq, ": redacted by ", e.by,
                               ", which redactions.jsonl does not hold"));
    }
    const receipt::Receipt& rc = it->second.entry.receipt;
    if (static_cast<uint64_t>(rc.redaction().entry_seq()) != e.seq || e.by <= e.seq ||
        receipt::RedactedLine(e.by, rc) != e.encoded) {
      return fail(pack::kEntries, static_cast<int64_t>(e.seq),
                  absl::StrCat("line ", e.line + 1, ": seq ", e.seq, ": not the redacted line of redaction ", e.by));
    }
    it->second.named = true;
    const auto& d = rc.redaction();
    r->erasures.push_back(absl::StrCat("entry ", e.seq, ": erased by redaction ", e.by, " (", e.kind, " of team ",
                                       e.team, ", run ", e.run_id, "): ", d.reason(), "; requested by ",
                                       d.requested_by(), ", approved by ", d.approved_by(), "."));
  }
  for (const auto& [seq, line] : lines) {
    if (!line.named) {
      return fail(pack::kRedactions, static_cast<int64_t>(seq),
                  absl::StrCat("line ", line.line, ": seq ", seq, " redacts no entry of the pack"));
    }
  }
  return std::nullopt;
}

}  // namespace ledger::verify
