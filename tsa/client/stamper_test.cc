// The stamper against a TSA that fails (fault injection: the happy path is
// tests/tsa_test.py's, with a real TSA made with openssl ts), and the lines
// it reads back from the store, against CONTRACT section 5e's vectors.
#include "tsa/client/stamper.h"

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"
#include "ledger/format/hash/hash.h"
#include "nlohmann/json.hpp"

namespace ledger::tsa {
namespace {

using std::chrono::milliseconds;

nlohmann::json Vectors() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/timestamp.json");
  return nlohmann::json::parse(in);
}

// The note of a vector case without its time-stamp line, and that line.
std::pair<std::string, std::string> Split(const std::string& note) {
  size_t at = note.find("\n\xe2\x80\x94 tsa ");
  return {note.substr(0, at + 1), note.substr(at + 1)};
}

struct Fixture {
  nlohmann::json v = Vectors();
  std::string kept;  // what the store holds for size 8
  int posts = 0;

  absl::StatusOr<std::unique_ptr<Stamper>> Start(std::function<absl::StatusOr<http::Reply>()> answer,
                                                 Stamper::Options options = {}) {
    options.url = "http://tsa.test:1/";
    options.interval_ms = 60'000;  // the thread never asks on its own in these tests
    options.kept = [this](uint64_t size) -> absl::StatusOr<std::string> { return size == 8 ? kept : ""; };
    options.keep = [this](uint64_t, const std::string& line) {
      kept = line;
      return absl::OkStatus();
    };
    auto roots = timestamp::TsaRoots::Parse(v["tsa_roots_pem"].get<std::string>());
    return Stamper::Start(
        *roots, [] { return absl::StatusOr<std::string>(absl::NotFoundError("none")); },
        [this, answer](const std::string&) {
          ++posts;
          return answer();
        },
        options);
  }
};

TEST(StamperTest, AnUnreachableTsaIsNamedAndTheNoteServedWithoutAStamp) {
  Fixture f;
  auto s = f.Start([] { return absl::StatusOr<http::Reply>(absl::UnavailableError("connect: refused")); });
  ASSERT_TRUE(s.ok()) << s.status();
  auto [note, line] = Split(f.v["cases"][0]["note"].get<std::string>());
  auto stamped = (*s)->StampedWithin(note, milliseconds(500));
  ASSERT_FALSE(stamped.ok());
  EXPECT_EQ(stamped.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(stamped.status().message().find("http://tsa.test:1/"), std::string::npos) << stamped.status();
  EXPECT_GE(f.posts, 2);  // asked again while the wait lasted
  EXPECT_EQ((*s)->Stamped(note), note);
  EXPECT_NE((*s)->RenderMetrics().find("ledger_tsa_failures_total{reason=\"unavailable\"} "), std::string::npos);
  EXPECT_EQ((*s)->RenderMetrics().find("ledger_tsa_stamps_total 1"), std::string::npos);
}

TEST(StamperTest, AReplyThatIsNotATokenForThisRequestIsRefusedAtOnce) {
  Fixture f;
  auto reply = hash::Base64Decode(f.v["response_b64"].get<std::string>());
  for (auto answer : std::vector<std::function<absl::StatusOr<http::Reply>()>>{
           [] {
             return absl::StatusOr<http::Reply>(http::Reply{500, "text/plain", "busy\n"});
           },
           [] {
             return absl::StatusOr<http::Reply>(http::Reply{200, "application/timestamp-reply", "garbage"});
           },
           // A real TSA's reply, to another request: its nonce is not ours.
           [&] {
             return absl::StatusOr<http::Reply>(http::Reply{200, "application/timestamp-reply", *reply});
           }}) {
    f.posts = 0;
    auto s = f.Start(answer);
    ASSERT_TRUE(s.ok());
    auto [note, line] = Split(f.v["cases"][0]["note"].get<std::string>());
    auto stamped = (*s)->StampedWithin(note, milliseconds(200));
    ASSERT_FALSE(stamped.ok());
    EXPECT_TRUE(f.kept.empty());
  }
  f.posts = 0;
  auto s = f.Start([&] { return absl::StatusOr<http::Reply>(http::Reply{200, "", *reply}); });
  auto [note, line] = Split(f.v["cases"][0]["note"].get<std::string>());
  auto stamped = (*s)->StampedWithin(note, milliseconds(5000));
  ASSERT_FALSE(stamped.ok());
  EXPECT_NE(stamped.status().message().find("nonce"), std::string::npos) << stamped.status();
  EXPECT_EQ(f.posts, 1);  // a refusal is not waited on
}

TEST(StamperTest, AKeptLineIsServedOnlyWithTheNoteItStamps) {
  Fixture f;
  auto s = f.Start([] { return absl::StatusOr<http::Reply>(absl::UnavailableError("down")); });
  ASSERT_TRUE(s.ok());
  auto [note, line] = Split(f.v["cases"][0]["note"].get<std::string>());
  f.kept = line;
  EXPECT_EQ((*s)->Stamped(note), note + line);
  EXPECT_EQ((*s)->Line(note), line);
  auto stamped = (*s)->StampedWithin(note, milliseconds(100));
  ASSERT_TRUE(stamped.ok()) << stamped.status();
  EXPECT_EQ(f.posts, 0);
  // Another note of the same size: the kept line stamps another text.
  for (const auto& c : f.v["cases"]) {
    if (c["name"] != "another note's token") continue;
    auto [other, other_line] = Split(c["note"].get<std::string>());
    EXPECT_EQ((*s)->Stamped(other), other);
    return;
  }
  FAIL() << "no case of another note's token";
}

TEST(StamperTest, ANameOrACountOutOfItsRuleIsRefused) {
  Fixture f;
  auto down = [] { return absl::StatusOr<http::Reply>(absl::UnavailableError("down")); };
  for (auto edit : std::vector<std::function<void(Stamper::Options&)>>{
           [](Stamper::Options& o) { o.name = "my tsa"; }, [](Stamper::Options& o) { o.name = "a+b"; },
           [](Stamper::Options& o) { o.every = 0; }, [](Stamper::Options& o) { o.max_delay_s = 0; }}) {
    Stamper::Options options;
    edit(options);
    auto s = f.Start(down, options);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(f.Start(down).ok());
}

}  // namespace
}  // namespace ledger::tsa
