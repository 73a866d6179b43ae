#include "core/schedule/pipeline_order.h"

#include <gtest/gtest.h>

#include <string>

namespace shardscope {
namespace {

std::string Text(const std::vector<PipeAction>& actions) {
  std::string out;
  for (const PipeAction& a : actions) {
    out += (a.forward ? "F" : "B") + std::to_string(a.chunk) + "." + std::to_string(a.micro) + " ";
  }
  return out;
}

TEST(PipelineOrderTest, OneFOneBWarmsUpByDepth) {
  Result<std::vector<std::vector<PipeAction>>> o = PipelineOrder("1f1b", 4, 1, 4);
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(Text((*o)[0]), "F0.0 F0.1 F0.2 F0.3 B0.0 B0.1 B0.2 B0.3 ");
  EXPECT_EQ(Text((*o)[2]), "F2.0 F2.1 B2.0 F2.2 B2.1 F2.3 B2.2 B2.3 ");
  EXPECT_EQ(Text((*o)[3]), "F3.0 B3.0 F3.1 B3.1 F3.2 B3.2 F3.3 B3.3 ");
}

TEST(PipelineOrderTest, GPipeRunsAllForwardsFirst) {
  Result<std::vector<std::vector<PipeAction>>> o = PipelineOrder("gpipe", 2, 1, 3);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(Text((*o)[1]), "F1.0 F1.1 F1.2 B1.0 B1.1 B1.2 ");
}

TEST(PipelineOrderTest, InterleavedVisitsChunksInGroupsOfPp) {
  Result<std::vector<std::vector<PipeAction>>> o = PipelineOrder("interleaved_1f1b", 2, 2, 4);
  ASSERT_TRUE(o.ok());
  // Stage 1 holds chunks 1 and 3; warm-up (2−1−1)·2 + (2−1)·2 = 2 forwards.
  EXPECT_EQ(Text((*o)[1]),
            "F1.0 F1.1 F3.0 B3.0 F3.1 B3.1 F1.2 B1.0 F1.3 B1.1 F3.2 B3.2 F3.3 B3.3 B1.2 B1.3 ");
  // Every (chunk, micro) runs forward and backward exactly once per stage.
  for (const auto& stage : *o) EXPECT_EQ(stage.size(), 16u);
}

TEST(PipelineOrderTest, RefusesWhatItCannotOrder) {
  Result<std::vector<std::vector<PipeAction>>> bad = PipelineOrder("interleaved_1f1b", 4, 2, 6);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("parallelism.pp_microbatches"), std::string::npos);
  Result<std::vector<std::vector<PipeAction>>> virt = PipelineOrder("gpipe", 2, 2, 4);
  ASSERT_FALSE(virt.ok());
  EXPECT_NE(virt.status().message().find("parallelism.pp_virtual_stages = 2"), std::string::npos);
  Result<std::vector<std::vector<PipeAction>>> name = PipelineOrder("dualpipe", 2, 1, 4);
  ASSERT_FALSE(name.ok());
  EXPECT_NE(name.status().message().find("'dualpipe'"), std::string::npos);
}

}  // namespace
}  // namespace shardscope
