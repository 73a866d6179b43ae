#include "core/util/status.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

namespace shardscope {
namespace {

constexpr int kHalfErrorLine = __LINE__ + 3;
Result<int> Half(int x) {
  if (x % 2 != 0) {
    return InvalidInput("x: expected an even number, got " + std::to_string(x));
  }
  return x / 2;
}

constexpr int kQuarterSecondLine = __LINE__ + 3;
Result<int> Quarter(int x) {
  SS_ASSIGN_OR_RETURN(int h, Half(x));
  SS_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

constexpr int kEighthLine = __LINE__ + 2;
Status Eighth(int x) {
  SS_RETURN_IF_ERROR(Quarter(x).status());
  return Status::Ok();
}

Status Deep(int depth) {
  if (depth == 0) return RuntimeError("bottom");
  SS_RETURN_IF_ERROR(Deep(depth - 1));
  return Status::Ok();
}

Status CheckPositive(int x) {
  if (x <= 0) return InvalidInput("x must be positive");
  return Status::Ok();
}

Status Both(int a, int b) {
  SS_RETURN_IF_ERROR(CheckPositive(a));
  SS_RETURN_IF_ERROR(CheckPositive(b));
  return Status::Ok();
}

TEST(StatusTest, ExitCodesFollowFormatsSpec) {
  EXPECT_EQ(Status::Ok().exit_code(), 0);
  EXPECT_EQ(CheckFailed("x").exit_code(), 1);
  EXPECT_EQ(InvalidInput("x").exit_code(), 2);
  EXPECT_EQ(RuntimeError("x").exit_code(), 3);
}

TEST(StatusTest, PropagatesFirstError) {
  EXPECT_TRUE(Both(1, 2).ok());
  Status s = Both(1, -1);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.message(), "x must be positive");
}

TEST(ResultTest, AssignOrReturn) {
  Result<int> ok = Quarter(12);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  Result<int> bad = Quarter(6);  // 6 → 3 → odd
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "x: expected an even number, got 3");
}

TEST(StatusTest, WithContextPrefixes) {
  EXPECT_EQ(InvalidInput("bad").WithContext("a.json").message(), "a.json: bad");
  EXPECT_TRUE(Status::Ok().WithContext("a.json").ok());
}

TEST(StatusTest, TrailRecordsWhereTheErrorWasMadeAndPassed) {
  Status s = Eighth(6);  // 6 → 3 → odd: made in Half, passed by Quarter's second line, Eighth
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "x: expected an even number, got 3");  // the message stays clean
  ASSERT_EQ(s.trail().size(), 3u);
  for (const SourceFrame& f : s.trail())
    EXPECT_TRUE(std::string_view(f.file).ends_with("tests/util/status_test.cpp"));
  EXPECT_EQ(s.trail()[0].line, kHalfErrorLine);
  EXPECT_EQ(s.trail()[1].line, kQuarterSecondLine);
  EXPECT_EQ(s.trail()[2].line, kEighthLine);
  const std::string file = "tests/util/status_test.cpp:";
  EXPECT_EQ(s.TrailText(), file + std::to_string(kHalfErrorLine) + " <- " + file +
                               std::to_string(kQuarterSecondLine) + " <- " + file +
                               std::to_string(kEighthLine));
  // Context keeps the trail; OK statuses have none.
  EXPECT_EQ(s.WithContext("a.json").trail().size(), 3u);
  EXPECT_TRUE(Status::Ok().WithFrame(__FILE__, __LINE__).trail().empty());
  EXPECT_EQ(Status::Ok().TrailText(), "");
}

// An error another process has said keeps its code and message, and the mark, however it is
// passed on (main then exits with the code without printing it).
Status SaidOnce() { return InvalidInput("bad --vary").SaidElsewhere(); }
Status PassesIt() {
  SS_RETURN_IF_ERROR(SaidOnce());
  return Status::Ok();
}
TEST(StatusTest, SaidElsewhereSurvivesPassingOn) {
  EXPECT_FALSE(InvalidInput("x").said_elsewhere());
  const Status s = PassesIt().WithContext("sweep");
  EXPECT_TRUE(s.said_elsewhere());
  EXPECT_EQ(s.exit_code(), 2);
  EXPECT_EQ(s.message(), "sweep: bad --vary");
}

TEST(StatusTest, TrailIsCappedAtItsInnermostFrames) {
  Status s = Deep(40);
  ASSERT_EQ(s.trail().size(), Status::kMaxTrail);
  EXPECT_EQ(s.message(), "bottom");
  EXPECT_EQ(s.trail()[0].line, s.trail()[1].line - 1);  // made, then the first propagation
}

TEST(StatusTest, ErrorTraceFollowsTheEnvironment) {
  unsetenv("SHARDSCOPE_ERROR_TRACE");
  EXPECT_FALSE(ErrorTraceRequested());
  setenv("SHARDSCOPE_ERROR_TRACE", "0", 1);
  EXPECT_FALSE(ErrorTraceRequested());
  setenv("SHARDSCOPE_ERROR_TRACE", "1", 1);
  EXPECT_TRUE(ErrorTraceRequested());
  unsetenv("SHARDSCOPE_ERROR_TRACE");
}

// In every build type (no assert): value() of an error aborts with the error's message.
TEST(ResultDeathTest, ValueOfAnErrorAbortsWithItsMessage) {
  Result<int> bad = Quarter(6);
  EXPECT_DEATH((void)bad.value(),
               "Result::value\\(\\) on an error: x: expected an even number, got 3 \\[at "
               "tests/util/status_test.cpp:");
  EXPECT_DEATH((void)*Quarter(5), "on an error: x: expected an even number, got 5");
  EXPECT_DEATH((void)Result<int>(Status::Ok()), "Result constructed from an OK status");
}

}  // namespace
}  // namespace shardscope
