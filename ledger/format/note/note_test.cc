#include "ledger/format/note/note.h"

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/status_matchers.h"

namespace ledger::note {
namespace {

using ::ledger::testing::StatusIs;

nlohmann::json LoadCheckpointVector() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/checkpoint.json");
  return nlohmann::json::parse(in);
}

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

// The example in the documentation of Go's golang.org/x/mod/sumdb/note.
constexpr char kGoSignerKey[] = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
constexpr char kGoVerifierKey[] = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
constexpr char kGoText[] =
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n";
constexpr char kGoNote[] =
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
    "\n"
    "\xe2\x80\x94 PeterNeumann "
    "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";

TEST(NoteTest, GoDocumentationExampleVerifies) {
  auto v = Verifier::Parse(kGoVerifierKey);
  ASSERT_TRUE(v.ok()) << v.status();
  auto text = v->Open(kGoNote);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, kGoText);
}

TEST(NoteTest, GoDocumentationExampleSignsIdentically) {
  auto s = Signer::ParseKeyFile(kGoSignerKey);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->VerifierKey(), kGoVerifierKey);
  EXPECT_EQ(*s->Sign(kGoText), kGoNote);
  EXPECT_EQ(*s->KeyFileText(), std::string(kGoSignerKey) + "\n");
}

TEST(NoteTest, ContractVectorKeyIdVerifierKeyAndCheckpoint) {
  auto vec = LoadCheckpointVector();
  auto s = Signer::FromSeed(vec["origin"].get<std::string>(), Unhex(vec["ed25519_seed_hex"].get<std::string>()));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(hash::Hex(std::string_view(reinterpret_cast<const char*>(s->public_key().data()), 32)),
            vec["public_key_hex"].get<std::string>());
  char id[9];
  std::snprintf(id, sizeof id, "%08x", s->key_id());
  EXPECT_EQ(id, vec["key_id_hex"].get<std::string>());
  EXPECT_EQ(s->VerifierKey(), vec["verifier_key"].get<std::string>());

  Checkpoint c{vec["origin"], vec["tree_size"], *hash::ParseHex(vec["root_hex"].get<std::string>())};
  auto signed_note = s->Sign(FormatCheckpoint(c));
  ASSERT_TRUE(signed_note.ok());
  EXPECT_EQ(*signed_note, vec["checkpoint_note"].get<std::string>());

  auto v = Verifier::Parse(vec["verifier_key"].get<std::string>());
  ASSERT_TRUE(v.ok());
  auto text = v->Open(*signed_note);
  ASSERT_TRUE(text.ok());
  auto parsed = ParseCheckpoint(*text);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->origin, c.origin);
  EXPECT_EQ(parsed->size, 8u);
  EXPECT_EQ(parsed->root, c.root);
}

TEST(NoteTest, TamperedNoteIsRefused) {
  auto v = *Verifier::Parse(kGoVerifierKey);
  std::string note = kGoNote;
  note[3] = 'X';
  auto r = v.Open(note);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(r.status().message(), "signed note: signature by PeterNeumann+c74f20a3 does not verify");
}

TEST(NoteTest, NoteByAnotherKeyIsRefused) {
  auto other = *Signer::Generate("PeterNeumann");
  auto note = *other.Sign(kGoText);
  auto v = *Verifier::Parse(kGoVerifierKey);
  auto r = v.Open(note);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(r.status().message(), "signed note: no signature by PeterNeumann+c74f20a3");
}

TEST(NoteTest, ExtraSignaturesByOtherKeysAreIgnored) {
  auto other = *Signer::Generate("someone.else");
  std::string extra = *other.Sign(kGoText);
  std::string other_line = extra.substr(extra.rfind("\n\n") + 2);
  auto v = *Verifier::Parse(kGoVerifierKey);
  EXPECT_TRUE(v.Open(std::string(kGoNote) + other_line).ok());
}

