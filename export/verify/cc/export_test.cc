// Evidence packs end to end: exported from a real log, verified offline,
// and refused after each kind of tampering with the first failing item.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "export/exporter/exporter.h"
#include "export/manifest/manifest.h"
#include "export/pack/pack.h"
#include "export/verify/cc/pack_test_fixture.h"
#include "export/verify/cc/verify.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/runmap/proof_json.h"
#include "ledger/storage/log/log.h"
#include "query/projector/projector.h"
#include "tests/util/temp_dir.h"

namespace ledger {
namespace {

TEST_F(PackTest, RunPackVerifiesAndIsDeterministic) {
  exporter::Scope run{"team-a", "run-1"};
  std::string a = Export(run, "a.tar.gz"), b = Export(run, "b.tar.gz");
  EXPECT_EQ(Read(a), Read(b));
  verify::Result r = Verify(a);
  EXPECT_TRUE(r.ok) << r.Summary();
  EXPECT_EQ(r.entries, 8u);  // 3 starts, 3 calls, 2 execs
  EXPECT_FALSE(r.trusted_key_in_pack);
  EXPECT_EQ(r.Summary(),
            "OK: 8 entries of {\"kind\":\"run\",\"run_id\":\"run-1\",\"team\":\"team-a\"} "
            "verified against the checkpoint of ledger.test/packs at tree size 16, root " +
                hash::Hex(log_->Checkpoint(0)->root) + ", signed at " +
                verify::SignedTime(log_->Checkpoint(0)->signed_at_us) +
                ".\ncomplete: every entry of the run up to seq 15 (run-head proof, 8 entries).\n"
                "team-a/run-1/s2 attempt 1 (pending): no completion in the log up to seq 15 "
                "(proven).\nsigned by: " +
                log_->verifier_key().substr(0, log_->verifier_key().find('+', log_->verifier_key().find('+') + 1)) +
                " (the key given).\ntime evidence: the ledger's clock, " +
                verify::SignedTime(log_->Checkpoint(0)->signed_at_us) +
                "; witnesses' cosignatures not checked (no --policy); no time-stamping authority's token.\n");
  EXPECT_EQ(r.run_complete, 8u);
  EXPECT_EQ(r.signed_at_us, log_->Checkpoint(0)->signed_at_us);
  verify::Result trusting = Verify(a, /*with_key=*/false);
  EXPECT_TRUE(trusting.ok);
  EXPECT_TRUE(trusting.trusted_key_in_pack);
  EXPECT_EQ(trusting.Summary().substr(0, trusting.Summary().find('\n') + 1),
            "WARNING: --trust-pack-key: the key inside the pack was trusted; this result proves nothing "
            "about the ledger's identity. Compare the pack's ledger.vkey with the ledger operator's "
            "published key.\n");
}

TEST_F(PackTest, SignedTimesPrintInUtcWithMicroseconds) {
  EXPECT_EQ(verify::SignedTime(1767225600000001), "2026-01-01T00:00:00.000001Z (1767225600000001 us)");
  EXPECT_EQ(verify::SignedTime(0), "1970-01-01T00:00:00.000000Z (0 us)");
}

TEST_F(PackTest, AKeptCheckpointSplitsAtItsTimeNote) {
  auto cp = *log_->Checkpoint(0);
  verify::KeptCheckpoint kept = verify::SplitKeptCheckpoint(cp.note + cp.time_note);
  EXPECT_EQ(kept.checkpoint, cp.note);
  EXPECT_EQ(kept.time_note, cp.time_note);
  EXPECT_EQ(*verify::KeptCheckpointTime(log_->verifier_key(), kept), cp.signed_at_us);
  EXPECT_EQ(verify::SplitKeptCheckpoint(cp.note).time_note, "");
  auto alone = verify::KeptCheckpointTime(log_->verifier_key(), {cp.note, cp.note});
  EXPECT_EQ(alone.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PackTest, ExpectedScopesParseAsWrittenAndRefuseAnythingElse) {
  auto run = verify::ParseExpectedScope("run:team-a/run-1");
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(std::make_tuple(std::string(run->kind()), run->team, run->run_id),
            std::make_tuple("run", "team-a", "run-1"));
  auto seq = verify::ParseExpectedScope("seq:5:40");
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(std::make_tuple(std::string(seq->kind()), seq->from_seq, seq->to_seq), std::make_tuple("seq", 5u, 40u));
  auto team = verify::ParseExpectedScope("team:team-a,2026-01-01T00:00:00Z,2026-01-01T00:00:01.5Z");
  ASSERT_TRUE(team.ok()) << team.status();
  EXPECT_EQ(std::make_tuple(std::string(team->kind()), team->team, team->from_us, team->to_us),
            std::make_tuple("team", "team-a", int64_t{1767225600000000}, int64_t{1767225601500000}));
  for (const char* bad : {"run:team-a", "run:/r", "seq:5", "seq:40:5", "seq:a:b", "team:t,2026-01-01,2026-01-02",
                          "team:t,2026-01-02T00:00:00Z,2026-01-01T00:00:00Z", "window:x", ""}) {
    EXPECT_EQ(verify::ParseExpectedScope(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST_F(PackTest, APackOfAnotherScopeOrAnOlderCheckpointIsRefusedWhenAskedFor) {
  std::string a = Export({"team-a", "run-1"}, "a.tar.gz");
  auto with = [&](const std::string& scope, uint64_t not_older_than) {
    verify::Options o;
    o.vkey = log_->verifier_key();
    if (!scope.empty()) o.expect_scope = *verify::ParseExpectedScope(scope);
    o.not_older_than = not_older_than;
    return *verify::VerifyPack(a, o);
  };
  EXPECT_TRUE(with("run:team-a/run-1", 16).ok);
  ExpectFailure(with("run:team-a/run-0", 0), "manifest.json", -1,
                "scope is {\"kind\":\"run\",\"run_id\":\"run-1\",\"team\":\"team-a\"}, expected "
                "{\"kind\":\"run\",\"run_id\":\"run-0\",\"team\":\"team-a\"} (--expect-scope)");
  ExpectFailure(with("seq:0:16", 0), "manifest.json", -1, "scope is {\"kind\":\"run\"");
  ExpectFailure(with("", 17), "checkpoint", -1, "tree size 16 is older than the 17 asked for (--not-older-than)");
}

// A key given but empty or malformed never falls back to the pack's own.
TEST_F(PackTest, NoKeyOrAMalformedKeyIsRefusedBeforeThePackIsRead) {
  std::string a = Export({"team-a", "run-1"}, "a.tar.gz");
  auto status = [&](const std::string& vkey, bool trust) {
    verify::Options o;
    o.vkey = vkey;
    o.trust_pack_key = trust;
    auto r = verify::VerifyPack(a, o);
    return r.ok() ? absl::OkStatus() : r.status();
  };
  EXPECT_EQ(status("", false), absl::InvalidArgumentError("verify: no key given (vkey) and trust_pack_key not set"));
  EXPECT_EQ(status("ledger.test/packs", false),
            absl::InvalidArgumentError("verify: vkey: verifier key: want <name>+<key id>+<base64 key>"));
  EXPECT_EQ(status(log_->verifier_key(), true),
            absl::InvalidArgumentError("verify: a key given and trust_pack_key set: give one or the other"));
}

TEST_F(PackTest, PackHoldsTheContractFilesAndOutcomes) {
  std::string p5 = Export({"team-a", "run-0"}, "p5.tar.gz", 5);
  std::string dir5 = dir_.Sub("x5");
  std::filesystem::create_directories(dir5);
  std::vector<std::string> names5;
  auto files5 = *pack::ExtractArchive(p5, dir5, pack::Limits());
  for (const auto& [n, path] : files5) names5.push_back(n);
  EXPECT_EQ(names5, (std::vector<std::string>{"checkpoint", "checkpoint-time", "entries.jsonl", "ledger.vkey",
                                              "manifest.json", "manifest.sig", "outcomes.json", "proofs.jsonl",
                                              "report.html", "run-head.json"}));
  EXPECT_EQ(nlohmann::json::parse(Read(dir5 + "/manifest.json"))["format"], 5);
  EXPECT_TRUE(Verify(p5).ok);
  std::string p = Export({"team-a", "run-0"}, "p.tar.gz");
  std::string dir = dir_.Sub("x");
  std::filesystem::create_directories(dir);
  auto files = *pack::ExtractArchive(p, dir, pack::Limits());
  std::vector<std::string> names;
  for (const auto& [n, path] : files) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"checkpoint", "checkpoint-time", "entries.jsonl", "ledger.vkey",
                                             "manifest.json", "manifest.sig", "multiproof.txt", "outcomes.json",
                                             "report.html", "run-head.json"}));
  EXPECT_EQ(nlohmann::json::parse(Read(files["manifest.json"]))["format"], 7);
  EXPECT_EQ(Read(files["ledger.vkey"]), log_->verifier_key() + "\n");
  nlohmann::json outcomes = nlohmann::json::parse(Read(files["outcomes.json"]));
  ASSERT_EQ(outcomes["steps"].size(), 3u);
  EXPECT_EQ(outcomes["steps"][2]["state"], "pending");
  EXPECT_EQ(outcomes["runs"][0]["steps"]["succeeded"], 2);
  std::string report = Read(files["report.html"]);
  EXPECT_EQ(report.find("<b>"), std::string::npos);  // nothing from a receipt is markup
  EXPECT_NE(report.find("<td>s2</td><td>1</td><td>pending</td>"), std::string::npos);
  EXPECT_NE(report.find("<svg"), std::string::npos);
  EXPECT_NE(report.find("<rect class=\"step succeeded\""), std::string::npos);
  EXPECT_NE(report.find("<rect class=\"step pending\""), std::string::npos);
  EXPECT_EQ(report.find("<script"), std::string::npos);
  // Every line of entries.jsonl is a leaf, byte for byte.
  std::istringstream lines(Read(files["entries.jsonl"]));
  std::string line;
  while (std::getline(lines, line)) EXPECT_TRUE(receipt::ParseLeaf(line).ok());
}

TEST_F(PackTest, SeqRangePackVerifies) {
  verify::Result r = Verify(Export({"", "", 3, 11}, "s.tar.gz"));
  EXPECT_TRUE(r.ok) << r.Summary();
  EXPECT_EQ(r.entries, 8u);
  auto bad = exporter::ExportPack(*log_, {"", "", 3, 99}, dir_.Sub("bad.tar.gz"));
  EXPECT_EQ(bad.code(), absl::StatusCode::kOutOfRange);
}

// A replicated shard's leader_epoch entries (CONTRACT §3): a seq range that
// holds one verifies and names it, its report lists it; one that does not
// begin its epoch (previous_size not its seq) is refused.
TEST_F(PackTest, ASeqRangeShowsItsLeaderEpochsAndRefusesOneThatDoesNotBeginItsEpoch) {
  auto append_as_ledger = [&](const receipt::Receipt& r) {
    std::promise<std::vector<sequencer::Outcome>> done;
    ASSERT_TRUE(log_->AppendAsLedger({&r}, [&](std::vector<sequencer::Outcome> o) { done.set_value(o); }).ok());
    auto out = done.get_future().get();
    ASSERT_TRUE(out[0].status.ok()) << out[0].status;
    ASSERT_TRUE(log_->SignCheckpoint().ok());
  };
  const uint64_t at = log_->head().size;
  append_as_ledger(receipt::LeaderEpoch(2, "node-b", at, hash::Hex(log_->head().root), 7));
  verify::Result r = Verify(Export({"", "", at - 2, at + 1}, "epoch.tar.gz"));
  ASSERT_TRUE(r.ok) << r.Summary();
  EXPECT_THAT(r.Summary(), ::testing::HasSubstr(absl::StrCat("leader epoch 2: node node-b leads from seq ", at,
                                                             ", over the tree of size ", at, " with root ")));
  std::string dir = dir_.Sub("epoch");
  std::filesystem::create_directories(dir);
  std::string report = Read((*pack::ExtractArchive(dir_.Sub("epoch.tar.gz"), dir, pack::Limits()))[pack::kReport]);
  EXPECT_THAT(report, ::testing::HasSubstr("<h2>Leader epochs</h2>"));
  EXPECT_THAT(report, ::testing::HasSubstr("epoch 2, node node-b, over the tree of size"));
  // A leader_epoch written by a key holder at a seq other than the tree it
  // names.
  append_as_ledger(receipt::LeaderEpoch(3, "node-c", at, hash::Hex(log_->head().root), 8));
  ExpectFailure(Verify(Export({"", "", at - 2, at + 2}, "lying.tar.gz")), pack::kEntries, at + 1,
                absl::StrCat("leader_epoch: previous_size ", at, " is not its seq"));
}

// A run with no entry exports as a pack of none, which proves the absence.
TEST_F(PackTest, ARunWithNoEntryExportsAnAbsenceProof) {
  ASSERT_TRUE(exporter::ExportPack(*log_, {"team-a", "no-run"}, dir_.Sub("none.tar.gz")).ok());
  verify::Result r = Verify(dir_.Sub("none.tar.gz"));
  EXPECT_TRUE(r.ok) << r.Summary();
  EXPECT_EQ(r.entries, 0u);
  EXPECT_EQ(r.run_complete, 0u);
  EXPECT_NE(r.Summary().find("\ncomplete: the run has no entry up to seq 15 (absence proof).\n"), std::string::npos)
      << r.Summary();
}

TEST_F(PackTest, TeamWindowPackVerifies) {
  verify::Result r = Verify(Export({"team-a", "", 0, 0, 0, int64_t{1} << 62}, "t.tar.gz"));
  EXPECT_TRUE(r.ok) << r.Summary();
  EXPECT_EQ(r.entries, 16u);
  verify::Result none = Verify(Export({"team-a", "", 0, 0, 1, 2}, "t0.tar.gz"));
  EXPECT_TRUE(none.ok) << none.Summary();
  EXPECT_EQ(none.entries, 0u);
}

TEST_F(PackTest, SinceAnEarlierCheckpointCarriesAConsistencyProof) {
  std::string old = log_->Checkpoint(0)->note;
  receipt::Receipt more =
      *receipt::FromJsonText(R"({"receipt_id":"late-call","kind":"tool_call","team":"team-a","run_id":"run-1",)"
                             R"("occurred_at_us":9,"tool":"git","decision":"allow"})");
  std::promise<void> done;
  ASSERT_TRUE(log_->Append("gw", {&more}, [&](std::vector<sequencer::Outcome>) { done.set_value(); }).ok());
  done.get_future().wait();
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  std::string p = dir_.Sub("since.tar.gz");
  ASSERT_TRUE(exporter::ExportPack(*log_, {"team-a", "run-1"}, p, {.since = old}).ok());
  verify::Result r = Verify(p);
  EXPECT_TRUE(r.ok) << r.Summary();
  ASSERT_TRUE(r.since_size.has_value());
  EXPECT_EQ(*r.since_size, 16u);
  EXPECT_EQ(r.tree_size, 17u);
  std::string bad = Tamper(
      p,
      [&](const std::string& dir) {
        std::string c = Read(dir + "/consistency.json");
        size_t at = c.find("\"proof\":[\"") + 10;
        c[at] = c[at] == 'a' ? 'b' : 'a';
        Write(dir + "/consistency.json", c);
      },
      /*resign=*/true);
  ExpectFailure(Verify(bad), pack::kConsistency, -1, "consistency: proof leads to");
  auto other = *note::Signer::Generate("ledger.test/packs");
  auto foreign = exporter::ExportPack(*log_, {"team-a", "run-1"}, dir_.Sub("f.tar.gz"),
                                      {.since = *other.Sign(note::FormatCheckpoint({"ledger.test/packs", 3, {}}))});
  EXPECT_EQ(foreign.code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PackTest, AFlippedByteInAnyFileIsRefused) {
  for (int format : {5, 6}) {
    std::string p = Export({"team-a", "run-1"}, absl::StrCat("p", format, ".tar.gz"), format);
    for (const char* name :
         {pack::kCheckpoint, pack::kEntries, pack::kVkey, pack::kOutcomes,
          format == 6 ? pack::kMultiproof : pack::kProofs, pack::kReport, pack::kManifest, pack::kManifestSig}) {
      std::string t = Tamper(
          p,
          [&](const std::string& dir) {
            std::string data = Read(dir + "/" + name);
            if (std::string(name) == pack::kManifestSig) {
              // One base64 character of the signature's key id, changed to
              // another base64 character: a flipped bit could leave the
              // alphabet, which is refused earlier as a malformed line.
              size_t id = data.rfind(' ') + 2;
              data[id] = data[id] == 'A' ? 'B' : 'A';
            } else if (data.empty()) {
              data = "0";  // an empty multiproof: a whole tree's entries
            } else {
              data[data.size() / 2] ^= 0x01;
            }
            Write(dir + "/" + name, data);
          },
          /*resign=*/false);
      verify::Result r = Verify(t);
      EXPECT_FALSE(r.ok) << name;
      if (std::string(name) == pack::kManifest) {
        ExpectFailure(r, pack::kManifest, -1, "SHA-256 is ");
      } else if (std::string(name) == pack::kManifestSig) {
        // A signature is looked for by the key's name and id: the verifier
        // key's first two fields ("NAME+ID+KEY", no '+' in a name or id).
        // The line now names another id, and the refusal says both.
        const std::string vkey = signer_.VerifierKey();
        const std::string name_and_id = vkey.substr(0, vkey.find('+', vkey.find('+') + 1));
        const std::string name = vkey.substr(0, vkey.find('+'));
        ExpectFailure(r, pack::kManifestSig, -1, "signed by " + name + "+");
        EXPECT_TRUE(absl::EndsWith(r.message, ", not by " + name_and_id + " (the key given)")) << r.message;
      } else if (std::string(name) == pack::kVkey) {
        ExpectFailure(r, pack::kVkey, -1, "expected the given key " + signer_.VerifierKey() + ", found ");
      } else {
        ExpectFailure(r, name, -1, "SHA-256 expected ");
      }
    }
  }
}

TEST_F(PackTest, AReportOtherThanTheOneRebuiltIsRefusedAtItsFirstDifferingByte) {
  std::string p = Export({"team-a", "run-1"}, "p.tar.gz");
  std::string dir = dir_.Sub("genuine");
  std::filesystem::create_directories(dir);
  std::string report = Read((*pack::ExtractArchive(p, dir, pack::Limits()))[pack::kReport]);
  const std::string row = "<td>s2</td><td>1</td><td>";
  size_t pending = report.find(row + "pending</td>");
  ASSERT_NE(pending, std::string::npos);
  pending += row.size();
  auto line_of = [&](size_t at) { return std::to_string(std::count(report.begin(), report.begin() + at, '\n') + 1); };
  auto expect_refused_at = [&](const std::string& forged, size_t at) {
    std::string t = Tamper(
        p, [&](const std::string& d) { Write(d + "/" + pack::kReport, forged); }, /*resign=*/true);
    verify::Result r = Verify(t);
    ExpectFailure(r, pack::kReport, -1, "");
    EXPECT_EQ(r.message,
              "differs from the report rebuilt from the checked entries, outcomes, checkpoint and manifest, first at "
              "byte " +
                  std::to_string(at) + " (line " + line_of(at) + ")");
  };
  // The pending step shown as succeeded, the manifest re-signed.
  std::string succeeded = report;
  succeeded.replace(pending, 7, "succeeded");
  expect_refused_at(succeeded, pending);
  // A byte more, a byte less.
  expect_refused_at(report + " ", report.size());
  expect_refused_at(report.substr(0, report.size() - 1), report.size() - 1);
  // The genuine report, re-signed: it holds.
  std::string same = Tamper(
      p, [](const std::string&) {}, /*resign=*/true);
  EXPECT_TRUE(Verify(same).ok) << Verify(same).Summary();
}

TEST_F(PackTest, AnEntryThatIsNotUtf8OrNotCanonicalIsRefusedAtItsSeq) {
  std::string p = Export({"team-a", "run-1"}, "p.tar.gz");
  auto edit_line = [&](int index, const std::function<void(std::string&)>& edit) {
    return Tamper(
        p,
        [&](const std::string& dir) {
          std::istringstream in(Read(dir + "/entries.jsonl"));
          std::string out, line;
          for (int i = 0; std::getline(in, line); ++i) {
            if (i == index) edit(line);
            out += line + "\n";
          }
          Write(dir + "/entries.jsonl", out);
        },
        /*resign=*/true);
  };
  // The third entry's emitter with a byte that is not UTF-8; the seq the
  // failure names is the one the entry before it leads to.
  std::string not_utf8 = edit_line(2, [](std::string& l) { l.replace(l.find("\"emitter\":\"") + 11, 1, "\xff"); });
  verify::Result r = Verify(not_utf8);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.file, pack::kEntries);
  EXPECT_GE(r.seq, 0);
  EXPECT_EQ(r.message, "leaf: not in canonical form") << r.message;
  // A space after a colon: the same JSON, not the canonical bytes.
  std::string spaced = edit_line(1, [](std::string& l) { l.replace(l.find("\"emitter\":") + 10, 0, " "); });
  verify::Result s = Verify(spaced);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.file, pack::kEntries);
  EXPECT_EQ(s.message, "leaf: not in canonical form") << s.message;
}

// The fourth entry left out, its proof (format 5) or the multiproof made
// anew for the rest (format 6, as the forger can from the pack alone), and
// the manifest re-signed: the run chain refuses it.
TEST_F(PackTest, ADroppedEntryInTheMiddleOfARunIsRefused) {
  for (int format : {5, 6}) {
    std::string p = Export({"team-a", "run-1"}, absl::StrCat("p", format, ".tar.gz"), format);
    std::string t = Tamper(
        p, [&](const std::string& dir) { KeepEntries(dir, [](int i) { return i != 3; }); }, /*resign=*/true);
    verify::Result r = Verify(t);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.file, pack::kEntries) << format;
    EXPECT_EQ(r.message.substr(0, 18), "run_prev expected ") << r.message;
  }
}

// What a forger holding the ledger's key makes of a run pack: the entries
// (and their proofs) that `keep` keeps, the manifest changed by `edit`, and
// outcomes.json and report.html recomputed from what is left, so that every
// check but completeness passes.
void Forge(const std::string& dir, const std::function<bool(int line)>& keep,
           const std::function<void(nlohmann::json&)>& edit) {
  pack::Outcomes outcomes;
  uint64_t kept = 0;
  KeepEntries(dir, keep);
  std::istringstream in(Read(dir + "/" + pack::kEntries));
  for (std::string line; std::getline(in, line); ++kept) ASSERT_TRUE(outcomes.Add(*receipt::ParseLeaf(line)).ok());
  nlohmann::json m = nlohmann::json::parse(Read(dir + "/" + pack::kManifest));
  m["counts"]["entries"] = kept;
  edit(m);
  Write(dir + "/" + pack::kManifest, m.dump() + "\n");
  auto header = *manifest::Parse(m.dump() + "\n");
  header.files.clear();
  std::string outcomes_json, report;
  ASSERT_TRUE(outcomes.Write([&](std::string_view piece) { outcomes_json.append(piece); }).ok());
  Write(dir + "/" + pack::kOutcomes, outcomes_json);
  ASSERT_TRUE(pack::WriteReport(header, outcomes, Read(dir + "/" + pack::kCheckpoint),
                                Read(dir + "/" + pack::kCheckpointTime),
                                [&](std::string_view piece) { report.append(piece); })
                  .ok());
  Write(dir + "/" + pack::kReport, report);
}

// Tail truncation by the operator: the run's last entry (team-a/run-1's
// agent_exec of s1, seq 15) left out and everything re-signed. Before run
// packs carried their run's head, every verifier accepted it.
TEST_F(PackTest, ARunPackWithoutItsLastEntryIsRefusedEvenResigned) {
  std::string p = Export({"team-a", "run-1"}, "p.tar.gz");
  auto drop_last = [](int line) { return line != 7; };
  auto same = [](nlohmann::json&) {};
  verify::Result r = Verify(Tamper(
      p, [&](const std::string& dir) { Forge(dir, drop_last, same); }, true));
  ExpectFailure(r, pack::kRunHead, -1, "the run has 8 entries up to tree size 16, the pack holds 7");

  // With a head that claims the shorter run: the proof leads elsewhere.
  auto shorter = [&](const std::string& dir) {
    Forge(dir, drop_last, same);
    std::vector<std::string> lines;
    std::istringstream in(Read(dir + "/" + pack::kEntries));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    auto last = *receipt::ParseLeaf(lines.back());
    auto proof = *runmap::ParseProof(Read(dir + "/" + pack::kRunHead));
    proof.path.found->head = {7, last.seq, hash::LeafHash(lines.back())};
    Write(dir + "/" + pack::kRunHead, runmap::EncodeProof(proof) + "\n");
  };
  r = Verify(Tamper(p, shorter, true));
  ExpectFailure(r, pack::kRunHead, -1, "the proof leads to map root ");

  // Without the proof, as a format 2 pack: its time note signs map roots,
  // which no format 2 pack's note does (section 7's table).
  auto downgraded = [&](const std::string& dir) {
    Forge(dir, drop_last, [](nlohmann::json& m) {
      m["format"] = 2;
      m["files"].erase(pack::kRunHead);
    });
    std::filesystem::remove(dir + "/" + pack::kRunHead);
  };
  // (From a format 5 pack: a format 2 one proves inclusion with proofs.jsonl.)
  r = Verify(Tamper(Export({"team-a", "run-1"}, "p5.tar.gz", 5), downgraded, true));
  ExpectFailure(r, pack::kCheckpointTime, -1, "format 2 pack with a version 4 note");
  // Dropping a whole run's entries is the same claim, refused the same way.
  r = Verify(Tamper(
      p,
      [&](const std::string& dir) {
        Forge(
            dir, [](int) { return false; }, same);
      },
      true));
  ExpectFailure(r, pack::kRunHead, -1, "the run has 8 entries up to tree size 16, the pack holds 0");
}

// The head of an older checkpoint presented with the current one.
TEST_F(PackTest, ARunHeadFromAnOlderCheckpointIsRefused) {
  std::string old_pack = Export({"team-a", "run-1"}, "old.tar.gz");
  std::string dir_old = dir_.Sub("old");
  std::filesystem::create_directories(dir_old);
  auto old_files = *pack::ExtractArchive(old_pack, dir_old, pack::Limits());
  Append({R"({"kind":"model_call","team":"team-a","run_id":"run-1","step_id":"s2","receipt_id":"late-1",)"
          R"("occurred_at_us":1,"route":"r","decision":"allow"})"});
  std::string p = Export({"team-a", "run-1"}, "p.tar.gz");
  verify::Result genuine = Verify(p);
  EXPECT_TRUE(genuine.ok) << genuine.Summary();
  EXPECT_EQ(genuine.run_complete, 9u);
  verify::Result r = Verify(Tamper(
      p,
      [&](const std::string& dir) {
        Forge(
            dir, [](int line) { return line != 8; }, [](nlohmann::json&) {});
        Write(dir + "/" + pack::kRunHead, Read(old_files[pack::kRunHead]));
      },
      true));
  ExpectFailure(r, pack::kRunHead, -1, "the proof leads to map root ");
}

TEST_F(PackTest, ReorderedEntriesAndASwappedProofHashAreRefused) {
  std::string p6 = Export({"", "", 0, 16}, "p6.tar.gz");
  std::string p = Export({"", "", 0, 16}, "p.tar.gz", 5);
  for (const std::string& pack : {p6, p}) {
    std::string reordered = Tamper(
        pack,
        [&](const std::string& dir) {
          for (const char* f : {"entries.jsonl", "proofs.jsonl"}) {
            if (!std::filesystem::exists(dir + "/" + f)) continue;
            std::istringstream in(Read(dir + "/" + f));
            std::vector<std::string> lines;
            std::string line;
            while (std::getline(in, line)) lines.push_back(line);
            std::swap(lines[4], lines[5]);
            std::string out;
            for (const auto& l : lines) out += l + "\n";
            Write(dir + "/" + f, out);
          }
        },
        /*resign=*/true);
    verify::Result r = Verify(reordered);
    // The first entry out of place is reported: 5 where 4 belongs.
    ExpectFailure(r, pack::kEntries, 5, "seq expected 4 (the range has a gap)");
  }

  std::string swapped = Tamper(
      p,
      [&](const std::string& dir) {
        std::string proofs = Read(dir + "/proofs.jsonl");
        size_t at = proofs.find("\"inclusion\":[\"") + 14;
        proofs[at] = proofs[at] == 'a' ? 'b' : 'a';
        Write(dir + "/proofs.jsonl", proofs);
      },
      /*resign=*/true);
  verify::Result s = Verify(swapped);
  ExpectFailure(s, pack::kProofs, 0, "inclusion: proof for index 0 leads to root ");
}

TEST_F(PackTest, ACheckpointFromAnotherKeyIsRefused) {
  std::string p = Export({"team-a", "run-0"}, "p.tar.gz");
  auto other = *note::Signer::Generate("ledger.test/packs");
  std::string t = Tamper(
      p,
      [&](const std::string& dir) {
        auto cp = *note::Verifier::Parse(log_->verifier_key())->Open(Read(dir + "/checkpoint"));
        Write(dir + "/checkpoint", *other.Sign(cp));
      },
      /*resign=*/true);
  verify::Result r = Verify(t);
  ExpectFailure(r, pack::kCheckpoint, -1, "signed note: no signature by ledger.test/packs+");
}

TEST_F(PackTest, ChangedOutcomesAreRefused) {
  std::string p = Export({"team-a", "run-0"}, "p.tar.gz");
  std::string t = Tamper(
      p,
      [&](const std::string& dir) {
        std::string o = Read(dir + "/outcomes.json");
        size_t at = o.find("\"state\":\"pending\"") + 8;
        o.replace(at, 9, "\"succeeded\"");
        Write(dir + "/outcomes.json", o);
      },
      /*resign=*/true);
  ExpectFailure(Verify(t), pack::kOutcomes, -1, "differs from the outcomes recomputed");
}

TEST_F(PackTest, HostileArchivesAreRefused) {
  std::string junk = dir_.Sub("junk.tar.gz");
  Write(junk, "this is not a gzip stream");
  verify::Result r = Verify(junk);
  EXPECT_EQ(r.file, "archive");
  // A link and a name with "..", made with the system's tar.
  std::string d = dir_.Sub("h");
  std::filesystem::create_directories(d + "/evidence");
  std::filesystem::create_symlink("/etc/passwd", d + "/evidence/checkpoint");
  std::string link = dir_.Sub("link.tar.gz");
  ASSERT_EQ(std::system(("tar -czf " + link + " -C " + d + " evidence/checkpoint").c_str()), 0);
  EXPECT_EQ(Verify(link).message, "pack: entry 'evidence/checkpoint': not a regular file");
  // A top folder's directory entry other than the exporter's (mtime 0).
  std::string folder = dir_.Sub("folder.tar.gz");
  ASSERT_EQ(std::system(("tar --mtime=@5 --mode=0755 -czf " + folder + " -C " + d + " evidence").c_str()), 0);
  EXPECT_EQ(Verify(folder).message, "pack: entry 'evidence/': mtime 5, want 0");
  std::filesystem::remove_all(d + "/evidence");
  std::filesystem::create_directories(d + "/a");
  Write(d + "/a/x", "x");
  std::string dots = dir_.Sub("dots.tar.gz");
  ASSERT_EQ(std::system(("tar -czPf " + dots + " -C " + d + "/a ../a/x").c_str()), 0);
  EXPECT_EQ(Verify(dots).message.substr(0, 15), "pack: entry '..");
}

}  // namespace
}  // namespace ledger

