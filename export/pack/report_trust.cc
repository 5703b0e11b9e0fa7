// report.html's last section: why to trust the page, and how to check it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "export/pack/internal/report_html.h"
#include "export/pack/report.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/note.h"
#include "ledger/format/timestamp/timestamp.h"

namespace ledger::pack::html {
namespace {

// A word for a shell as it is, or in single quotes.
std::string ShellWord(std::string_view s) {
  bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("._/:,@+=-").find(c) != std::string_view::npos;
  });
  if (plain) return std::string(s);
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The pack's scope as --expect-scope takes it.
std::string ExpectScope(const manifest::Scope& scope) {
  if (scope.is_run()) return absl::StrCat("run:", scope.team, "/", scope.run_id);
  if (scope.is_team_window()) {
    auto t = [](int64_t us) {
      return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", absl::FromUnixMicros(us), absl::UTCTimeZone());
    };
    return absl::StrCat("team:", scope.team, ",", t(scope.from_us), ",", t(scope.to_us));
  }
  return absl::StrCat("seq:", scope.from_seq, ":", scope.to_seq);
}

// The time of a cosignature line's data (76 bytes: key ID, u64 time, the
// signature; CONTRACT sections 5b and 5c), unchecked: UTC, or the number
// when it is past what a time can be.
std::string CosignedAt(const cosign::SignatureLine& line) {
  uint64_t t = 0;
  for (int b = 4; b < 12; ++b) t = t << 8 | static_cast<uint8_t>(line.data[b]);
  return t <= static_cast<uint64_t>(INT64_MAX / 1'000'000)
             ? absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(static_cast<int64_t>(t)),
                                absl::UTCTimeZone())
             : absl::StrCat(t);
}

// The checkpoint as its note says, unchecked: origin, size, root, the
// ledger's key, then each further signature line (a witness's cosignature).
void CheckpointFacts(const std::string& note_text, std::string* h) {
  *h += "<h3>The checkpoint</h3>\n";
  auto parts = cosign::SplitNote(note_text);
  auto cp = parts.ok() ? note::ParseCheckpoint(parts->text) : absl::StatusOr<note::Checkpoint>(parts.status());
  auto signer = parts.ok() ? cosign::ParseSignatureLine(parts->signatures[0])
                           : absl::StatusOr<cosign::SignatureLine>(parts.status());
  if (!cp.ok() || !signer.ok()) {
    *h += "<p class=\"flag\">The checkpoint file is not a signed checkpoint.</p>\n";
  } else {
    char id[16];
    std::snprintf(id, sizeof id, "%08x", signer->key_id());
    *h += "<table class=\"facts\">";
    Fact("origin", absl::StrCat("<code>", E(cp->origin), "</code>"), h);
    Fact("tree size", absl::StrCat(cp->size), h);
    Fact("root",
         absl::StrCat("<code>", hash::Hex(cp->root), "</code> (hex; base64 <code>",
                      hash::Base64(hash::AsBytes(cp->root)), "</code>)"),
         h);
    Fact("signed by", absl::StrCat("key <code>", E(signer->name), "</code>, key id <code>", id, "</code>"), h);
    for (size_t i = 1; i < parts->signatures.size(); ++i) {
      auto line = cosign::ParseSignatureLine(parts->signatures[i]);
      std::string words = "a signature line that does not parse (not checked by this page)";
      if (line.ok() && line->data.size() == 76) {
        words = absl::StrCat("cosigned by <code>", E(line->name), "</code> at ", CosignedAt(*line),
                             " (not checked by this page)");
      } else if (line.ok()) {
        words = absl::StrCat("signed by <code>", E(line->name), "</code> (not checked by this page)");
      }
      Fact("witness", words, h);
    }
    *h += "</table>\n";
  }
  absl::StrAppend(h, "<pre>", E(note_text), "</pre>\n");
}

