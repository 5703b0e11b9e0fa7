// ListCalls through the real gRPC API: a team's calls found by their trace
// id, in seq order, with their steps in the log or not; pages; the rules.
#include <vector>

#include "query/service/query_test_fixture.h"

namespace ledger::query {
namespace {

using namespace ::ledger::query::test;  // NOLINT: the fixture and its receipts

constexpr char kTrace[] = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr char kOther[] = "0af7651916cd43dd8448eb211c80319c";

// A model call of `run`'s step `step` (none when ""), with trace id `trace`
// (none when "").
std::string Call(const std::string& id, const std::string& step, const std::string& trace,
                 const std::string& team = "team-a", const std::string& run = "run-1") {
  return R"({"receipt_id":")" + id + R"(","kind":"model_call","team":")" + team + R"(","run_id":")" + run + "\"" +
         (step.empty() ? "" : R"(,"step_id":")" + step + "\"") +
         (trace.empty() ? "" : R"(,"trace_id":")" + trace + "\"") +
         R"(,"occurred_at_us":3,"route":"openai/gpt","decision":"allow"})";
}

// "seq run step attempt in-log|not-in-log" for each call, or the error.
std::vector<std::string> Listed(const pb::ListCallsResponse& resp) {
  std::vector<std::string> out;
  for (const pb::CallRef& c : resp.calls()) {
    out.push_back(absl::StrCat(c.seq(), " ", c.run_id(), " ", c.step_id(), " ", c.attempt(), " ",
                               c.step_in_log() ? "in-log" : "not-in-log"));
  }
  return out;
}

class ListCallsTest : public QueryTest {
 protected:
  grpc::Status List(const std::string& team, const std::string& trace, int page_size, const std::string& token,
                    pb::ListCallsResponse* out) {
    pb::ListCallsRequest req;
    req.set_team(team);
    req.set_trace_id(trace);
    req.set_page_size(page_size);
    req.set_page_token(token);
    grpc::ClientContext ctx;
    return steps_->ListCalls(&ctx, req, out);
  }

  std::vector<std::string> List(const std::string& team, const std::string& trace) {
    pb::ListCallsResponse resp;
    grpc::Status s = List(team, trace, 0, "", &resp);
    if (!s.ok()) return {s.error_message()};
    EXPECT_EQ(resp.next_page_token(), "");
    return Listed(resp);
  }
};

TEST_F(ListCallsTest, ATracesCallsComeInSeqOrderWithTheirStepInTheLogOrNot) {
  // A call before its step's start, a call of a step, an OpenTelemetry
  // span's call whose step no start opens, a call naming no step; a call of
  // another trace, one with none, another team's of the same trace.
  std::vector<uint64_t> seqs =
      Append({Call("early", "step-1", kTrace), Start("s1", "step-1"), Call("in-step", "step-1", kTrace),
              Call("span", "span-step", kTrace), Call("no-step", "", kTrace), Call("other", "step-1", kOther),
              Call("untraced", "step-1", ""), Call("b", "span-step", kTrace, "team-b")});
  ASSERT_EQ(seqs.size(), 8u);
  EXPECT_EQ(List("team-a", kTrace), (std::vector<std::string>{absl::StrCat(seqs[0], " run-1 step-1 1 in-log"),
                                                              absl::StrCat(seqs[2], " run-1 step-1 1 in-log"),
                                                              absl::StrCat(seqs[3], " run-1 span-step 1 not-in-log"),
                                                              absl::StrCat(seqs[4], " run-1  1 not-in-log")}));
  EXPECT_EQ(List("team-a", kOther), (std::vector<std::string>{absl::StrCat(seqs[5], " run-1 step-1 1 in-log")}));
  EXPECT_EQ(List("team-b", kTrace), (std::vector<std::string>{absl::StrCat(seqs[7], " run-1 span-step 1 not-in-log")}));
  EXPECT_EQ(List("team-c", kTrace), (std::vector<std::string>{}));
}

TEST_F(ListCallsTest, PagesContinueAfterTheirTokenWithCallsAppendedMeanwhileLast) {
  std::vector<uint64_t> seqs =
      Append({Call("c0", "span-step", kTrace), Call("c1", "span-step", kTrace), Call("c2", "span-step", kTrace)});
  pb::ListCallsResponse first;
  ASSERT_TRUE(List("team-a", kTrace, 2, "", &first).ok());
  ASSERT_EQ(first.calls_size(), 2);
  EXPECT_EQ(first.calls(1).seq(), seqs[1]);
  ASSERT_NE(first.next_page_token(), "");
  seqs.push_back(Append({Call("c3", "span-step", kTrace)})[0]);
  pb::ListCallsResponse second;
  ASSERT_TRUE(List("team-a", kTrace, 2, first.next_page_token(), &second).ok());
  EXPECT_EQ(Listed(second), (std::vector<std::string>{absl::StrCat(seqs[2], " run-1 span-step 1 not-in-log"),
                                                      absl::StrCat(seqs[3], " run-1 span-step 1 not-in-log")}));
  EXPECT_EQ(second.next_page_token(), "");
  // A token of another trace's list is refused.
  pb::ListCallsResponse other;
  grpc::Status s = List("team-a", kOther, 2, first.next_page_token(), &other);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "page_token: not a token of this query");
}

TEST_F(ListCallsTest, ATraceIdThatIsNot32LowercaseHexDigitsIsRefusedNamingTheRule) {
  EXPECT_EQ(
      List("team-a", ""),
      (std::vector<std::string>{"trace_id: required, 32 lowercase hex digits, not all zero (W3C trace context)"}));
  for (const std::string& bad : {std::string("4BF92F3577B34DA6A3CE929D0E0E4736"), std::string(kTrace) + "0",
                                 std::string("4bf92f3577b34da6a3ce929d0e0e473g"), std::string(32, '0')}) {
    EXPECT_EQ(List("team-a", bad),
              (std::vector<std::string>{"trace_id: must be 32 lowercase hex digits, not all zero (W3C trace context)"}))
        << bad;
  }
  EXPECT_EQ(List("Team A", kTrace), (std::vector<std::string>{"team: 'Team A' is not 1-63 bytes of [a-z0-9-]"}));
  pb::ListCallsResponse resp;
  grpc::Status s = List("team-a", kTrace, 1001, "", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "page_size: must be 0..1000 (0: 100)");
}

}  // namespace
}  // namespace ledger::query
