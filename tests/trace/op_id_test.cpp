#include "core/trace/op_id.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

TEST(OpId, FormatsEveryShape) {
  EXPECT_EQ(MakeOpId(OpPhase::kForward, "model.layers.3", op_what::kAllGather),
            "fwd/model.layers.3/all_gather");
  EXPECT_EQ(MakeOpId(OpPhase::kBackward, "model.layers.3", op_what::kCompute, 1),
            "bwd/model.layers.3/compute:1");
  EXPECT_EQ(MakeOpId(OpPhase::kBackward, ChunkRootLabel(1), op_what::kReduceScatter, 0, 2),
            "mb2/bwd/root.chunk1/reduce_scatter");
  EXPECT_EQ(MakeOpId(OpPhase::kForward, ChunkLabel(0), op_what::kSend), "fwd/chunk0/send");
  EXPECT_EQ(MakeOpId(OpPhase::kStep, "", op_what::kOptimizer), "step/optimizer");
  EXPECT_EQ(MakeOpId(OpPhase::kStep, "", op_what::kOptimizer, 0, 0), "mb0/step/optimizer");
  EXPECT_EQ(UnitOpLabel(""), "root");
  EXPECT_EQ(UnitOpLabel("model.layers.0"), "model.layers.0");
}

TEST(OpId, ParseInvertsFormat) {
  for (const char* text :
       {"fwd/model.layers.3/all_gather", "bwd/model.layers.3/compute:1", "mb12/bwd/root/compute",
        "mb2/bwd/root.chunk1/reduce_scatter", "fwd/chunk0/send", "step/optimizer",
        "mb3/step/wait_reductions", "bwd/model.layers.0.mlp.experts/ep_combine:7"}) {
    Result<OpId> id = ParseOpId(text);
    ASSERT_TRUE(id.ok()) << text << ": " << id.status().message();
    EXPECT_EQ(FormatOpId(*id), text);
  }
  Result<OpId> id = ParseOpId("mb2/bwd/model.layers.3/tp_all_reduce:4");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->micro, 2);
  EXPECT_EQ(id->phase, OpPhase::kBackward);
  EXPECT_EQ(id->unit, "model.layers.3");
  EXPECT_EQ(id->what, "tp_all_reduce");
  EXPECT_EQ(id->index, 4);
}

TEST(OpId, RejectsMalformedWithTheText) {
  for (const char* text : {"", "fwd", "xyz/root/compute", "fwd//compute", "fwd/a/b/compute",
                           "fwd/root/", "fwd/root/compute:0", "fwd/root/compute:x",
                           "mbx/fwd/root/compute", "step/root/optimizer", "mb1"}) {
    Result<OpId> id = ParseOpId(text);
    ASSERT_FALSE(id.ok()) << text;
    EXPECT_EQ(id.status().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(id.status().message().find(std::string("'") + text + "'"), std::string::npos)
        << id.status().message();
  }
}

}  // namespace
}  // namespace shardscope
