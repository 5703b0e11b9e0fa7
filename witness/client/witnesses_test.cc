#include "witness/client/witnesses.h"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/note/note.h"
#include "tests/util/temp_dir.h"
#include "witness/server/witness.h"

namespace ledger::witnesses {
namespace {

using hash::Hash;

// A growing log in memory, signed with a fixed key.
class TestLog {
 public:
  TestLog() : key_(*note::Signer::FromSeed("example.org/log", std::string(32, '\x01'))) {}
  void Grow(uint64_t size) {
    sync::MutexLock lock(&mu_);
    while (frontier_.size() < size) {
      frontier_.Append(hash::LeafHash(absl::StrCat(frontier_.size())), [&](int level, uint64_t index, const Hash& h) {
        nodes_[{level, index}] = h;
      });
    }
    latest_ = size;
  }
  Source source() {
    return {[this](uint64_t size) -> absl::StatusOr<std::string> {
              sync::MutexLock lock(&mu_);
              uint64_t n = size == 0 ? latest_ : size;
              return *key_.Sign(note::FormatCheckpoint({key_.name(), n, *merkle::RootHash(n, node_)}));
            },
            [this](uint64_t from, uint64_t to) -> absl::StatusOr<std::vector<Hash>> {
              sync::MutexLock lock(&mu_);
              return merkle::ConsistencyProof(from, to, node_);
            },
            nullptr};
  }
  std::string Note(uint64_t size) { return *source().checkpoint(size); }
  std::string vkey() const { return key_.VerifierKey(); }