TEST(NoteTest, MalformedNotes) {
  auto v = *Verifier::Parse(kGoVerifierKey);
  EXPECT_EQ(v.Open(kGoText).status().code(), absl::StatusCode::kInvalidArgument);
  std::string no_newline = kGoNote;
  no_newline.pop_back();
  EXPECT_EQ(v.Open(no_newline).status().message(), "signed note: does not end in a newline");
  std::string dash = kGoNote;
  dash.replace(dash.find("\xe2\x80\x94"), 3, "-");
  EXPECT_EQ(v.Open(dash).status().message(), "signed note: signature line does not start with an em dash and space");
  std::string control = kGoNote;
  control[0] = '\x01';
  EXPECT_EQ(v.Open(control).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NoteTest, KeyFileRoundTrip) {
  auto s = *Signer::Generate("ledger.example.com/prod");
  auto back = Signer::ParseKeyFile(*s.KeyFileText());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->VerifierKey(), s.VerifierKey());
  EXPECT_EQ(*back->Sign("a\n"), *s.Sign("a\n"));
}

TEST(NoteTest, BadKeysAreRefused) {
  EXPECT_THAT(Signer::ParseKeyFile("PRIVATE+KEY+x+00000000+AAAA"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "signing key: key data must be base64 of 0x01 and a 32-byte Ed25519 seed"));
  std::string wrong_id = kGoSignerKey;
  wrong_id.replace(wrong_id.find("c74f20a3"), 8, "c74f20a4");
  EXPECT_EQ(Signer::ParseKeyFile(wrong_id).status().message(),
            "signing key: key id c74f20a4 does not match the key (c74f20a3)");
  EXPECT_THAT(Verifier::Parse("PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"),
              StatusIs(absl::StatusCode::kInvalidArgument, "verifier key: key id c74f20a4 does not match the key"));
  EXPECT_THAT(Signer::FromSeed("has space", std::string(32, 'k')),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "key name: 'has space' must be non-empty UTF-8 without spaces or '+'"));
  EXPECT_THAT(
      Signer::FromSeed("a+b", std::string(32, 'k')),
      StatusIs(absl::StatusCode::kInvalidArgument, "key name: 'a+b' must be non-empty UTF-8 without spaces or '+'"));
  EXPECT_THAT(Signer::FromSeed("ok", std::string(31, 'k')),
              StatusIs(absl::StatusCode::kInvalidArgument, "signing key: Ed25519 seed must be 32 bytes"));
}

TEST(NoteTest, SignRefusesBadText) {
  auto s = *Signer::Generate("n");
  const std::string rule = "note text: must be UTF-8 lines each ending in a newline, no blank line";
  EXPECT_THAT(s.Sign(""), StatusIs(absl::StatusCode::kInvalidArgument, rule));
  EXPECT_THAT(s.Sign("no newline"), StatusIs(absl::StatusCode::kInvalidArgument, rule));
  EXPECT_THAT(s.Sign("a\n\nb\n"), StatusIs(absl::StatusCode::kInvalidArgument, rule));
}

