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

// A name a candidate begins with comes first, before candidates a letter away (the GPU catalog:
// "gb200" had b200, h200 and b300 suggested, and not gb200-nvl72).
TEST(DidYouMean, ANameACandidateBeginsWithComesFirst) {
  const std::vector<std::string> gpus = {"h100-sxm", "h200", "b200", "b300", "gb200-nvl72"};
  EXPECT_EQ(DidYouMean("gb200", gpus), " (did you mean gb200-nvl72, b200 or h200?)");
  EXPECT_EQ(DidYouMean("GB200", gpus), " (did you mean gb200-nvl72, b200 or h200?)");
  EXPECT_EQ(DidYouMean("h100", gpus), " (did you mean h100-sxm, h200 or b200?)");
}

}  // namespace
}  // namespace shardscope
