#include "core/util/did_you_mean.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

TEST(DidYouMean, EditDistanceAndSuggestions) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("H200", "h200"), 0u);
  EXPECT_EQ(DidYouMean("gemm_efficency", {"gemm_efficiency", "gemm_tile"}),
            " (did you mean gemm_efficiency?)");
  EXPECT_EQ(DidYouMean("zzzzzz", {"gemm_efficiency"}), "");
}

TEST(DidYouMean, ScenarioKeysAndEmptyStrings) {
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("tp", "tp"), 0u);
  EXPECT_EQ(DidYouMean("tq", {"tp", "cp", "pipeline"}), " (did you mean tp or cp?)");
}

}  // namespace
}  // namespace shardscope
