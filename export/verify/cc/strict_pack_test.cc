// A pack read strictly (CONTRACT section 7): what the contract does not
// allow, or what two readers could read two ways, is refused with a
// message naming the file and the rule, even when the forger re-signs the
// manifest with the ledger's key; and the cheap checks of the signed time
// and the kept notes against the pack.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/flags.h"
#include "cmd/verify_options.h"
#include "export/exporter/exporter.h"
#include "export/manifest/manifest.h"
#include "export/pack/pack.h"
#include "export/pack/team_window.h"
#include "export/verify/cc/internal/strict_json.h"
#include "export/verify/cc/pack_test_fixture.h"
#include "export/verify/cc/verify.h"
#include "gtest/gtest.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/runmap/proof_json.h"
#include "ledger/format/runmap/runmap.h"

namespace ledger {
namespace {

const std::string kZeros(64, '0');

TEST(StrictJsonTest, AKeyTwiceInAnyObjectIsFoundAndRefused) {
  EXPECT_EQ(verify::DuplicateKey(R"({"a":1,"b":{"c":1,"c":2}})"), "c");
  EXPECT_EQ(verify::DuplicateKey(R"({"a":[{"x":1},{"x":2}],"a":3})"), "a");
  EXPECT_EQ(verify::DuplicateKey(R"({"":1,"":2})"), "");
  EXPECT_EQ(verify::DuplicateKey(R"({"a":[{"x":1},{"x":2}],"b":{"a":1}})"), std::nullopt);
  EXPECT_EQ(verify::DuplicateKey("not json"), std::nullopt);
  EXPECT_EQ(verify::ParseStrictJson(R"({"proof":[],"proof":[]})").status(),
            absl::InvalidArgumentError("key proof twice"));
  EXPECT_EQ(verify::ParseStrictJson("{").status(), absl::InvalidArgumentError("not JSON"));
}

class StrictPackTest : public PackTest {
 protected:
  std::string RunPack() { return Export({"team-a", "run-1"}, "run.tar.gz"); }

  // The pack with `edit` applied to the file `name`, the manifest re-signed.
  std::string Edited(const std::string& pack, const std::string& name, const std::function<void(std::string&)>& edit) {
    return Tamper(
        pack,
        [&](const std::string& dir) {
          std::string data = Read(dir + "/" + name);
          edit(data);
          Write(dir + "/" + name, data);
        },
        /*resign=*/true);
  }

  // The pack's files extracted into a new directory "<dir>/evidence".
  std::string Unpacked(const std::string& pack) {
    std::string dir = dir_.Sub("u" + std::to_string(++unpacked_));
    std::filesystem::create_directories(dir + "/evidence");
    EXPECT_TRUE(pack::ExtractArchive(pack, dir + "/evidence", pack::Limits()).ok());
    return dir;
  }

  // The files of `dir`/evidence archived by the system's tar, in the order
  // of `names`, with `options` (GNU tar's --mode, --mtime).
  std::string SystemTar(const std::string& dir, const std::vector<std::string>& names, const std::string& options) {
    std::string out = dir + ".tar.gz", list;
    for (const auto& n : names) list += " evidence/" + n;
    std::string cmd = absl::StrCat("tar --format=ustar --owner=0 --group=0 --numeric-owner --no-recursion ", options,
                                   " -czf ", out, " -C ", dir, list);
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out;
  }