TEST(CheckpointTest, ParseRejectsMalformedBodies) {
  const std::string lines = "checkpoint: want exactly three lines: origin, size, root";
  const std::string size = "checkpoint: size must be a decimal number without leading zeros";
  EXPECT_THAT(ParseCheckpoint("o\n1\n"), StatusIs(absl::StatusCode::kInvalidArgument, lines));
  EXPECT_THAT(ParseCheckpoint("o\n01\n" + hash::Base64(std::string(32, 'a')) + "\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, size));
  EXPECT_THAT(ParseCheckpoint("o\n-1\n" + hash::Base64(std::string(32, 'a')) + "\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, size));
  EXPECT_THAT(ParseCheckpoint("o\n1\n" + hash::Base64(std::string(31, 'a')) + "\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, "checkpoint: root must be base64 of 32 bytes"));
  EXPECT_THAT(ParseCheckpoint("o\n1\n" + hash::Base64(std::string(32, 'a')) + "\next\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, lines));
  auto ok = ParseCheckpoint("o\n0\n" + hash::Base64(std::string(32, 'a')) + "\n");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size, 0u);
}

nlohmann::json LoadVector(const std::string& file) {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/" + file);
  return nlohmann::json::parse(in);
}

// tests/vectors/checkpoint_time.json was made with Python's cryptography:
// the same bytes from the ledger's formatter and signer.
TEST(CheckpointTimeTest, ContractVectorFormatsSignsAndParses) {
  auto vec = LoadVector("checkpoint_time.json");
  auto s = Signer::FromSeed(vec["origin"].get<std::string>(), Unhex(vec["ed25519_seed_hex"].get<std::string>()));
  ASSERT_TRUE(s.ok()) << s.status();
  CheckpointTime t;
  t.checkpoint.origin = vec["origin"];
  t.checkpoint.size = vec["tree_size"];
  std::string root = Unhex(vec["root_hex"].get<std::string>());
  std::memcpy(t.checkpoint.root.data(), root.data(), 32);
  t.time_us = vec["time_us"];
  EXPECT_EQ(FormatCheckpointTime(t), vec["body"].get<std::string>());
  EXPECT_EQ(*s->Sign(FormatCheckpointTime(t)), vec["note"].get<std::string>());
  auto parsed = ParseCheckpointTime(vec["body"].get<std::string>());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->checkpoint.origin, t.checkpoint.origin);
  EXPECT_EQ(parsed->checkpoint.size, 8u);
  EXPECT_EQ(parsed->checkpoint.root, t.checkpoint.root);
  EXPECT_EQ(parsed->time_us, 1767225600000000);
}

// The version 2, 3 and 4 notes of the vectors (made with Python's
// cryptography) are what this code formats, signs and parses.
TEST(CheckpointTimeTest, ContractVectorsOfVersions2To4) {
  auto vec = LoadVector("checkpoint_time.json");
  auto s = Signer::FromSeed(vec["origin"].get<std::string>(), Unhex(vec["ed25519_seed_hex"].get<std::string>()));
  ASSERT_TRUE(s.ok()) << s.status();
  for (const char* version : {"v2", "v3", "v4"}) {
    SCOPED_TRACE(version);
    ASSERT_TRUE(vec.contains(version));
    const auto& v = vec[version];
    CheckpointTime t;
    t.checkpoint.origin = v["origin"];
    t.checkpoint.size = v["tree_size"];
    std::memcpy(t.checkpoint.root.data(), Unhex(v["root_hex"].get<std::string>()).data(), 32);
    t.time_us = v["time_us"];
    hash::Hash runs, teams;
    std::memcpy(runs.data(), Unhex(v["runs_hex"].get<std::string>()).data(), 32);
    t.run_map_root = runs;
    if (v.contains("teams_hex")) {
      std::memcpy(teams.data(), Unhex(v["teams_hex"].get<std::string>()).data(), 32);
      t.team_map_root = teams;
    }
    const int number = version[1] - '0';
    t.runs_keyed_by_team = number == 4;
    EXPECT_EQ(t.version(), number);
    EXPECT_EQ(FormatCheckpointTime(t), v["body"].get<std::string>());
    EXPECT_EQ(*s->Sign(FormatCheckpointTime(t)), v["note"].get<std::string>());
    auto parsed = ParseCheckpointTime(v["body"].get<std::string>());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->run_map_root, t.run_map_root);
    EXPECT_EQ(parsed->team_map_root, t.team_map_root);
    EXPECT_EQ(parsed->version(), number);
    EXPECT_EQ(parsed->time_us, t.time_us);
  }
  // The same lines under the other header are the other statement.
  std::string v4 = vec["v4"]["body"];
  std::string v4_lines = v4.substr(v4.find('\n'));
  EXPECT_EQ(ParseCheckpointTime(std::string("evidence-ledger/checkpoint-time/v3") + v4_lines)->version(), 3);
  EXPECT_EQ(ParseCheckpointTime(std::string("evidence-ledger/checkpoint-time/v5") + v4_lines).status().message(),
            "checkpoint time: want exactly five lines: 'evidence-ledger/checkpoint-time/v1', origin, size, root, "
            "time");
  // A version 3 note without its teams line, or with it out of place.
  std::string v3 = vec["v3"]["body"];
  std::string teams_line = v3.substr(v3.find("teams "));
  teams_line = teams_line.substr(0, teams_line.find('\n') + 1);
  std::string without = v3;
  without.erase(without.find(teams_line), teams_line.size());
  EXPECT_EQ(ParseCheckpointTime(without).status().message(),
            "checkpoint time: want exactly seven lines: 'evidence-ledger/checkpoint-time/v3', origin, size, root, "
            "runs, teams, time");
  std::string swapped = v3;
  std::string runs_line = v3.substr(v3.find("runs "));
  runs_line = runs_line.substr(0, runs_line.find('\n') + 1);
  swapped.replace(swapped.find(runs_line), runs_line.size() + teams_line.size(), teams_line + runs_line);
  EXPECT_EQ(ParseCheckpointTime(swapped).status().message(),
            "checkpoint time: the fifth line must be 'runs ' and the base64 of the 32-byte run-head map root");
}

// Neither note can be taken for the other.
TEST(CheckpointTimeTest, NeitherNoteParsesAsTheOther) {
  auto vec = LoadVector("checkpoint_time.json");
  std::string body = vec["body"];
  EXPECT_THAT(ParseCheckpoint(body),
              StatusIs(absl::StatusCode::kInvalidArgument, "checkpoint: want exactly three lines: origin, size, root"));
  std::string checkpoint = body.substr(body.find('\n') + 1);
  checkpoint = checkpoint.substr(0, checkpoint.rfind("time "));
  ASSERT_TRUE(ParseCheckpoint(checkpoint).ok());
  EXPECT_EQ(ParseCheckpointTime(checkpoint).status().message(),
            "checkpoint time: want exactly five lines: 'evidence-ledger/checkpoint-time/v1', origin, size, "
            "root, time");
}

TEST(CheckpointTimeTest, RefusesEveryOtherShape) {
  const std::string head = "evidence-ledger/checkpoint-time/v1\no\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=\n";
  ASSERT_TRUE(ParseCheckpointTime(head + "time 0\n").ok());
  const std::string time_rule =
      "checkpoint time: the last line must be 'time ' and microseconds since the Unix epoch, without leading zeros";
  for (const char* last :
       {"time 01\n", "time -1\n", "time \n", "time  1\n", "time 1 \n", "Time 1\n", "time 9223372036854775808\n"}) {
    EXPECT_EQ(ParseCheckpointTime(head + last).status().message(), time_rule) << last;
  }
  EXPECT_EQ(ParseCheckpointTime(head + "time 1").status().message(), "checkpoint time: must end in a newline");
  EXPECT_THAT(ParseCheckpointTime(head + "time 1\nextra\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "checkpoint time: want exactly five lines: 'evidence-ledger/checkpoint-time/v1', origin, size, "
                       "root, time"));
  EXPECT_THAT(
      ParseCheckpointTime(
          "evidence-ledger/checkpoint-time/v2\no\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=\ntime 1\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "checkpoint time: want exactly six lines: 'evidence-ledger/checkpoint-time/v2', origin, size, root, "
               "runs, time"));
  EXPECT_EQ(ParseCheckpointTime(
                "evidence-ledger/checkpoint-time/v1\no\n08\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=\ntime 1\n")
                .status()
                .message(),
            "checkpoint time: size must be a decimal number without leading zeros");
}

// A key whose token has gone: fault injection for the signing path.
class GoneKey final : public Ed25519Key {
 public:
  const PublicKey& public_key() const override { return public_key_; }
  absl::StatusOr<Signature> Sign(std::string_view) const override {
    return absl::UnavailableError("pkcs11: C_Sign: CKR_DEVICE_REMOVED");
  }
  std::string where() const override { return "pkcs11:object=gone"; }

 private:
  PublicKey public_key_{1};
};

TEST(SignerTest, AKeyGivenSignsAsTheSameSeedWould) {
  std::string seed(32, '\x07');
  auto from_seed = Signer::FromSeed("o.example/x", seed);
  auto from_key = Signer::FromKey("o.example/x", *SeedKey(seed));
  ASSERT_TRUE(from_seed.ok() && from_key.ok());
  EXPECT_EQ(from_key->VerifierKey(), from_seed->VerifierKey());
  EXPECT_EQ(*from_key->Sign("o.example/x\n1\nAAAA\n"), *from_seed->Sign("o.example/x\n1\nAAAA\n"));
  EXPECT_EQ(*from_key->KeyFileText(), *from_seed->KeyFileText());
}

TEST(SignerTest, AKeyThatCannotSignSignsNothing) {
  auto signer = Signer::FromKey("o.example/x", std::make_shared<GoneKey>());
  ASSERT_TRUE(signer.ok());
  auto note = signer->Sign("o.example/x\n1\nAAAA\n");
  EXPECT_EQ(note.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(note.status().message(), "pkcs11: C_Sign: CKR_DEVICE_REMOVED");
  auto file = signer->KeyFileText();
  EXPECT_EQ(file.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(file.status().message(), "signing key: the key is kept in pkcs11:object=gone; it has no key file");
  EXPECT_EQ(Signer::FromKey("o.example/x", nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Signer::FromKey("bad name", std::make_shared<GoneKey>()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ledger::note