namespace ledger {
namespace {

using cosign::Cosigner;

// A pack whose checkpoint carries the lines `cosign` adds (the exporter's
// hook ledgerd fills from its witnesses).
class WitnessedPackTest : public PackTest {
 protected:
  std::string ExportCosigned(const std::string& name, const std::function<std::string(const std::string&)>& lines) {
    std::string path = dir_.Sub(name);
    auto cosign = [&](const std::string& note) -> absl::StatusOr<std::string> {
      return note + lines(note.substr(0, note.find("\n\n") + 1));
    };
    absl::Status s = exporter::ExportPack(*log_, {"team-a", "run-1"}, path, {.cosign = cosign});
    EXPECT_TRUE(s.ok()) << s;
    return path;
  }
  absl::StatusOr<verify::Result> VerifyUnder(const std::string& pack, const std::string& policy, bool with_key) {
    verify::Options o;
    if (with_key) o.vkey = log_->verifier_key();
    o.policy = *tlogpolicy::Policy::Parse(policy);
    return verify::VerifyPack(pack, o);
  }
  std::string Policy(const std::string& quorum) const {
    return absl::StrCat("log ", log_->verifier_key(), "\nwitness A ", a_.VerifierKey(), "\nwitness B ",
                        b_.VerifierKey(), "\ngroup both all A B\nquorum ", quorum, "\n");
  }
  Cosigner a_ = *Cosigner::FromSeed("a.example/w", std::string(32, '\x0a'));
  Cosigner b_ = *Cosigner::FromSeed("b.example/w", std::string(32, '\x0b'));
  Cosigner stranger_ = *Cosigner::FromSeed("c.example/w", std::string(32, '\x0c'));
};

TEST_F(WitnessedPackTest, ThePackCarriesTheCosignedCheckpointAndAPolicyChecksItsQuorum) {
  std::string pack = ExportCosigned("both.tar.gz", [&](const std::string& text) {
    return *a_.Cosign(text, 4102444800) + *stranger_.Cosign(text, 5) + *b_.Cosign(text, 4102444801);
  });
  // Without a policy, the lines change nothing.
  EXPECT_TRUE(Verify(pack).ok) << Verify(pack).message;
  auto r = VerifyUnder(pack, Policy("both"), true);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->ok) << r->message;
  EXPECT_EQ(r->quorum, "both");
  std::string summary = r->Summary();
  EXPECT_NE(summary.find("\nwitnessed: quorum both met; cosigned by A at 2100-01-01T00:00:00Z (4102444800), B at "
                         "2100-01-01T00:00:01Z (4102444801)\n"),
            std::string::npos)
      << summary;  // the stranger's line is ignored
  EXPECT_EQ(r->Json()["witnessed"]["cosigned"].size(), 2u);
  // No key given: the policy's log named as the pack's key.
  auto keyless = VerifyUnder(pack, Policy("both"), false);
  ASSERT_TRUE(keyless.ok()) << keyless.status();
  EXPECT_TRUE(keyless->ok) << keyless->message;
  auto unnamed = VerifyUnder(
      pack, absl::StrCat("log ", note::Signer::Generate("other.example/log")->VerifierKey(), "\nquorum none\n"), false);
  EXPECT_EQ(unnamed.status(), absl::InvalidArgumentError("--policy: no log of the policy is named ledger.test/packs"));
}

TEST_F(WitnessedPackTest, AMissingForgedOrUnlistedCosignatureIsRefused) {
  std::string only_a =
      ExportCosigned("a.tar.gz", [&](const std::string& text) { return *a_.Cosign(text, 4102444800); });
  auto r = VerifyUnder(only_a, Policy("both"), true);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectFailure(*r, pack::kCheckpoint, -1, "the policy's quorum both is not met: no cosignature from B; cosigned by A");
  EXPECT_EQ(r->message.size(),
            std::string("the policy's quorum both is not met: no cosignature from B; cosigned by A").size());
  EXPECT_TRUE(VerifyUnder(only_a, Policy("A"), true)->ok);
  // B's line made over another checkpoint, pasted in.
  std::string forged = ExportCosigned("forged.tar.gz", [&](const std::string& text) {
    return *a_.Cosign(text, 4102444800) + *b_.Cosign("ledger.test/packs\n1\nAAAA\n", 4102444800);
  });
  ExpectFailure(*VerifyUnder(forged, Policy("A"), true), pack::kCheckpoint, -1,
                "the cosignature of witness B does not verify");
  // A ledger key the policy does not list.
  std::string other = absl::StrCat("log ", note::Signer::Generate("ledger.test/packs")->VerifierKey(), "\nwitness A ",
                                   a_.VerifierKey(), "\nquorum A\n");
  auto unlisted = VerifyUnder(only_a, other, true);
  ASSERT_TRUE(unlisted.ok()) << unlisted.status();
  ExpectFailure(
      *unlisted, pack::kCheckpoint, -1,
      absl::StrCat("the ledger's key ", log_->verifier_key().substr(0, std::string("ledger.test/packs+").size() + 8),
                   " is not a log of the policy"));
  // The lines are covered by the signed manifest: stripped, the pack fails its digest.
  std::string stripped = Tamper(
      only_a,
      [&](const std::string& dir) {
        std::string cp = Read(dir + "/" + pack::kCheckpoint);
        Write(dir + "/" + pack::kCheckpoint, cp.substr(0, cp.rfind("\xe2\x80\x94 a.example/w")));
      },
      false);
  ExpectFailure(Verify(stripped), pack::kCheckpoint, -1, "SHA-256 expected");
}

}  // namespace
}  // namespace ledger
