#include "tests/util/status_matchers.h"

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ledger::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// What the matcher says of `value`, as a failing EXPECT_THAT prints it after "Actual:".
template <typename M, typename T>
std::string Explain(const M& matcher, const T& value) {
  ::testing::StringMatchResultListener listener;
  ::testing::ExplainMatchResult(matcher, value, &listener);
  return listener.str();
}

TEST(StatusIs, MatchesTheCodeWhateverTheMessage) {
  EXPECT_THAT(absl::InvalidArgumentError("seq: 7 is not in a tree of size 5"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(absl::OkStatus(), StatusIs(absl::StatusCode::kOk));
  EXPECT_THAT(absl::InvalidArgumentError("x"), Not(StatusIs(absl::StatusCode::kDataLoss)));
  EXPECT_THAT(absl::OkStatus(), Not(StatusIs(absl::StatusCode::kInvalidArgument)));
}

TEST(StatusIs, AStringIsTheWholeMessageExactly) {
  absl::Status s = absl::DataLossError("entry 3: leaf hash differs");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss, "entry 3: leaf hash differs"));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss, std::string("entry 3: leaf hash differs")));
  EXPECT_THAT(s, Not(StatusIs(absl::StatusCode::kDataLoss, "entry 3")));
  EXPECT_THAT(s, Not(StatusIs(absl::StatusCode::kDataLoss, "entry 3: leaf hash differs ")));
  // The right message with the wrong code is no match.
  EXPECT_THAT(s, Not(StatusIs(absl::StatusCode::kInvalidArgument, "entry 3: leaf hash differs")));
}

TEST(StatusIs, TakesAStringMatcherForTheMessage) {
  absl::Status s = absl::InvalidArgumentError("inclusion: proof for index 5 leads to root ab, expected cd");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("leads to root")));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("inclusion: ")));
  EXPECT_THAT(s, Not(StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("consistency"))));
}

TEST(StatusIs, MatchesAStatusOrByItsStatus) {
  absl::StatusOr<int> bad = absl::NotFoundError("node 3/0");
  EXPECT_THAT(bad, StatusIs(absl::StatusCode::kNotFound, "node 3/0"));
  absl::StatusOr<std::string> good = std::string("root");
  EXPECT_THAT(good, StatusIs(absl::StatusCode::kOk));
  EXPECT_THAT(good, Not(StatusIs(absl::StatusCode::kNotFound)));
}

TEST(StatusIs, AMismatchPrintsTheCodeAndTheMessageFound) {
  absl::Status s = absl::InvalidArgumentError("consistency: proof is empty");
  EXPECT_EQ(Explain(StatusIs(absl::StatusCode::kDataLoss), s),
            "whose code is INVALID_ARGUMENT and message is \"consistency: proof is empty\"");
  EXPECT_EQ(Explain(StatusIs(absl::StatusCode::kInvalidArgument, "consistency: proof is short"), s),
            "whose code is INVALID_ARGUMENT and message is \"consistency: proof is empty\"");
  absl::StatusOr<int> v = absl::DataLossError("row 9");
  EXPECT_EQ(Explain(StatusIs(absl::StatusCode::kOk), v), "whose code is DATA_LOSS and message is \"row 9\"");
  EXPECT_EQ(::testing::DescribeMatcher<absl::Status>(StatusIs(absl::StatusCode::kDataLoss, "row 9")),
            "has code DATA_LOSS and a message that is equal to \"row 9\"");
  EXPECT_EQ(::testing::DescribeMatcher<absl::Status>(StatusIs(absl::StatusCode::kDataLoss, "row 9"), true),
            "has a code other than DATA_LOSS or a message that isn't equal to \"row 9\"");
}

}  // namespace
}  // namespace ledger::testing
