#include "witness/server/witness.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/note/key_set.h"
#include "tests/util/temp_dir.h"
#include "util/files/files.h"
#include "witness/server/state.h"

namespace ledger::witness {
namespace {

using hash::Hash;

// A log in memory: leaves "0", "1", ..., its checkpoints signed with `key`.
class TestLog {
 public:
  explicit TestLog(const std::string& origin, char seed = 1)
      : key_(*note::Signer::FromSeed(origin, std::string(32, seed))) {}

  void Grow(uint64_t size) {
    while (frontier_.size() < size) {
      frontier_.Append(hash::LeafHash(absl::StrCat(frontier_.size())), [&](int level, uint64_t index, const Hash& h) {
        nodes_[{level, index}] = h;
      });
    }
  }
  Hash Root(uint64_t size) { return *merkle::RootHash(size, Node()); }
  std::vector<Hash> Proof(uint64_t from, uint64_t to) { return *merkle::ConsistencyProof(from, to, Node()); }
  std::string Text(uint64_t size, const Hash& root) { return note::FormatCheckpoint({key_.name(), size, root}); }
  std::string Note(uint64_t size) { return *key_.Sign(Text(size, Root(size))); }
  // The add-checkpoint body from `old` to `size`.
  std::string Body(uint64_t old, uint64_t size) {
    return BodyWith(old, old == 0 ? std::vector<Hash>{} : Proof(old, size), Note(size));
  }
  static std::string BodyWith(uint64_t old, const std::vector<Hash>& proof, const std::string& note) {
    std::string b = absl::StrCat("old ", old, "\n");
    for (const Hash& h : proof) absl::StrAppend(&b, hash::Base64(hash::AsBytes(h)), "\n");
    return absl::StrCat(b, "\n", note);
  }
  const note::Signer& key() const { return key_; }
  note::Verifier Verifier() const { return *note::Verifier::Parse(key_.VerifierKey()); }

 private:
  merkle::NodeFn Node() { return node_; }
  std::function<absl::StatusOr<Hash>(int, uint64_t)> node_ = [this](int level, uint64_t index) -> absl::StatusOr<Hash> {
    return nodes_.at({level, index});
  };
  note::Signer key_;
  merkle::Frontier frontier_;
  std::map<std::pair<int, uint64_t>, Hash> nodes_;
};

class WitnessTest : public ::testing::Test {
 protected:
  WitnessTest() : log_("example.org/log") { log_.Grow(40); }

  std::unique_ptr<Witness> Open() {
    auto w = Witness::Open(dir_.path(), cosigner_, {log_.Verifier()}, [this] { return now_; });
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *std::move(w) : nullptr;
  }
  uint64_t VerifiedTime(const std::string& note) {
    auto v = cosign::CosignatureVerifier::Parse(cosigner_.VerifierKey());
    auto t = v->Verify(note);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : 0;
  }

  testing::TempDir dir_;
  cosign::Cosigner cosigner_ = *cosign::Cosigner::FromSeed("witness.example/w1", std::string(32, '\x09'));
  TestLog log_;
  uint64_t now_ = 1700000000;
};

TEST_F(WitnessTest, AFirstCheckpointFromSizeZeroIsCosignedAndServed) {
  auto w = Open();
  Reply r = w->AddCheckpoint(log_.Body(0, 10));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, *cosigner_.Cosign(log_.Text(10, log_.Root(10)), now_));
  EXPECT_EQ(VerifiedTime(log_.Note(10) + r.body), now_);
  Reply got = w->GetCheckpoint(OriginHash("example.org/log"));
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.body, log_.Note(10) + r.body);
  EXPECT_TRUE(log_.Verifier().Open(got.body).ok());
}

TEST_F(WitnessTest, AConsistentCheckpointIsCosignedFromTheSizeLastCosigned) {
  auto w = Open();
  ASSERT_EQ(w->AddCheckpoint(log_.Body(0, 7)).status, 200);
  now_ += 5;
  Reply r = w->AddCheckpoint(log_.Body(7, 33));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(VerifiedTime(log_.Note(33) + r.body), now_);
  // The same checkpoint again (old = size, same root) is cosigned anew.
  now_ += 1;
  Reply again = w->AddCheckpoint(log_.Body(33, 33));
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(VerifiedTime(log_.Note(33) + again.body), now_);
}