// A format 7 page: what the pack says of its keys and of its time (CONTRACT
// section 7, "The page's keys and time"), each fact as the pack states it.
void KeysAndTime(const std::string& checkpoint_note, const std::string& time_note, const ReportEntries& entries,
                 std::string* h) {
  *h += "<h3>Keys and time</h3>\n<table class=\"facts\">";
  std::vector<const ReportRow*> rotations;
  for (const auto& [step, rows] : entries.rows()) {
    for (const ReportRow& row : rows) {
      if (row.kind == "key_rotation") rotations.push_back(&row);
    }
  }
  std::sort(rotations.begin(), rotations.end(), [](const ReportRow* a, const ReportRow* b) { return a->seq < b->seq; });
  std::string rotated;
  for (const ReportRow* row : rotations)
    absl::StrAppend(&rotated, rotated.empty() ? "" : "<br>", "seq ", row->seq, ": ", E(row->detail));
  Fact("key rotations in this pack",
       rotated.empty() ? "none among the entries this page details (every rotation of the log: <code>ledgerctl "
                         "key-history</code>)"
                       : rotated,
       h);
  auto text = timestamp::NoteText(time_note);
  auto time = text.ok() ? note::ParseCheckpointTime(*text) : absl::StatusOr<note::CheckpointTime>(text.status());
  Fact("the ledger's time",
       time_note.empty() ? std::string("none: the pack carries no checkpoint-time note")
       : time.ok()       ? absl::StrCat(E(UtcTime(time->time_us)),
                                        " by the ledger's clock, signed with its key (<code>checkpoint-time</code>)")
                         : std::string("the checkpoint-time file is not a checkpoint-time note"),
       h);
  auto parts = cosign::SplitNote(checkpoint_note);
  size_t cosignatures = parts.ok() && !parts->signatures.empty() ? parts->signatures.size() - 1 : 0;
  Fact("witnesses' times",
       cosignatures == 0 ? std::string("none: the checkpoint carries no cosignature")
                         : absl::StrCat("the ", cosignatures, " cosignature line", cosignatures == 1 ? "" : "s",
                                        " of the checkpoint above, by the witnesses' clocks"),
       h);
  auto time_parts = cosign::SplitNote(time_note);
  std::string monitors;
  for (size_t i = 1; time_parts.ok() && i < time_parts->signatures.size(); ++i) {
    auto line = cosign::ParseSignatureLine(time_parts->signatures[i]);
    if (!line.ok() || line->data.size() != 76) continue;
    absl::StrAppend(&monitors, monitors.empty() ? "" : "<br>", "map cosigned by <code>", E(line->name), "</code> at ",
                    CosignedAt(*line), " (not checked by this page)");
  }
  Fact("monitors' times", monitors.empty() ? std::string("none: the time note carries no map cosignature") : monitors,
       h);
  std::vector<std::string> stamps = timestamp::FindStamps(time_note);
  std::string stamped = "none: no time-stamping authority vouches for the ledger's time";
  if (stamps.size() > 1) {
    stamped = "more than one time-stamp line (verifiers refuse the note with <code>--tsa-root</code>)";
  } else if (stamps.size() == 1) {
    auto stamp = timestamp::Describe(stamps[0]);
    stamped = stamp.ok() ? absl::StrCat("stamped by TSA <code>", E(stamp->tsa), "</code> at ", E(stamp->gen_time),
                                        " (an RFC 3161 token, not checked by this page: verifiers check it with "
                                        "<code>--tsa-root</code>, CONTRACT section 5e)")
                         : std::string("a time-stamp line whose token does not parse");
  }
  Fact("time-stamp", stamped, h);
  *h += "</table>\n";
}

void Commands(const manifest::Manifest& m, std::string* h) {
  std::string scope = ShellWord(ExpectScope(m.scope));
  // From format 7, the TSA's root too; the words of format 6 stay.
  const char* tsa = m.format >= 7 ? " [--tsa-root FILE]" : "";
  absl::StrAppend(h,
                  "<h3>The commands</h3>\n<p>With <code>PACK.tar.gz</code> this pack and <code>ledger.vkey</code> "
                  "the ledger's verifier key line, obtained from its operator apart from the pack; for a witnessed "
                  "ledger, add <code>--policy FILE</code> with your tlog-policy, which names the witnesses you "
                  "trust and their quorum:</p>\n<pre>ledger-verify PACK.tar.gz --vkey ledger.vkey --expect-scope ",
                  E(scope),
                  // The report is rebuilt byte for byte by the verifiers from
                  // the pack: this path stays as packs of formats 1-5 print
                  // it (export/verify_pack.py runs export/verify/python/'s).
                  " [--policy FILE]", tsa,
                  "\n/usr/bin/python3 export/verify_pack.py PACK.tar.gz --vkey ledger.vkey "
                  "--expect-scope ",
                  E(scope), " [--policy FILE]", tsa, "\nledger-verify-go --vkey ledger.vkey [--policy FILE]", tsa,
                  " PACK.tar.gz</pre>\n"
                  "<p>Each prints a line starting <code>OK:</code> and exits 0 when every check holds, and "
                  "<code>FAILED:</code> with the file and reason otherwise.</p>\n");
}

