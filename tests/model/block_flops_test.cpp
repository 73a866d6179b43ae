// The descriptors of a built block and the closed forms agree with the textbook count:
// forward FLOPs of a dense decoder block = 2·tokens·(linear weights) + attention core.
#include <gtest/gtest.h>

#include "core/model/model_source.h"
#include "core/model/op_cost.h"

namespace shardscope {
namespace {

struct BlockFlops {
  double fwd = 0;
  int64_t linear_weights = 0;
  int attention_ops = 0;
};

BlockFlops SumBlock(const ModelTree& tree, const std::string& block, const OpContext& ctx) {
  BlockFlops out;
  for (const ModuleEntry& e : EnumerateModules(tree)) {
    if (e.fqn.rfind(block + ".", 0) != 0) continue;
    const Module& m = tree.modules[static_cast<size_t>(e.module)];
    if (!m.op) continue;
    auto cost = EstimateOp(*m.op, ctx);
    EXPECT_TRUE(cost.ok()) << e.fqn;
    out.fwd += cost->fwd_flops;
    if (m.op->kind == OpKind::kLinear) out.linear_weights += m.op->dim("in") * m.op->dim("out");
    if (m.op->kind == OpKind::kAttention) ++out.attention_ops;
  }
  return out;
}

TEST(BlockFlopsTest, DenseLlamaBlockMatchesClosedForm) {
  ModelSource source;
  source.name_or_path = "llama3-8b";
  auto tree = LoadModel(source, {});
  ASSERT_TRUE(tree.ok());
  OpContext ctx;
  ctx.batch = 2;
  ctx.seq = 4096;
  const BlockFlops f = SumBlock(*tree, "model.layers.0", ctx);
  // 4096·(4096 + 1024 + 1024 + 4096) + 3·4096·14336 weights in the block's linears.
  EXPECT_EQ(f.linear_weights, int64_t{4096} * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336);
  EXPECT_EQ(f.attention_ops, 1);
  const double tokens = 2.0 * 4096;
  const double attention = 4.0 * 2 * 4096.0 * 4096 * 32 * 128 / 2;  // causal: half
  EXPECT_DOUBLE_EQ(f.fwd, 2.0 * tokens * static_cast<double>(f.linear_weights) + attention);
  // Under tp = 4 every linear of the block is column or row parallel and the heads split.
  ctx.tp = 4;
  EXPECT_DOUBLE_EQ(SumBlock(*tree, "model.layers.0", ctx).fwd, f.fwd / 4);
}

TEST(BlockFlopsTest, SlidingWindowLayersOfGptOssAlternate) {
  ModelSource source;
  source.name_or_path = "gpt-oss-20b";
  auto tree = LoadModel(source, {});
  ASSERT_TRUE(tree.ok());
  OpContext ctx;
  ctx.seq = 8192;
  const double sliding = SumBlock(*tree, "model.layers.0", ctx).fwd;
  const double full = SumBlock(*tree, "model.layers.1", ctx).fwd;
  EXPECT_LT(sliding, full);  // layer 0 attends 128 keys back, layer 1 the whole prefix
}

}  // namespace
}  // namespace shardscope