TEST_F(WitnessTest, AnUnknownOriginIs404) {
  auto w = Open();
  TestLog other("other.example/log", 2);
  other.Grow(3);
  Reply r = w->AddCheckpoint(other.Body(0, 3));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "origin: not a log this witness is configured for\n");
}

TEST_F(WitnessTest, NoTrustedSignatureOrABadOneIs403) {
  auto w = Open();
  // Same origin, another key: the attacker's checkpoint.
  TestLog impostor("example.org/log", 3);
  impostor.Grow(40);
  Reply r = w->AddCheckpoint(impostor.Body(0, 5));
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body, "signed note: no signature by a key trusted for 'example.org/log'\n");
  // The trusted key's line over another text.
  std::string note = log_.Note(5);
  std::string forged = log_.Text(5, log_.Root(6)) + note.substr(note.find("\n\n") + 1);
  Reply bad = w->AddCheckpoint(TestLog::BodyWith(0, {}, forged));
  EXPECT_EQ(bad.status, 403);
  EXPECT_EQ(bad.body.substr(0, 40), "signed note: signature by example.org/lo");
  EXPECT_EQ(w->GetCheckpoint(OriginHash("example.org/log")).status, 404);
}

TEST_F(WitnessTest, AnOldSizeAboveTheCheckpointIs400) {
  auto w = Open();
  Reply r = w->AddCheckpoint(TestLog::BodyWith(12, {}, log_.Note(10)));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, "old size 12 is above the checkpoint's size 10\n");
}

TEST_F(WitnessTest, AnOldSizeThatIsNotTheLastCosignedIs409WithThatSize) {
  auto w = Open();
  Reply r = w->AddCheckpoint(log_.Body(4, 10));
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.content_type, "text/x.tlog.size");
  EXPECT_EQ(r.body, "0\n");
  ASSERT_EQ(w->AddCheckpoint(log_.Body(0, 10)).status, 200);
  Reply stale = w->AddCheckpoint(log_.Body(0, 20));
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.body, "10\n");
}