 private:
  note::Signer key_;
  sync::Mutex mu_;
  merkle::Frontier frontier_;
  std::map<std::pair<int, uint64_t>, Hash> nodes_;
  uint64_t latest_ = 0;
  std::function<absl::StatusOr<Hash>(int, uint64_t)> node_ = [this](int level, uint64_t index) -> absl::StatusOr<Hash> {
    return nodes_.at({level, index});
  };
};

// A real witness (witness::Witness) behind a fake transport.
struct InProcessWitness {
  InProcessWitness(const std::string& dir, const std::string& name, char seed, const std::string& log_vkey)
      : cosigner(*cosign::Cosigner::FromSeed(name, std::string(32, seed))),
        witness(*witness::Witness::Open(dir, cosigner, {*note::Verifier::Parse(log_vkey)},
                                        [] { return uint64_t{1700000000}; })) {}
  absl::StatusOr<http::Reply> Post(const std::string& url, const std::string& body) {
    ++posts;
    if (down) return absl::UnavailableError("witness down");
    witness::Reply r = witness->AddCheckpoint(body);
    return http::Reply{r.status, r.content_type, r.body};
  }
  cosign::Cosigner cosigner;
  std::unique_ptr<witness::Witness> witness;
  std::atomic<bool> down{false};
  std::atomic<int> posts{0};
};

template <typename F>
bool Eventually(F f) {
  for (int i = 0; i < 300; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class WitnessesTest : public ::testing::Test {
 protected:
  WitnessesTest()
      : a_(dir_.Sub(""), "a.example/w", '\x0a', log_.vkey()), b_(wdir_.path(), "b.example/w", '\x0b', log_.vkey()) {}

  std::unique_ptr<Witnesses> Start(std::optional<Shared> shared = std::nullopt, const std::string& data_dir = "",
                                   std::atomic<int>* posts = nullptr) {
    std::string policy = absl::StrCat(
        "log ", log_.vkey(), "\nwitness A ", a_.cosigner.VerifierKey(), " http://a.example\nwitness B ",
        b_.cosigner.VerifierKey(), " http://b.example\nwitness C ", c_.VerifierKey(), "\ngroup G 2 A B C\nquorum G\n");
    Post post = [this, posts](const std::string& url, const std::string& body) {
      EXPECT_TRUE(url == "http://a.example/add-checkpoint" || url == "http://b.example/add-checkpoint") << url;
      if (posts != nullptr) ++*posts;
      return url.starts_with("http://a.") ? a_.Post(url, body) : b_.Post(url, body);
    };
    auto w = Witnesses::Start(*tlogpolicy::Policy::Parse(policy), log_.source(), post,
                              {.data_dir = data_dir.empty() ? ldir_.path() : data_dir,
                               .poll_ms = 5,
                               .max_backoff_ms = 50,
                               .now_s = [] { return int64_t{1700000100}; },
                               .shared = std::move(shared)});
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *std::move(w) : nullptr;
  }

  testing::TempDir dir_, wdir_, ldir_;
  TestLog log_;
  InProcessWitness a_, b_;
  cosign::Cosigner c_ = *cosign::Cosigner::FromSeed("c.example/w", std::string(32, '\x0c'));  // no URL
};

TEST_F(WitnessesTest, EachCheckpointIsCosignedInTheBackgroundAndServedWithItsCosignatures) {
  log_.Grow(5);
  auto w = Start();
  std::string note = log_.Note(5);
  ASSERT_TRUE(Eventually([&] { return w->For(note).size() == 2; }));
  std::string cosigned = w->Cosigned(note);
  EXPECT_EQ(*cosign::CosignatureVerifier::Parse(a_.cosigner.VerifierKey())->Verify(cosigned), 1700000000u);
  EXPECT_EQ(*cosign::CosignatureVerifier::Parse(b_.cosigner.VerifierKey())->Verify(cosigned), 1700000000u);
  EXPECT_TRUE(note::Verifier::Parse(log_.vkey())->Open(cosigned).ok());
  // The next checkpoint, from the size cosigned, with a consistency proof.
  log_.Grow(23);
  std::string next = log_.Note(23);
  ASSERT_TRUE(Eventually([&] { return w->For(next).size() == 2; }));
  EXPECT_EQ(w->For(note).size(), 2u);  // earlier checkpoints keep theirs
  EXPECT_NE(w->RenderMetrics().find("ledger_witness_cosignatures_total{witness=\"A\"} 2\n"), std::string::npos)
      << w->RenderMetrics();
  EXPECT_NE(w->RenderMetrics().find("ledger_witness_cosigned_tree_size{witness=\"B\"} 23\n"), std::string::npos);
  EXPECT_NE(w->RenderMetrics().find("ledger_witness_cosignature_age_seconds{witness=\"A\"} 100\n"), std::string::npos);
}

TEST_F(WitnessesTest, A409IsRetriedFromTheSizeTheWitnessStates) {
  log_.Grow(9);
  // The witness already cosigned size 4 (another ledger process before a
  // lost data directory, say); this client starts from 0.
  log_.Grow(4);
  ASSERT_EQ(a_.witness->AddCheckpoint("old 0\n\n" + log_.Note(4)).status, 200);
  log_.Grow(9);
  auto w = Start();
  std::string note = log_.Note(9);
  ASSERT_TRUE(Eventually([&] { return w->For(note).size() == 2; }));
  EXPECT_NE(w->RenderMetrics().find("ledger_witness_failures_total{witness=\"A\",reason=\"conflict\"} 1\n"),
            std::string::npos)
      << w->RenderMetrics();
}

TEST_F(WitnessesTest, AWitnessThatIsDownDelaysNothingElseAndCatchesUpLater) {
  a_.down = true;
  log_.Grow(7);
  auto w = Start();
  std::string note = log_.Note(7);
  ASSERT_TRUE(Eventually([&] { return w->For(note).size() == 1; }));
  EXPECT_EQ(w->For(note)[0].witness, "B");
  ASSERT_TRUE(Eventually([&] { return a_.posts >= 2; }));
  EXPECT_NE(w->RenderMetrics().find("ledger_witness_failures_total{witness=\"A\",reason=\"unavailable\"} "),
            std::string::npos);
  a_.down = false;
  ASSERT_TRUE(Eventually([&] { return w->For(note).size() == 2; }));
}

TEST_F(WitnessesTest, ARestartServesTheKeptCosignaturesAndResumesFromTheirSize) {
  log_.Grow(6);
  std::string note = log_.Note(6);
  {
    auto w = Start();
    ASSERT_TRUE(Eventually([&] { return w->For(note).size() == 2; }));
  }
  a_.down = true;
  b_.down = true;
  auto w = Start();
  EXPECT_EQ(w->For(note).size(), 2u);
  a_.down = false;
  b_.down = false;
  int before = a_.posts;
  log_.Grow(12);
  ASSERT_TRUE(Eventually([&] { return w->For(log_.Note(12)).size() == 2; }));
  EXPECT_EQ(w->RenderMetrics().find("reason=\"conflict\"} 1"), std::string::npos);  // resumed from 6: no 409
  EXPECT_GT(a_.posts, before);
}

TEST_F(WitnessesTest, AQuorumIsWaitedForBoundedAndTheMissingWitnessesAreNamed) {
  a_.down = true;
  log_.Grow(8);
  auto w = Start();
  std::string note = log_.Note(8);
  ASSERT_TRUE(Eventually([&] { return w->For(note).size() == 1; }));
  // B alone does not make "2 of A B C": refused after the wait, naming A and C.
  auto refused = w->CosignedWithQuorum(note, std::chrono::milliseconds(50));
  EXPECT_EQ(refused.status(), absl::UnavailableError("the checkpoint of size 8 lacks the witness quorum G after 50 ms: "
                                                     "no cosignature from A, C"));
  // A comes back while an export waits: the wait ends with both lines.
  std::thread revive([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    a_.down = false;
  });
  auto cosigned = w->CosignedWithQuorum(note, std::chrono::seconds(20));
  revive.join();
  ASSERT_TRUE(cosigned.ok()) << cosigned.status();
  EXPECT_EQ(*cosigned, w->Cosigned(note));
  EXPECT_EQ(w->For(note).size(), 2u);
}

// The shard's database, as far as witnesses go: what each witness last
// cosigned, sizes only growing (ShardLog::PutCosignature).
class SharedRecord {
 public:
  Shared For(std::atomic<bool>* leads) {
    return {.submits = [leads] { return leads->load(); },
            .record =
                [this](const Recorded& r) {
                  sync::MutexLock lock(&mu_);
                  if (rows_[r.witness].size <= r.size) rows_[r.witness] = r;
                  return absl::OkStatus();
                },
            .recorded = [this]() -> absl::StatusOr<std::vector<Recorded>> {
              sync::MutexLock lock(&mu_);
              std::vector<Recorded> out;
              for (const auto& [id, r] : rows_) out.push_back(r);
              return out;
            }};
  }

 private:
  sync::Mutex mu_;
  std::map<std::string, Recorded> rows_ ABSL_GUARDED_BY(mu_);
};

TEST_F(WitnessesTest, InAShardOnlyTheLeaderSubmitsAndTheNextLeaderResumesFromTheSharedRecordWithout409) {
  SharedRecord db;
  std::atomic<bool> one_leads{true}, two_leads{false};
  std::atomic<int> one_posts{0}, two_posts{0};
  testing::TempDir two_dir;
  log_.Grow(6);
  auto one = Start(db.For(&one_leads), ldir_.path(), &one_posts);
  auto two = Start(db.For(&two_leads), two_dir.path(), &two_posts);
  std::string note = log_.Note(6);
  ASSERT_TRUE(Eventually([&] { return one->For(note).size() == 2; }));
  // The follower sent nothing, and serves the leader's cosignatures.
  ASSERT_TRUE(Eventually([&] { return two->For(note).size() == 2; }));
  EXPECT_EQ(two->Cosigned(note), one->Cosigned(note));
  EXPECT_EQ(two_posts, 0);
  // The leader is gone; the follower leads a longer log.
  one.reset();
  one_leads = false;
  two_leads = true;
  log_.Grow(15);
  std::string next = log_.Note(15);
  ASSERT_TRUE(Eventually([&] { return two->For(next).size() == 2; }));
  EXPECT_EQ(two_posts, 2);  // one submission a witness, each from size 6: no 409
  EXPECT_NE(two->RenderMetrics().find("ledger_witness_failures_total{witness=\"A\",reason=\"conflict\"} 0\n"),
            std::string::npos)
      << two->RenderMetrics();
  EXPECT_NE(two->RenderMetrics().find("ledger_witness_failures_total{witness=\"B\",reason=\"refused\"} 0\n"),
            std::string::npos);
}

TEST_F(WitnessesTest, APolicyWithoutAWitnessUrlIsRefused) {
  auto w = Witnesses::Start(
      *tlogpolicy::Policy::Parse(absl::StrCat("witness C ", c_.VerifierKey(), "\nquorum C\n")), log_.source(), nullptr,
      {.data_dir = ldir_.path(), .poll_ms = 100, .max_backoff_ms = 10'000, .now_s = nullptr, .shared = {}});
  EXPECT_EQ(w.status().message(), "witness policy: no witness has a URL (witness <name> <vkey> <url>)");
}

}  // namespace
}  // namespace ledger::witnesses
