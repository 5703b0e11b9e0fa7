// The monitors' map cosignatures against CONTRACT section 5c's golden
// vectors (tests/vectors/map_cosignature.json, made with Python's
// cryptography from the text).
#include "ledger/format/cosign/mapcosign.h"

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/hash/hash.h"
#include "nlohmann/json.hpp"

namespace ledger::cosign {
namespace {

nlohmann::json Vectors() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/map_cosignature.json");
  return nlohmann::json::parse(in);
}

std::string MapUnhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

std::string NoteText(const std::string& note) { return note.substr(0, note.rfind("\n\n") + 1); }

MapCosigner Monitor(const nlohmann::json& v) {
  auto key = note::SeedKey(MapUnhex(v["key"]["seed_hex"].get<std::string>()));
  return *MapCosigner::FromKey(v["key"]["name"].get<std::string>(), *key);
}

TEST(MapCosignTest, TheKeyAsTheContractWritesIt) {
  auto v = Vectors();
  MapCosigner m = Monitor(v);
  EXPECT_EQ(hash::Hex(MapKeyType()), v["key"]["type_hex"].get<std::string>());
  char id[9];
  std::snprintf(id, sizeof id, "%08x", m.key_id());
  EXPECT_EQ(id, v["key"]["key_id_hex"].get<std::string>());
  EXPECT_EQ(m.VerifierKey(), v["key"]["vkey"].get<std::string>());
  EXPECT_EQ(*m.KeyFileText(), v["key"]["key_file"].get<std::string>() + "\n");
  auto back = MapCosigner::ParseKeyFile(v["key"]["key_file"].get<std::string>());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->VerifierKey(), m.VerifierKey());
  auto parsed = MapCosignatureVerifier::Parse(v["key"]["vkey"].get<std::string>());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->vkey(), v["key"]["vkey"].get<std::string>());
}

TEST(MapCosignTest, CosignsTheNoteByteForByteAndVerifiesIt) {
  auto v = Vectors();
  MapCosigner m = Monitor(v);
  auto verifier = *MapCosignatureVerifier::Parse(m.VerifierKey());
  const std::string note = v["note"].get<std::string>();
  for (const auto& c : v["cosignatures"]) {
    uint64_t time = c["time"].get<uint64_t>();
    EXPECT_EQ(MapSignedMessage(NoteText(note), time), c["signed_message"].get<std::string>());
    auto line = m.Cosign(NoteText(note), time);
    ASSERT_TRUE(line.ok()) << line.status();
    EXPECT_EQ(*line, c["line"].get<std::string>());
    auto verified = verifier.Verify(c["cosigned_note"].get<std::string>());
    ASSERT_TRUE(verified.ok()) << verified.status();
    EXPECT_EQ(*verified, time);
  }
  // The note as the ledger signed it holds no line of the monitor's.
  EXPECT_EQ(verifier.Verify(note).status().code(), absl::StatusCode::kNotFound);
}

TEST(MapCosignTest, RefusesOrIgnoresWhatTheContractSays) {
  auto v = Vectors();
  auto verifier = *MapCosignatureVerifier::Parse(v["key"]["vkey"].get<std::string>());
  const std::string note = v["note"].get<std::string>();
  auto check = [&](const std::string& what, const std::string& cosigned, const std::string& refusal) {
    auto got = verifier.Verify(cosigned);
    if (refusal == "ignored") {
      EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << what << ": " << got.status();
      return;
    }
    ASSERT_FALSE(got.ok()) << what;
    EXPECT_EQ(std::string(got.status().message()).substr(0, refusal.size()), refusal) << what << ": " << got.status();
  };
  for (const auto& r : v["refused"]) {
    check(r["what"].get<std::string>(), note + r["line"].get<std::string>(), r["refusal"].get<std::string>());
  }
  check("two lines", v["two_lines_by_the_monitor"]["cosigned_note"].get<std::string>(),
        v["two_lines_by_the_monitor"]["refusal"].get<std::string>());
  check("version 3", v["note_of_version_3"]["cosigned_note"].get<std::string>(),
        v["note_of_version_3"]["refusal"].get<std::string>());
}

TEST(MapCosignTest, KeysOfOtherTypesAreNotMonitorKeys) {
  auto v = Vectors();
  auto witness = MapCosignatureVerifier::Parse(v["key"]["witness_vkey_of_the_same_seed"].get<std::string>());
  EXPECT_EQ(witness.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(witness.status().message()).find("a witness key (type 0x04), not a monitor's"),
            std::string::npos)
      << witness.status();
  auto log = MapCosignatureVerifier::Parse(v["log_vkey"].get<std::string>());
  EXPECT_NE(std::string(log.status().message()).find("a log key (type 0x01)"), std::string::npos) << log.status();
  // A vkey whose id is not its key's.
  std::string vkey = v["key"]["vkey"].get<std::string>();
  vkey.replace(vkey.find('+') + 1, 8, "00000000");
  EXPECT_EQ(MapCosignatureVerifier::Parse(vkey).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MapCosignTest, CosignsOnlyVersion4NotesAtOrAfterTheirTime) {
  auto v = Vectors();
  MapCosigner m = Monitor(v);
  const std::string text = NoteText(v["note"].get<std::string>());
  uint64_t note_time = v["note_time"].get<uint64_t>();
  EXPECT_EQ(m.Cosign(text, note_time - 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.Cosign(text, 0).status().code(), absl::StatusCode::kInvalidArgument);
  const std::string v3 = NoteText(v["note_of_version_3"]["cosigned_note"].get<std::string>());
  auto refused = m.Cosign(v3, note_time);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(), "map cosignature: only a checkpoint-time note of version 4 is cosigned");
  // A witness's cosignature/v1 key over the same seed signs nothing a
  // monitor's verifier accepts.
  auto witness = Cosigner::FromSeed(m.name(), MapUnhex(v["key"]["seed_hex"].get<std::string>()));
  auto line = witness->Cosign(text, note_time);
  EXPECT_EQ(
      MapCosignatureVerifier::Parse(m.VerifierKey())->Verify(v["note"].get<std::string>() + *line).status().code(),
      absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ledger::cosign
