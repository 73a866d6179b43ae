#include "core/util/limits.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/util/file_io.h"

namespace shardscope {
namespace {

TEST(LimitsTest, DefaultsAndTheEnvironment) {
  ::unsetenv("SHARDSCOPE_MAX_MODULES");
  EXPECT_EQ(LimitValue(Limit::kModules), int64_t{1} << 20);
  EXPECT_EQ(LimitValue(Limit::kInputBytes), int64_t{2} << 30);
  ::setenv("SHARDSCOPE_MAX_MODULES", "12", 1);
  EXPECT_EQ(LimitValue(Limit::kModules), 12);
  EXPECT_TRUE(CheckLimit(Limit::kModules, 12, "t.json").ok());
  const Status s = CheckLimit(Limit::kModules, 13, "t.json");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.message(),
            "t.json: 13 modules, more than the limit of 12 (set SHARDSCOPE_MAX_MODULES to raise "
            "it)");
  // Not a positive integer: the default stays (a typo must not lift every bound).
  // ... and the program refuses to start with it (CheckLimitVariables, called by main).
  for (const char* bad : {"0", "-5", "12x", "", "99999999999999999999"}) {
    ::setenv("SHARDSCOPE_MAX_MODULES", bad, 1);
    EXPECT_EQ(LimitValue(Limit::kModules), int64_t{1} << 20) << bad;
    const Status check = CheckLimitVariables();
    EXPECT_EQ(check.code(), ErrorCode::kInvalidInput) << bad;
    EXPECT_EQ(
        check.message().rfind(
            std::string("SHARDSCOPE_MAX_MODULES=") + bad + ": expected a positive integer", 0),
        0u)
        << check.message();
  }
  ::setenv("SHARDSCOPE_MAX_MODULES", "12", 1);
  EXPECT_TRUE(CheckLimitVariables().ok());
  ::unsetenv("SHARDSCOPE_MAX_MODULES");
  EXPECT_TRUE(CheckLimitVariables().ok());
}

// A character device never ends: the read stops at the limit instead of filling memory.
TEST(LimitsTest, EndlessInputStopsAtTheLimit) {
  ::setenv("SHARDSCOPE_MAX_INPUT_BYTES", "1000000", 1);
  auto r = ReadFile("/dev/zero");
  ::unsetenv("SHARDSCOPE_MAX_INPUT_BYTES");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "/dev/zero: is larger than 1000000 bytes, the limit on any input (set "
            "SHARDSCOPE_MAX_INPUT_BYTES to raise it)");
}

}  // namespace
}  // namespace shardscope
