#include "core/util/status.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidInput("x: expected an even number, got " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  SS_ASSIGN_OR_RETURN(int h, Half(x));
  SS_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
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

}  // namespace
}  // namespace shardscope