// `shared`: a pack of format 6, whose multiproof proves every entry's
// inclusion (the page of a pack of formats 1 to 5 keeps its words: the
// verifiers rebuild it byte for byte). `from_seq`: a run pack across the
// retention line (format 9), 0 otherwise.
void HandSteps(bool proves_run, bool proves_window, bool shared, bool stamped, uint64_t from_seq, std::string* h) {
  *h +=
      "<h3>What a verifier checks</h3>\n<ol>"
      "<li><code>manifest.sig</code> is a signed note by the key in <code>ledger.vkey</code> whose text is the "
      "SHA-256 of <code>manifest.json</code>, and every file's SHA-256 matches the manifest.</li>"
      "<li>The signature of <code>checkpoint</code> (C2SP signed note, Ed25519) by that key; with a policy, "
      "the witnesses' cosignatures and their quorum.</li>";
  if (stamped) {
    *h +=
        "<li>With <code>--tsa-root</code>: the time-stamp line of <code>checkpoint-time</code> holds an RFC 3161 "
        "token of a TSA chaining to that root, over the note's text, and the note's time is not after the stamp "
        "nor more than <code>--tsa-max-delay</code> before it (CONTRACT section 5e; by hand: <code>openssl ts "
        "-verify -data NOTE_TEXT -in TOKEN -token_in -CAfile ROOT</code>).</li>";
  }
  if (shared) {
    *h +=
        "<li>The leaf hash of each line of <code>entries.jsonl</code> is SHA-256(0x00 || line). With those "
        "hashes and the lines of <code>multiproof.txt</code> taken in order wherever a subtree holds no entry "
        "of the pack, the RFC 9162 tree is hashed up to the checkpoint's root, every line used (CONTRACT "
        "section 6, multiproofs). One entry's own inclusion proof, for <code>tlog.CheckRecord</code>: "
        "<code>ledgerctl pack-proof PACK.tar.gz --seq N --vkey ledger.vkey --format tlog-proof</code>.</li>";
  } else {
    *h +=
        "<li>For each line of <code>entries.jsonl</code>: its leaf hash is SHA-256(0x00 || line); the matching "
        "line of <code>proofs.jsonl</code> is an RFC 9162 inclusion proof of that hash in the checkpoint's tree "
        "(Go: <code>tlog.CheckRecord</code>).</li>";
  }
  *h +=
      "<li>Each entry's <code>prev</code> is the leaf hash of the entry before it; in a run pack, each "
      "<code>run_prev</code> names the run's previous entry; the entries are those of the scope.</li>"
      "<li>The step outcomes recomputed from the entries (CONTRACT section 4) are <code>outcomes.json</code>, "
      "and this page rebuilt from the manifest, the entries and the checkpoint is this page, byte for byte "
      "(<code>ledger-verify</code> only; the other two check its digest).</li>";
  if (from_seq > 0) {
    absl::StrAppend(
        h,
        "<li><code>retention.jsonl</code> is the ledger's <code>retention</code> entry of a pass, in the tree by "
        "the multiproof; the SHA-256 of <code>retention-policy.txt</code> is its <code>policy_sha256</code>; the "
        "policy's rule for the run's team (its own, else the default) is the entry's, and its line "
        "<code>below_seq</code> is ",
        from_seq,
        ", where this pack starts; the pack's first entry's <code>run_prev</code> is below it (CONTRACT section "
        "9, a run pack across the line).</li>");
  }
  if (proves_run && from_seq > 0) {
    *h +=
        "<li><code>run-head.json</code> against the <code>runs</code> root of <code>checkpoint-time</code> "
        "(CONTRACT section 6a): the pack ends with its <code>last_seq</code> and <code>last_leaf_hash</code>, "
        "and holds fewer entries than its <code>count</code>, which counts the pruned ones too.</li>";
  } else if (proves_run) {
    *h +=
        "<li><code>run-head.json</code> against the <code>runs</code> root of <code>checkpoint-time</code> "
        "(CONTRACT section 6a): the pack holds exactly its <code>count</code> entries and ends with its "
        "<code>last_seq</code> and <code>last_leaf_hash</code>.</li>";
  }
  if (proves_window) {
    *h +=
        "<li><code>team-window.json</code>: the team's entries on both sides of the window, each in the tree, "
        "and, when nothing of the team came after it, the team's head against the <code>teams</code> root of "
        "<code>checkpoint-time</code>; from the top down, each entry's <code>team_prev</code> names the entry "
        "below it in the pack (CONTRACT section 7, closed team windows).</li>";
  }
  *h += "</ol>\n";
}