  std::vector<std::string> SortedNames(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& f : std::filesystem::directory_iterator(dir + "/evidence")) {
      names.push_back(f.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  // A note the forger signs with the ledger's key.
  std::string Signed(const std::string& text) { return *log_->SignNoteAt(0, text); }

  verify::Result VerifyWith(const std::string& pack, const std::function<void(verify::Options&)>& set) {
    verify::Options o;
    o.vkey = log_->verifier_key();
    set(o);
    auto r = verify::VerifyPack(pack, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : verify::Result();
  }

  int unpacked_ = 0;
};

// Before: nlohmann::json kept the second "inclusion" and the pack verified.
TEST_F(StrictPackTest, AProofLineWithInclusionTwiceIsRefused) {
  std::string p = Edited(Export({"team-a", "run-1"}, "run5.tar.gz", 5), pack::kProofs, [](std::string& proofs) {
    proofs.replace(proofs.find("\"inclusion\":["), 13, "\"inclusion\":[\"" + kZeros + "\"],\"inclusion\":[");
  });
  verify::Result r = Verify(p);
  ExpectFailure(r, pack::kProofs, 8, "line 1: key inclusion twice");
  EXPECT_EQ(r.message, "line 1: key inclusion twice");
}

// Before: run-head.json and team-window.json were read with the last
// "head" kept, and both packs verified.
TEST_F(StrictPackTest, ARunHeadOrTeamWindowWithHeadTwiceIsRefused) {
  const std::string bogus_head = "\"head\":{\"count\":1,\"last_seq\":0,\"last_leaf_hash\":\"" + kZeros + "\"},";
  std::string run =
      Edited(RunPack(), pack::kRunHead, [&](std::string& j) { j.insert(j.find("\"head\":"), bogus_head); });
  verify::Result r = Verify(run);
  ExpectFailure(r, pack::kRunHead, -1, "key head twice");
  EXPECT_EQ(r.message, "key head twice");

  std::string window = Export({"team-a", "", 0, 0, 0, int64_t{1} << 62}, "w.tar.gz");
  std::string twice = Edited(window, pack::kTeamWindow, [&](std::string& j) {
    j.insert(j.find("\"head\":{\"key\""), "\"head\":{\"key\":\"" + kZeros + "\",\"siblings\":[]},");
  });
  verify::Result w = Verify(twice);
  ExpectFailure(w, pack::kTeamWindow, -1, "key head twice");
  EXPECT_EQ(w.message, "key head twice");
}

class SincePackTest : public StrictPackTest {
 protected:
  // A run pack exported since the checkpoint `kept` (its note and time
  // note), and the auditor's kept file.
  std::string SincePack(const std::string& kept, const std::string& name) {
    std::string path = dir_.Sub(name);
    absl::Status s =
        exporter::ExportPack(*log_, {"team-a", "run-1"}, path, {.since = verify::SplitKeptCheckpoint(kept).checkpoint});
    EXPECT_TRUE(s.ok()) << s;
    return path;
  }
  std::string Kept() {
    auto cp = *log_->Checkpoint(0);
    return cp.note + cp.time_note;
  }
  verify::Result VerifySince(const std::string& pack, const std::string& kept) {
    return VerifyWith(pack, [&](verify::Options& o) { o.since = kept; });
  }
};

// Before: a consistency.json with "proof" twice (a bogus one first) or with
// a key of its own verified.
TEST_F(SincePackTest, ConsistencyWithProofTwiceOrAnotherKeyIsRefused) {
  std::string kept = Kept();
  Append({R"({"receipt_id":"late","kind":"tool_call","team":"team-a","run_id":"run-1","occurred_at_us":9,)"
          R"("tool":"git","decision":"allow"})"});
  std::string p = SincePack(kept, "since.tar.gz");
  EXPECT_TRUE(VerifySince(p, kept).ok) << VerifySince(p, kept).Summary();
  std::string twice = Edited(p, pack::kConsistency,
                             [](std::string& c) { c.insert(c.find("\"proof\":"), "\"proof\":[\"" + kZeros + "\"],"); });
  verify::Result r = VerifySince(twice, kept);
  ExpectFailure(r, pack::kConsistency, -1, "key proof twice");
  EXPECT_EQ(r.Summary(), "FAILED: consistency.json: key proof twice\n");
  std::string extra = Edited(p, pack::kConsistency, [](std::string& c) { c.insert(1, "\"note\":\"x\","); });
  verify::Result e = VerifySince(extra, kept);
  ExpectFailure(e, pack::kConsistency, -1, "note: not a field");
  EXPECT_EQ(e.message, "note: not a field");
}

// Before: at exactly the --since size, a pack without consistency.json
// verified ("The checkpoint is consistent with the earlier one").
TEST_F(SincePackTest, AtTheSinceSizeConsistencyJsonIsRequired) {
  std::string kept = Kept();
  std::string p = SincePack(kept, "same.tar.gz");
  verify::Result genuine = VerifySince(p, kept);
  EXPECT_TRUE(genuine.ok) << genuine.Summary();
  // Removed, and the manifest re-signed without it.
  std::string resigned = Tamper(
      p,
      [&](const std::string& dir) {
        std::filesystem::remove(dir + "/" + pack::kConsistency);
        nlohmann::json m = nlohmann::json::parse(Read(dir + "/" + pack::kManifest));
        m["files"].erase(pack::kConsistency);
        Write(dir + "/" + pack::kManifest, m.dump() + "\n");
      },
      /*resign=*/true);
  verify::Result r = VerifySince(resigned, kept);
  ExpectFailure(r, pack::kConsistency, -1, "missing: --since asks for consistency with the checkpoint at size 16");
}

// 15 (a). Before: a kept note of the pack's very size that signs other map
// roots than the pack's note was not compared, and the pack verified.
TEST_F(SincePackTest, AKeptNoteOfTheSameSizeMustSignTheSameMapRoots) {
  auto cp = *log_->Checkpoint(0);
  auto verifier = *note::Verifier::Parse(log_->verifier_key());
  auto time = *note::ParseCheckpointTime(*verifier.Open(cp.time_note));
  const std::string genuine_runs = hash::Hex(*time.run_map_root);
  time.run_map_root = hash::Sha256("another run-head map");
  std::string kept = cp.note + Signed(note::FormatCheckpointTime(time));
  std::string p = SincePack(kept, "same.tar.gz");
  verify::Result r = VerifySince(p, kept);
  ExpectFailure(r, pack::kCheckpointTime, -1, "");
  EXPECT_EQ(r.message, "runs root " + genuine_runs +
                           " at tree size 16, the note kept with the checkpoint given with --since signs " +
                           hash::Hex(*time.run_map_root) + " at that size");
  // The same kept note given with --not-older-than.
  verify::Result n = VerifyWith(RunPack(), [&](verify::Options& o) {
    o.not_older_than = 16;
    o.not_older_than_root = cp.root;
    o.not_older_than_time_us = time.time_us;
    o.not_older_than_note_version = time.version();
    o.not_older_than_run_map_root = time.run_map_root;
    o.not_older_than_team_map_root = time.team_map_root;
  });
  ExpectFailure(n, pack::kCheckpointTime, -1, "runs root " + genuine_runs + " at tree size 16, the note kept with");
  EXPECT_NE(n.message.find("given with --not-older-than"), std::string::npos) << n.message;
}

// A ledger that begins to key runs by team signs its latest checkpoint again
// with a version 4 note: a version 3 note kept of that size signs another
// runs root (of v1 keys), and that is no lie; its teams root is still the
// one root of that tree. A kept version 4 note asks for a version 4 note.
TEST_F(SincePackTest, AKeptVersion3NoteOfTheSameSizeKeysRunsOtherwise) {
  auto cp = *log_->Checkpoint(0);
  auto verifier = *note::Verifier::Parse(log_->verifier_key());
  auto time = *note::ParseCheckpointTime(*verifier.Open(cp.time_note));
  ASSERT_EQ(time.version(), 4);
  note::CheckpointTime v3 = time;
  v3.runs_keyed_by_team = false;
  v3.run_map_root = hash::Sha256("the runs root under v1 keys");
  std::string kept = cp.note + Signed(note::FormatCheckpointTime(v3));
  verify::Result r = VerifySince(SincePack(kept, "v3.tar.gz"), kept);
  EXPECT_TRUE(r.ok) << r.message;
  v3.team_map_root = hash::Sha256("another team-head map");
  kept = cp.note + Signed(note::FormatCheckpointTime(v3));
  r = VerifySince(SincePack(kept, "v3-teams.tar.gz"), kept);
  ExpectFailure(r, pack::kCheckpointTime, -1, "teams root ");
  // A pack re-signed with a version 3 note (its runs proof as v1 keys give
  // it) and made format 4, given the kept version 4 note.
  note::CheckpointTime downgraded = time;
  downgraded.runs_keyed_by_team = false;
  // (A format 5 pack: a format 4 one proves inclusion with proofs.jsonl.)
  std::string p = Tamper(
      Export({"team-a", "run-1"}, "run5.tar.gz", 5),
      [&](const std::string& dir) {
        Write(dir + "/" + pack::kCheckpointTime, Signed(note::FormatCheckpointTime(downgraded)));
        nlohmann::json m = nlohmann::json::parse(Read(dir + "/" + pack::kManifest));
        m["format"] = 4;
        Write(dir + "/" + pack::kManifest, m.dump() + "\n");
      },
      /*resign=*/true);
  verify::Result n = VerifyWith(p, [&](verify::Options& o) {
    o.not_older_than = 16;
    o.not_older_than_root = cp.root;
    o.not_older_than_time_us = time.time_us;
    o.not_older_than_note_version = 4;
  });
  ExpectFailure(n, pack::kCheckpointTime, -1,
                "a version 3 note, but the checkpoint given with --not-older-than has a version 4 note: a ledger that "
                "keys runs by team does so with every later checkpoint");
}

// Before: members out of order, of mode 0600 or mtime 1 were read as any
// others and the pack verified.
TEST_F(StrictPackTest, TarMembersOutOfOrderOrOfAnotherModeOrMtimeAreRefused) {
  std::string dir = Unpacked(RunPack());
  std::vector<std::string> names = SortedNames(dir);
  const std::string exact = "--mode=0644 --mtime=@0";
  // The same files, tarred by the system's tar as the exporter would: they hold.
  std::string same = SystemTar(dir, names, exact);
  EXPECT_TRUE(Verify(same).ok) << Verify(same).Summary();

  std::vector<std::string> swapped = names;
  std::swap(swapped[0], swapped[1]);  // checkpoint-time before checkpoint
  verify::Result r = Verify(SystemTar(dir, swapped, exact));
  ExpectFailure(r, "archive", -1, "");
  EXPECT_EQ(r.message,
            "pack: entry 'evidence/checkpoint': not in sorted name order: it follows "
            "'evidence/checkpoint-time'");
  verify::Result m = Verify(SystemTar(dir, names, "--mode=0600 --mtime=@0"));
  EXPECT_EQ(m.message, "pack: entry 'evidence/checkpoint': mode 0600, want 0644");
  verify::Result t = Verify(SystemTar(dir, names, "--mode=0644 --mtime=@1"));
  EXPECT_EQ(t.message, "pack: entry 'evidence/checkpoint': mtime 1, want 0");
}

// Before: bytes after the last gzip member were never read, and the pack
// verified; in a blocked pack (the exporter's) and a plain gzip one alike.
TEST_F(StrictPackTest, BytesAfterTheGzipStreamAreRefused) {
  std::string p = RunPack();
  std::string blocked = dir_.Sub("blocked.tar.gz");
  Write(blocked, Read(p) + "x");
  verify::Result r = Verify(blocked);
  ExpectFailure(r, "archive", -1, "pack: bytes after the gzip stream");
  std::string dir = Unpacked(p);
  std::string plain = SystemTar(dir, SortedNames(dir), "--mode=0644 --mtime=@0");
  ASSERT_TRUE(Verify(plain).ok);
  std::string padded = dir_.Sub("padded.tar.gz");
  Write(padded, Read(plain) + std::string(8, '\0'));
  verify::Result z = Verify(padded);
  ExpectFailure(z, "archive", -1, "pack: bytes after the gzip stream, at byte ");
}

// Before: a witness's second cosignature line made the verifiers refuse a
// valid pack ("the cosignature of witness A does not verify").
class StrictWitnessTest : public StrictPackTest {
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
  verify::Result VerifyUnder(const std::string& pack, const std::string& quorum) {
    return VerifyWith(pack, [&](verify::Options& o) {
      o.policy = *tlogpolicy::Policy::Parse(absl::StrCat("log ", log_->verifier_key(), "\nwitness A ", a_.VerifierKey(),
                                                         "\nwitness B ", b_.VerifierKey(),
                                                         "\ngroup both all A B\nquorum ", quorum, "\n"));
    });
  }
  // 2100-01-01T00:00:00Z: after any time the ledger signs in a test.
  static constexpr uint64_t kLater = 4102444800;
  cosign::Cosigner a_ = *cosign::Cosigner::FromSeed("a.example/w", std::string(32, '\x0a'));
  cosign::Cosigner b_ = *cosign::Cosigner::FromSeed("b.example/w", std::string(32, '\x0b'));
};

TEST_F(StrictWitnessTest, TwoValidCosignaturesByOneWitnessCountOnce) {
  std::string p = ExportCosigned("twice.tar.gz", [&](const std::string& text) {
    return *a_.Cosign(text, kLater) + *a_.Cosign(text, kLater + 1) + *b_.Cosign(text, kLater);
  });
  verify::Result r = VerifyUnder(p, "both");
  ASSERT_TRUE(r.ok) << r.Summary();
  ASSERT_EQ(r.cosigned.size(), 2u);
  EXPECT_EQ(r.cosigned[0].witness, "A");
  EXPECT_EQ(r.cosigned[1].witness, "B");
  // One of them forged: refused.
  std::string forged = ExportCosigned("forged.tar.gz", [&](const std::string& text) {
    return *a_.Cosign(text, kLater) + *a_.Cosign("ledger.test/packs\n1\nAAAA\n", kLater);
  });
  ExpectFailure(VerifyUnder(forged, "A"), pack::kCheckpoint, -1, "the cosignature of witness A does not verify");
}

// 15 (b). Before: neither was compared, and both packs verified.
TEST_F(StrictWitnessTest, ASignedTimeAfterACosignatureOrBeforeAnEntryIsRefused) {
  std::string early = ExportCosigned("early.tar.gz", [&](const std::string& text) { return *a_.Cosign(text, 7); });
  verify::Result r = VerifyUnder(early, "A");
  ExpectFailure(r, pack::kCheckpointTime, -1, "time ");
  EXPECT_NE(r.message.find(" is after the cosignature time 7 of witness A: a witness cosigns a checkpoint after the "
                           "ledger signed it"),
            std::string::npos)
      << r.message;

  auto cp = *log_->Checkpoint(0);
  auto verifier = *note::Verifier::Parse(log_->verifier_key());
  auto time = *note::ParseCheckpointTime(*verifier.Open(cp.time_note));
  time.time_us = 1;
  std::string backdated =
      Edited(RunPack(), pack::kCheckpointTime, [&](std::string& t) { t = Signed(note::FormatCheckpointTime(time)); });
  verify::Result b = Verify(backdated);
  ExpectFailure(b, pack::kCheckpointTime, -1, "time 1970-01-01T00:00:00.000001Z (1 us) is before entry ");
  EXPECT_NE(b.message.find(": the ledger signs a checkpoint after it logs its entries"), std::string::npos)
      << b.message;
}

// 15 (c). Before: a pack of version 2 leaves re-signed with a version 2
// note (its team-head map root dropped) and made format 3 verified.
TEST_F(StrictPackTest, VersionTwoLeavesNeedAVersionThreeNote) {
  auto cp = *log_->Checkpoint(0);
  auto verifier = *note::Verifier::Parse(log_->verifier_key());
  auto time = *note::ParseCheckpointTime(*verifier.Open(cp.time_note));
  time.team_map_root.reset();
  std::string p = Tamper(
      Export({"", "", 3, 11}, "seq.tar.gz", 5),
      [&](const std::string& dir) {
        Write(dir + "/" + pack::kCheckpointTime, Signed(note::FormatCheckpointTime(time)));
        nlohmann::json m = nlohmann::json::parse(Read(dir + "/" + pack::kManifest));
        m["format"] = 3;
        Write(dir + "/" + pack::kManifest, m.dump() + "\n");
      },
      /*resign=*/true);
  verify::Result r = Verify(p);
  ExpectFailure(r, pack::kCheckpointTime, -1,
                "a version 2 note, but entries.jsonl holds a leaf of version 2 (seq 3): a ledger that writes version 2 "
                "leaves signs version 3 notes");
}

// 15 (d). Before: there was no way to pin the grace.
TEST_F(StrictPackTest, AnotherGraceThanTheOneExpectedIsRefused) {
  std::string p = RunPack();
  EXPECT_TRUE(VerifyWith(p, [](verify::Options& o) { o.expect_grace_ms = exporter::kDefaultUnknownGraceMs; }).ok);
  verify::Result r = VerifyWith(p, [](verify::Options& o) { o.expect_grace_ms = 5000; });
  ExpectFailure(r, pack::kManifest, -1, "unknown_grace_ms: 30000, the auditor expects 5000 (--expect-grace-ms)");
}

// Before: a ledger.vkey without its newline verified; the rule is one line
// and one LF.
TEST_F(StrictPackTest, ALedgerVkeyThatIsNotOneLineIsRefused) {
  std::string p = RunPack();
  for (const char* form : {"", "\r\n", "\n\n"}) {
    std::string t = Edited(p, pack::kVkey, [&](std::string& k) { k = log_->verifier_key() + form; });
    ExpectFailure(Verify(t), pack::kVkey, -1, "want one line ending in a newline");
  }
}

// Before: the last line of entries.jsonl (or proofs.jsonl) without its
// newline was read as a line, and the pack verified.
TEST_F(StrictPackTest, ALastLineWithoutItsNewlineIsRefused) {
  std::string p6 = RunPack(), p5 = Export({"team-a", "run-1"}, "run5.tar.gz", 5);
  for (auto [p, name] :
       {std::pair{p6, pack::kEntries}, std::pair{p5, pack::kProofs}, std::pair{p6, pack::kMultiproof}}) {
    size_t lines = 0;
    std::string t = Edited(p, name, [&](std::string& text) {
      lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
      text.pop_back();
    });
    ASSERT_GT(lines, 0u) << name;
    verify::Result r = Verify(t);
    std::string want = absl::StrCat("line ", lines, ": no newline at its end");
    ExpectFailure(r, name, -1, want);
    EXPECT_EQ(r.message, want);
  }
}

// Before: "larger than 1048576 bytes".
TEST_F(StrictPackTest, ARunHeadPaddedPastOneMebibyteIsRefused) {
  std::string t = Edited(RunPack(), pack::kRunHead, [](std::string& j) { j.insert(1, std::string(1 << 20, ' ')); });
  ExpectFailure(Verify(t), pack::kRunHead, -1, "larger than 1 MiB");
}

// Before: refused for another reason ("run-head.json: only a run pack
// carries a run-head proof"); section 7's table decides.
TEST_F(StrictPackTest, AFormatTwoPackWithAMapRootNoteIsRefused) {
  std::string t = Edited(Export({"team-a", "run-1"}, "run5.tar.gz", 5), pack::kManifest, [](std::string& text) {
    nlohmann::json m = nlohmann::json::parse(text);
    m["format"] = 2;
    text = m.dump() + "\n";
  });
  ExpectFailure(Verify(t), pack::kCheckpointTime, -1, "format 2 pack with a version 4 note");
}

// Before: "scope.to_us: want from_us < to_us".
TEST_F(StrictPackTest, ATeamWindowOfNoTimeIsRefused) {
  std::string t =
      Edited(Export({"team-a", "", 0, 0, 0, int64_t{1} << 62}, "w.tar.gz"), pack::kManifest, [](std::string& text) {
        nlohmann::json m = nlohmann::json::parse(text);
        m["scope"]["to_us"] = m["scope"]["from_us"];
        text = m.dump() + "\n";
      });
  ExpectFailure(Verify(t), pack::kManifest, -1, "scope.from_us: want less than to_us");
}

// Item 10: an emitter names a step so that printing it erases the line
// and writes a fake verdict. The forger, holding the ledger's key, makes up
// a log of the run alone (version 1 leaves, format 3: a version 2 time note
// with its run-head map root and the run's head proof) with the step so
// named, and signs it all. `signed_after_us` after the last entry, the
// step is still within its deadline, or past it.
class HostileNameTest : public StrictPackTest {
 protected:
  static constexpr char kHostile[] = "step\r\x1b[2KOK: verified...";

  std::string ForgedRunPack(int64_t signed_after_us, const std::string& name) {
    std::string dir = Unpacked(RunPack()) + "/evidence";
    std::vector<receipt::Entry> entries;
    std::vector<std::string> leaves;
    std::vector<hash::Hash> hashes;
    std::istringstream in(Read(dir + "/" + pack::kEntries));
    for (std::string line; std::getline(in, line);) {
      receipt::Entry e = *receipt::ParseLeaf(line);
      if (e.receipt.step_id() == "s2") e.receipt.set_step_id(kHostile);
      const uint64_t seq = leaves.size();
      std::optional<uint64_t> run_prev;
      if (seq > 0) run_prev = seq - 1;
      leaves.push_back(receipt::EncodeLeaf(seq, seq > 0 ? hashes.back() : hash::Hash{}, run_prev, e.logged_at_us,
                                           e.emitter, receipt::Encode(e.receipt)));
      hashes.push_back(hash::LeafHash(leaves.back()));
      entries.push_back(*receipt::ParseLeaf(leaves.back()));
    }
    std::function<absl::StatusOr<hash::Hash>(int, uint64_t)> node = [&](int level,
                                                                        uint64_t index) -> absl::StatusOr<hash::Hash> {
      if (level == 0) return hashes[index];
      return hash::NodeHash(*node(level - 1, 2 * index), *node(level - 1, 2 * index + 1));
    };
    const uint64_t n = leaves.size();
    note::Checkpoint cp{"ledger.test/packs", n, *merkle::RootHash(n, node)};
    std::string entries_text, proofs_text;
    for (uint64_t i = 0; i < n; ++i) {
      entries_text += leaves[i] + "\n";
      auto proof = merkle::InclusionProof(i, n, node);
      EXPECT_TRUE(proof.ok()) << proof.status();
      nlohmann::json path = nlohmann::json::array();
      if (proof.ok()) {
        for (const hash::Hash& h : *proof) path.push_back(hash::Hex(h));
      }
      proofs_text += absl::StrCat("{\"seq\":", i, ",\"leaf_hash\":\"", hash::Hex(hashes[i]),
                                  "\",\"inclusion\":", path.dump(), "}\n");
    }
    runmap::RunMap runs;
    const runmap::Key key = *runmap::RunKey("team-a", "run-1", runmap::KeyVersion::kV1);  // a format 3 pack
    EXPECT_TRUE(runs.Set(key, runmap::Head{n, n - 1, hashes.back()}).ok());
    const int64_t signed_at = entries.back().logged_at_us + signed_after_us;
    std::map<std::string, std::string> files = {
        {pack::kCheckpoint, Signed(note::FormatCheckpoint(cp))},
        {pack::kCheckpointTime, Signed(note::FormatCheckpointTime({cp, signed_at, runs.Root(), std::nullopt, false}))},
        {pack::kRunHead, runmap::EncodeProof({key, *runs.Prove(key)}) + "\n"},
        {pack::kEntries, entries_text},
        {pack::kProofs, proofs_text},
        {pack::kVkey, log_->verifier_key() + "\n"}};
    pack::Outcomes outcomes;
    for (receipt::Entry& e : entries) EXPECT_TRUE(outcomes.Add(std::move(e)).ok());
    EXPECT_TRUE(outcomes.Write([&](std::string_view piece) { files[pack::kOutcomes].append(piece); }).ok());
    manifest::Manifest m;
    m.format = 3;
    m.origin = cp.origin;
    m.scope.team = "team-a";
    m.scope.run_id = "run-1";
    m.tree_size = n;
    m.root = hash::Hex(cp.root);
    m.entries = n;
    m.unknown_grace_ms = exporter::kDefaultUnknownGraceMs;
    EXPECT_TRUE(pack::WriteReport(m, outcomes, files[pack::kCheckpoint], files[pack::kCheckpointTime],
                                  [&](std::string_view piece) { files[pack::kReport].append(piece); })
                    .ok());
    for (const auto& [name, data] : files) m.files[name] = hash::Hex(hash::Sha256(data));
    files[pack::kManifest] = manifest::Encode(m);
    files[pack::kManifestSig] = Signed(hash::Hex(hash::Sha256(files[pack::kManifest])) + "\n");
    std::string forged = dir_.Sub(name), out = forged + ".tar.gz";
    std::filesystem::create_directories(forged);
    std::map<std::string, std::string> paths;
    for (const auto& [name, data] : files) {
      paths[name] = forged + "/" + name;
      Write(paths[name], data);
    }
    EXPECT_TRUE(pack::WriteArchive(paths, out).ok());
    return out;
  }

  // What `ledger-verify PACK --vkey-string KEY ARGS` and `ledgerctl verify`
  // (both cmd::RunVerify) write, and their exit code.
  struct Printed {
    int exit_code;
    std::string out, err;
  };
  Printed RunVerifier(const std::string& pack, const std::vector<std::string>& args) {
    cmd::Flags flags;
    cmd::DefineVerifyFlags(flags);
    std::vector<std::string> argv = {"ledger-verify", pack, "--vkey-string", log_->verifier_key()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> ptrs;
    for (std::string& a : argv) ptrs.push_back(a.data());
    EXPECT_TRUE(flags.Parse(static_cast<int>(ptrs.size()), ptrs.data(), 1).ok());
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    int code = cmd::RunVerify(flags, pack, "ledger-verify");
    std::string out = ::testing::internal::GetCapturedStdout();
    return {code, out, ::testing::internal::GetCapturedStderr()};
  }

  static bool HasTerminalControls(const std::string& bytes) {
    for (char c : bytes) {
      auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\n') || u == 0x7f) return true;
    }
    return false;
  }
};

// Before: "OK: ... team-a/run-1/step\r\x1b[2KOK: verified... attempt 1
// (pending): no completion in the log up to seq 7 (proven)." with the
// carriage return and the escape sequence written raw, so that a terminal
// showed the line as "OK: verified... attempt 1 (pending)...".
TEST_F(HostileNameTest, AStepIdIsPrintedWithItsControlCharactersEscaped) {
  std::string pack = ForgedRunPack(1'000'000, "within");
  verify::Result r = Verify(pack);
  ASSERT_TRUE(r.ok) << r.Summary();
  const std::string listed =
      "team-a/run-1/step\\x0d\\x1b[2KOK: verified... attempt 1 (pending): no completion in the log up to seq 7 "
      "(proven).\n";
  EXPECT_NE(r.Summary().find("\n" + listed), std::string::npos) << r.Summary();
  Printed text = RunVerifier(pack, {});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_EQ(text.out, r.Summary());
  EXPECT_FALSE(HasTerminalControls(text.out)) << text.out;
  EXPECT_EQ(text.err, "");
  Printed json = RunVerifier(pack, {"--json"});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_FALSE(HasTerminalControls(json.out)) << json.out;
  EXPECT_EQ(nlohmann::json::parse(json.out)["complete"]["no_completion_proven"][0],
            "team-a/run-1/step\r\x1b[2KOK: verified... attempt 1 (pending)");
}

// The same step past its deadline: the failure names it, escaped.
TEST_F(HostileNameTest, AFailureNamingTheStepIsEscapedToo) {
  std::string pack = ForgedRunPack(int64_t{3600} * 1'000'000, "past");
  const std::string shown = "step team-a/run-1/step\\x0d\\x1b[2KOK: verified... attempt 1 is pending, but its deadline";
  ExpectFailure(Verify(pack), pack::kOutcomes, -1, shown);
  Printed text = RunVerifier(pack, {});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_EQ(text.out.substr(0, 23 + shown.size()), "FAILED: outcomes.json: " + shown);
  EXPECT_FALSE(HasTerminalControls(text.out)) << text.out;
  Printed json = RunVerifier(pack, {"--json"});
  EXPECT_FALSE(HasTerminalControls(json.out)) << json.out;
  EXPECT_EQ(nlohmann::json::parse(json.out)["failure"]["message"].get<std::string>().substr(0, shown.size()), shown);
}

}  // namespace
}  // namespace ledger