TEST_F(WitnessTest, ABadProofAFalseEqualSizeAndANonEmptySizeZeroAre422) {
  auto w = Open();
  ASSERT_EQ(w->AddCheckpoint(log_.Body(0, 10)).status, 200);
  std::vector<Hash> proof = log_.Proof(10, 20);
  proof[0][0] ^= 1;
  Reply r = w->AddCheckpoint(TestLog::BodyWith(10, proof, log_.Note(20)));
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body.substr(0, 13), "consistency: ");
  // Size 10 again with another root, signed by the log: a fork.
  std::string fork = *log_.key().Sign(log_.Text(10, log_.Root(11)));
  Reply split = w->AddCheckpoint(TestLog::BodyWith(10, {}, fork));
  EXPECT_EQ(split.status, 422);
  EXPECT_EQ(split.body, "checkpoint: size 10 was cosigned with root " + hash::Base64(hash::AsBytes(log_.Root(10))) +
                            ", not " + hash::Base64(hash::AsBytes(log_.Root(11))) + "\n");
  // The refused, log-signed request is kept as evidence of the fork.
  std::ifstream kept(dir_.Sub(OriginHash("example.org/log") + ".fork"));
  std::string evidence((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_EQ(evidence, TestLog::BodyWith(10, {}, fork));
  // Nothing changed: the consistent successor is still cosigned.
  EXPECT_EQ(w->AddCheckpoint(log_.Body(10, 20)).status, 200);
}

// Anyone can post the log's public checkpoint with a junk proof. Once such
// a request replaced the kept evidence of a real fork and raised another
// alarm; now the first evidence of each kind is kept, and what a junk
// proof left is withdrawn once that checkpoint is cosigned.
TEST_F(WitnessTest, ForkEvidenceIsNeverReplacedByALaterRequest) {
  auto w = Open();
  ASSERT_EQ(w->AddCheckpoint(log_.Body(0, 10)).status, 200);
  auto read = [&](const std::string& suffix) {
    std::ifstream f(dir_.Sub(OriginHash("example.org/log") + suffix));
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  // A fork that grew from size 10 (signed by the log, another root at 20): no proof joins it.
  std::string grown = *log_.key().Sign(log_.Text(20, log_.Root(21)));
  std::vector<Hash> its_proof = log_.Proof(10, 20);
  ASSERT_EQ(w->AddCheckpoint(TestLog::BodyWith(10, its_proof, grown)).status, 422);
  ASSERT_EQ(read(".refused"), TestLog::BodyWith(10, its_proof, grown));
  // The genuine, public checkpoint of size 20 with a junk proof: refused, the evidence stays.
  std::vector<Hash> junk(4, log_.Root(3));
  EXPECT_EQ(w->AddCheckpoint(TestLog::BodyWith(10, junk, log_.Note(20)), "192.0.2.7").status, 422);
  EXPECT_EQ(read(".refused"), TestLog::BodyWith(10, its_proof, grown));
  // Two roots for size 10: kept as a fork, and a second one replaces nothing.
  std::string fork = *log_.key().Sign(log_.Text(10, log_.Root(11)));
  ASSERT_EQ(w->AddCheckpoint(TestLog::BodyWith(10, {}, fork)).status, 422);
  std::string other = *log_.key().Sign(log_.Text(10, log_.Root(12)));
  EXPECT_EQ(w->AddCheckpoint(TestLog::BodyWith(10, {}, other)).status, 422);
  EXPECT_EQ(read(".fork"), TestLog::BodyWith(10, {}, fork));
  EXPECT_EQ(read(".refused"), TestLog::BodyWith(10, its_proof, grown));
}

// A junk proof sent first with the log's public checkpoint takes the slot
// of unproven evidence only until that checkpoint is cosigned.
TEST_F(WitnessTest, UnprovenEvidenceOfACheckpointLaterCosignedIsWithdrawn) {
  auto w = Open();
  ASSERT_EQ(w->AddCheckpoint(log_.Body(0, 10)).status, 200);
  std::vector<Hash> junk(4, log_.Root(3));
  ASSERT_EQ(w->AddCheckpoint(TestLog::BodyWith(10, junk, log_.Note(20))).status, 422);
  std::string path = dir_.Sub(OriginHash("example.org/log") + ".refused");
  ASSERT_TRUE(std::filesystem::exists(path));
  ASSERT_EQ(w->AddCheckpoint(log_.Body(10, 20)).status, 200);
  EXPECT_FALSE(std::filesystem::exists(path));
  // Then a real fork is kept.
  std::string grown = *log_.key().Sign(log_.Text(30, log_.Root(31)));
  ASSERT_EQ(w->AddCheckpoint(TestLog::BodyWith(20, log_.Proof(20, 30), grown)).status, 422);
  EXPECT_TRUE(std::filesystem::exists(path));
}

TEST_F(WitnessTest, RequestsThatDoNotVerifyAreLimitedPerPeer) {
  auto w = Open();
  ASSERT_EQ(w->AddCheckpoint(log_.Body(0, 10)).status, 200);
  std::vector<Hash> junk(4, log_.Root(3));
  for (int i = 0; i < Witness::kMaxFailuresPerMinute; ++i) {
    ASSERT_EQ(w->AddCheckpoint(TestLog::BodyWith(10, junk, log_.Note(20)), "192.0.2.7").status, 422) << i;
  }
  Reply limited = w->AddCheckpoint(log_.Body(10, 20), "192.0.2.7");
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(limited.body,
            "too many requests from this address did not verify (at most 30 a minute); retry in a minute\n");
  // Another peer is not held back, and 409s (the protocol's own) do not count.
  for (int i = 0; i < Witness::kMaxFailuresPerMinute + 5; ++i) {
    ASSERT_EQ(w->AddCheckpoint(log_.Body(0, 20), "192.0.2.8").status, 409) << i;
  }
  EXPECT_EQ(w->AddCheckpoint(log_.Body(10, 20), "192.0.2.8").status, 200);
  // The next minute, the first peer may try again.
  now_ += 60;
  EXPECT_EQ(w->AddCheckpoint(log_.Body(20, 30), "192.0.2.7").status, 200);
}

TEST_F(WitnessTest, FromSizeZeroAProofOrANonEmptyRootOfSizeZeroIs422) {
  auto w = Open();
  Reply r = w->AddCheckpoint(TestLog::BodyWith(0, {log_.Root(1)}, log_.Note(10)));
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body, "consistency proof: must be empty from size 0\n");
  std::string zero = *log_.key().Sign(log_.Text(0, log_.Root(1)));
  Reply z = w->AddCheckpoint(TestLog::BodyWith(0, {}, zero));
  EXPECT_EQ(z.status, 422);
  EXPECT_EQ(z.body, "a checkpoint of size 0 must have the empty tree's root\n");
}

TEST_F(WitnessTest, AFreshWitnessCosignsTheEmptyTreeThenGrowsFromIt) {
  // A ledger that starts empty signs a checkpoint of size 0 first.
  auto w = Open();
  std::string empty = *log_.key().Sign(log_.Text(0, hash::EmptyRoot()));
  Reply r = w->AddCheckpoint(TestLog::BodyWith(0, {}, empty));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(w->AddCheckpoint(TestLog::BodyWith(0, {}, empty)).status, 200);  // again: the same checkpoint
  EXPECT_EQ(w->AddCheckpoint(log_.Body(0, 10)).status, 200);
}

TEST_F(WitnessTest, MalformedBodiesAre400NamingThePart) {
  auto w = Open();
  std::string note = log_.Note(10);
  struct Case {
    std::string body, want;
  } cases[] = {
      {"old 01\n\n" + note, "old size line: want 'old ' and a decimal size without leading zeros, then a newline\n"},
      {"old  1\n\n" + note, "old size line: want 'old ' and a decimal size without leading zeros, then a newline\n"},
      {"new 0\n\n" + note, "old size line: want 'old ' and a decimal size without leading zeros, then a newline\n"},
      {"old 0\n" + note, "consistency proof: line 1 is not base64 of 32 bytes\n"},
      {"old 0\nAAAA\n\n" + note, "consistency proof: line 1 is not base64 of 32 bytes\n"},
      {"old 0\n", "consistency proof: want an empty line before the checkpoint\n"},
      {"old 0\n\nexample.org/log\n10\n", "signed note: no blank line before signatures\n"},
      {"old 0\n\nexample.org/log\n010\n" + note.substr(note.find('\n', 20)),
       "checkpoint: size must be a decimal number without leading zeros\n"},
  };
  for (const Case& c : cases) {
    Reply r = w->AddCheckpoint(c.body);
    EXPECT_EQ(r.status, 400) << c.body;
    EXPECT_EQ(r.body, c.want) << c.body;
  }
  std::string many = "old 1\n";
  for (int i = 0; i < 64; ++i) absl::StrAppend(&many, hash::Base64(std::string(32, 'a')), "\n");
  EXPECT_EQ(w->AddCheckpoint(many + "\n" + note).body, "consistency proof: at most 63 lines\n");
}

TEST_F(WitnessTest, ARestartedWitnessRemembersWhatItCosigned) {
  {
    auto w = Open();
    ASSERT_EQ(w->AddCheckpoint(log_.Body(0, 16)).status, 200);
  }
  auto w = Open();
  Reply r = w->AddCheckpoint(log_.Body(0, 20));
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body, "16\n");
  EXPECT_EQ(w->AddCheckpoint(log_.Body(16, 20)).status, 200);
}