void Completeness(const manifest::Manifest& m, std::string* h) {
  const std::string last = m.tree_size > 0 ? std::to_string(m.tree_size - 1) : "-1";
  if (m.scope.is_run_from()) {
    // Format 9 (CONTRACT section 9): the run from its team's line.
    absl::StrAppend(
        h, "<h3>Completeness</h3>\n<p>This pack states that it holds <strong>every</strong> entry of run <code>",
        E(m.scope.run_id), "</code> of team <code>", E(m.scope.team), "</code> logged from seq ", m.scope.from_seq,
        " up to seq ", last, ". The run's entries before seq ", m.scope.from_seq,
        " were <strong>pruned</strong> under the ledger's retention policy: their bodies are gone from the "
        "ledger, their leaf hashes stay in its tree. <code>retention.jsonl</code> is the ledger's own entry of "
        "the pass and rule that pruned them, and <code>retention-policy.txt</code> the policy that pass applied. "
        "<code>run-head.json</code> proves the run's last entry and its number of entries, pruned ones "
        "included. When a verifier says OK, a step shown above as pending or unknown has <strong>no "
        "completion in the log up to seq ",
        last,
        " (proven)</strong>; a completion whose start was pruned shows as an orphan here. The verifier's line "
        "<code>complete from seq ",
        m.scope.from_seq, ": ...</code> says how many entries were pruned and under which rule.</p>\n");
    return;
  }
  absl::StrAppend(h,
                  "<h3>Completeness</h3>\n<p>This pack states that it holds <strong>every</strong> entry of run <code>",
                  E(m.scope.run_id), "</code> of team <code>", E(m.scope.team), "</code> logged up to seq ", last,
                  ", not only entries that are in the log. <code>run-head.json</code> proves the run's number of "
                  "entries and its last entry against the run-head map root that the ledger signed with this "
                  "checkpoint (<code>checkpoint-time</code>, CONTRACT section 6a). When a verifier says OK, a step "
                  "shown above as pending or unknown has <strong>no completion in the log up to seq ",
                  last,
                  " (proven)</strong>, and no entry of the run was left out. It cannot show a receipt that an "
                  "emitter never sent, and a verifier holding only this pack relies on the signed root: anyone who "
                  "replays the log (<code>ledgerctl audit</code>) checks it.</p>\n");
}

void WindowCompleteness(const manifest::Manifest& m, std::string* h) {
  const std::string last = m.tree_size > 0 ? std::to_string(m.tree_size - 1) : "-1";
  absl::StrAppend(
      h, "<h3>Completeness</h3>\n<p>This pack states that it holds <strong>every</strong> entry of team <code>",
      E(m.scope.team), "</code> logged from ", E(UtcTime(m.scope.from_us)), " to ", E(UtcTime(m.scope.to_us)),
      " (the end excluded) up to seq ", last,
      ", not only entries that are in the log. Each entry the ledger writes names its team's previous entry, and "
      "<code>team-window.json</code> holds the team's entries just before and just after the window (or its last "
      "entry, proven against the team-head map root signed with this checkpoint): a verifier follows the links "
      "from one to the other through this pack. Entries the ledger wrote before it kept these links are not "
      "covered; the verifier says from which seq on the window is proven. It cannot show a receipt that an "
      "emitter never sent.</p>\n");
}

}  // namespace

void Trust(const manifest::Manifest& m, const std::string& checkpoint_note, const std::string& time_note,
           const ReportEntries& entries, std::string* h) {
  *h +=
      "<h2>Why to trust this page</h2>\n<p><strong>This page is only as good as a verifier's OK.</strong> "
      "The ledger that exported the pack wrote it, and whoever holds the ledger's key can write any page. "
      "Run a verifier on the pack: <code>ledger-verify</code> rebuilds this page from the entries it checked "
      "and refuses a pack whose page differs.</p>\n";
  CheckpointFacts(checkpoint_note, h);
  if (m.format >= 7) KeysAndTime(checkpoint_note, time_note, entries, h);
  Commands(m, h);
  const bool proves_run = m.format >= 3 && m.scope.is_run();
  const bool proves_window = m.format >= 4 && m.scope.is_team_window();
  HandSteps(proves_run, proves_window, m.format >= 6, m.format >= 7, m.scope.is_run_from() ? m.scope.from_seq : 0, h);
  if (proves_run) Completeness(m, h);
  if (proves_window) WindowCompleteness(m, h);
}

}  // namespace ledger::pack::html
