#include "core/util/count_text.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

TEST(CountTextTest, OneIsSingularEveryOtherCountPlural) {
  EXPECT_EQ(CountOf(1, "combination"), "1 combination");
  EXPECT_EQ(CountOf(0, "combination"), "0 combinations");
  EXPECT_EQ(CountOf(16, "variant"), "16 variants");
  EXPECT_EQ(CountOf(1, "axis", "axes"), "1 axis");
  EXPECT_EQ(CountOf(3, "axis", "axes"), "3 axes");
  EXPECT_EQ(CountOf(-1, "variant"), "-1 variants");
}

}  // namespace
}  // namespace shardscope