TEST_F(WitnessTest, ADamagedRecordStopsTheWitnessFromStarting) {
  {
    auto w = Open();
    ASSERT_EQ(w->AddCheckpoint(log_.Body(0, 16)).status, 200);
  }
  std::string path = dir_.Sub(OriginHash("example.org/log"));
  ASSERT_TRUE(files::WriteFileAtomically(path, log_.Note(16)).ok());  // the cosignature gone
  auto w = Witness::Open(dir_.path(), cosigner_, {log_.Verifier()}, [] { return uint64_t{1}; });
  EXPECT_EQ(w.status().code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(files::WriteFileAtomically(path, "garbage").ok());
  EXPECT_EQ(Witness::Open(dir_.path(), cosigner_, {log_.Verifier()}, [] { return uint64_t{1}; }).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST_F(WitnessTest, ExtensionLinesAreCosignedWithTheCheckpoint) {
  auto w = Open();
  std::string text = log_.Text(10, log_.Root(10)) + "ext line\n";
  std::string note = *log_.key().Sign(text);
  Reply r = w->AddCheckpoint(TestLog::BodyWith(0, {}, note));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(VerifiedTime(note + r.body), now_);
}

// CONTRACT section 5b, "Following a key rotation": once the witness
// follows a rotation at seq s, past s only the new key's signature counts
// (the old key's line of a transition, or a thief's checkpoint, does not);
// what it follows survives a restart; a statement of a key it does not
// trust, a forged one or a second rotation of the same key is refused.
TEST_F(WitnessTest, AFollowedRotationMovesTheSizesPastItToTheNewKey) {
  auto w = Open();
  ASSERT_EQ(w->AddCheckpoint(log_.Body(0, 10)).status, 200);
  note::Signer next = *note::Signer::FromSeed("example.org/log", std::string(32, '\x07'));
  note::Signer stranger = *note::Signer::FromSeed("example.org/log", std::string(32, '\x05'));
  const std::string rotation = *note::SignKeyRotation("example.org/log", 20, log_.key(), next);
  EXPECT_EQ(w->AddKeyRotation("junk").status, 400);
  EXPECT_EQ(w->AddKeyRotation(*note::SignKeyRotation("example.org/log", 20, stranger, next)).status, 403);
  std::string forged = rotation;
  forged[forged.find("seq 20") + 4] = '3';  // the text no longer the one signed
  EXPECT_EQ(w->AddKeyRotation(forged).status, 403);
  ASSERT_EQ(w->AddKeyRotation(rotation).status, 200);
  EXPECT_EQ(w->AddKeyRotation(rotation).status, 200);  // followed already
  EXPECT_EQ(w->AddKeyRotation(*note::SignKeyRotation("example.org/log", 25, log_.key(), stranger)).status, 409);
  const std::string keys = dir_.path() + "/" + OriginHash("example.org/log") + ".keys";
  EXPECT_TRUE(std::filesystem::exists(keys));
  // Size 20 is still the old key's; 30 only the new key's.
  ASSERT_EQ(w->AddCheckpoint(log_.Body(10, 20)).status, 200);
  const std::string text30 = log_.Text(30, log_.Root(30));
  const std::string by_old = *log_.key().Sign(text30);
  const std::string by_new = *next.Sign(text30);
  const std::string both = *note::AddSignature(by_new, log_.key());
  EXPECT_EQ(w->AddCheckpoint(TestLog::BodyWith(20, log_.Proof(20, 30), by_old)).status, 403);
  w.reset();
  w = Open();  // the rotation is read back
  EXPECT_EQ(w->AddCheckpoint(TestLog::BodyWith(20, log_.Proof(20, 30), by_old)).status, 403);
  Reply r = w->AddCheckpoint(TestLog::BodyWith(20, log_.Proof(20, 30), both));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(VerifiedTime(both + r.body), now_);
  // A record of the rotations that no longer holds stops the witness.
  w.reset();
  ASSERT_TRUE(files::WriteFileAtomically(keys, "\"evidence-ledger/key-rotation/v1\\n\"\n").ok());
  auto refused = Witness::Open(dir_.path(), cosigner_, {log_.Verifier()}, [this] { return now_; });
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss) << refused.status();
}

}  // namespace
}  // namespace ledger::witness
