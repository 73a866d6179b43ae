#include "core/schedule/pipeline_order.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
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

// Gradient accumulation under a pipeline: one whole pass (fill, steady state, drain) per
// accumulation step, micro-batches numbered on; the rounds rule applies to one pass.
TEST(PipelineOrderTest, PassesRunOneAfterAnother) {
  Result<std::vector<std::vector<PipeAction>>> o = RepeatedPipelineOrder("1f1b", 2, 1, 2, 2);
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(Text((*o)[0]), "F0.0 F0.1 B0.0 B0.1 F0.2 F0.3 B0.2 B0.3 ");
  EXPECT_EQ(Text((*o)[1]), "F1.0 B1.0 F1.1 B1.1 F1.2 B1.2 F1.3 B1.3 ");
  // 7 micro-batches on 4 stages run in one round; 14 would need 3 rounds of a multiple of 3.
  EXPECT_TRUE(RepeatedPipelineOrder("interleaved_1f1b", 4, 2, 7, 2).ok());
  EXPECT_FALSE(PipelineOrder("interleaved_1f1b", 4, 2, 14).ok());
  EXPECT_FALSE(RepeatedPipelineOrder("1f1b", 2, 1, 2, 0).ok());
}

TEST(PipelineOrderTest, RefusesWhatItCannotOrder) {
  // 9 micro-batches on 4 stages: 2 rounds, and 9 is odd.
  Result<std::vector<std::vector<PipeAction>>> bad = PipelineOrder("interleaved_1f1b", 4, 2, 9);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "parallelism.pp_microbatches = 9: the interleaved 1F1B schedule runs the micro-batches "
            "in 2 rounds (pp_microbatches / pp, rounded down), and 9 is not a multiple of 2 "
            "(PyTorch's ScheduleInterleaved1F1B raises; 8 or 10 would do)");
  Result<std::vector<std::vector<PipeAction>>> virt = PipelineOrder("gpipe", 2, 2, 4);
  ASSERT_FALSE(virt.ok());
  EXPECT_NE(virt.status().message().find("parallelism.pp_virtual_stages = 2"), std::string::npos);
  Result<std::vector<std::vector<PipeAction>>> name = PipelineOrder("dualpipe", 2, 1, 4);
  ASSERT_FALSE(name.ok());
  EXPECT_NE(name.status().message().find("'dualpipe'"), std::string::npos);
}

// PyTorch's ScheduleInterleaved1F1B orders (tools/pipeline_order_reference.py, recorded with
// the torch named in the file; the torch-labelled test pipeline_orders_torch re-asks the
// installed one): multiples of pp, fewer micro-batches than stages, rounds longer than pp, and
// the counts PyTorch refuses.
TEST(PipelineOrderTest, InterleavedIsPyTorchsOrder) {
  std::ifstream in(std::string(SHARDSCOPE_SOURCE_DIR) +
                   "/tests/schedule/pipeline_orders_torch.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json ref = nlohmann::json::parse(in);
  ASSERT_GE(ref["cases"].size(), 10u);
  int refused = 0;
  for (const nlohmann::json& c : ref["cases"]) {
    const int pp = c["pp"], v = c["virtual_stages"], m = c["micro_batches"];
    SCOPED_TRACE(fmt::format("pp {} v {} micro-batches {}", pp, v, m));
    Result<std::vector<std::vector<PipeAction>>> o = PipelineOrder("interleaved_1f1b", pp, v, m);
    if (c.contains("error")) {
      EXPECT_FALSE(o.ok());
      ++refused;
      continue;
    }
    ASSERT_TRUE(o.ok()) << o.status().message();
    ASSERT_EQ(o->size(), c["orders"].size());
    for (size_t s = 0; s < o->size(); ++s) {
      std::string ours = Text((*o)[s]);
      ours.pop_back();  // Text's trailing space
      EXPECT_EQ(ours, c["orders"][s].get<std::string>()) << "stage " << s;
    }
  }
  EXPECT_GE(refused, 2);
}

}  // namespace
}  // namespace shardscope
