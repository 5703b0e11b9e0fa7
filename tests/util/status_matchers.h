// GoogleMock matchers for absl::Status and absl::StatusOr<T> (Debian's
// Abseil ships none), so that a test names the error it expects rather
// than only "not ok":
//
//   EXPECT_THAT(VerifyInclusion(...), StatusIs(absl::StatusCode::kInvalidArgument,
//                                              HasSubstr("leads to root")));
//   EXPECT_THAT(Parse("x"), StatusIs(absl::StatusCode::kInvalidArgument, "line 1: no size"));
//
// StatusIs(code) matches any message; StatusIs(code, m) matches the message
// with `m`, a string (the whole message, exactly) or a string matcher
// (HasSubstr, StartsWith, ...). A StatusOr matches by its status, so an OK
// StatusOr matches StatusIs(absl::StatusCode::kOk). On a mismatch the
// failure prints the code and the message found.
//
// Header-only; tests link GTest::gmock (ledger_test does).
#ifndef TESTS_UTIL_STATUS_MATCHERS_H_
#define TESTS_UTIL_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace ledger::testing {
namespace internal_status {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

class StatusIsMatcher {
 public:
  StatusIsMatcher(absl::StatusCode code, ::testing::Matcher<const std::string&> message)
      : code_(code), message_(std::move(message)) {}

  template <typename T>
  bool MatchAndExplain(const T& value, ::testing::MatchResultListener* listener) const {
    const absl::Status& status = GetStatus(value);
    *listener << "whose code is " << absl::StatusCodeToString(status.code()) << " and message is \"" << status.message()
              << "\"";
    if (status.code() != code_) return false;
    ::testing::StringMatchResultListener inner;
    if (message_.MatchAndExplain(std::string(status.message()), &inner)) return true;
    if (!inner.str().empty()) *listener << ", " << inner.str();
    return false;
  }

  void DescribeTo(std::ostream* os) const {
    *os << "has code " << absl::StatusCodeToString(code_) << " and a message that ";
    message_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "has a code other than " << absl::StatusCodeToString(code_) << " or a message that ";
    message_.DescribeNegationTo(os);
  }

 private:
  absl::StatusCode code_;
  ::testing::Matcher<const std::string&> message_;
};

}  // namespace internal_status

// The status (of a Status or a StatusOr) has `code` and a message that
// `message` matches: a string is the whole message, exactly.
inline ::testing::PolymorphicMatcher<internal_status::StatusIsMatcher> StatusIs(
    absl::StatusCode code, ::testing::Matcher<const std::string&> message) {
  return ::testing::MakePolymorphicMatcher(internal_status::StatusIsMatcher(code, std::move(message)));
}

// The status has `code`, whatever its message.
inline ::testing::PolymorphicMatcher<internal_status::StatusIsMatcher> StatusIs(absl::StatusCode code) {
  return StatusIs(code, ::testing::A<const std::string&>());
}

}  // namespace ledger::testing

#endif  // TESTS_UTIL_STATUS_MATCHERS_H_
