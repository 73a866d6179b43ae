#include "core/model/op_cost.h"

#include <gtest/gtest.h>

#include <variant>
#include <vector>

namespace shardscope {
namespace {

OpDescriptor Op(OpKind kind, std::map<std::string, int64_t> dims, std::string variant = "") {
  OpDescriptor op;
  op.kind = kind;
  op.dims = std::move(dims);
  op.variant = std::move(variant);
  return op;
}

OpContext Ctx(int64_t batch, int64_t seq, int tp = 1) {
  OpContext c;
  c.batch = batch;
  c.seq = seq;
  c.tp = tp;
  return c;
}

TEST(OpCostTest, ParsesCheckpointModes) {
  EXPECT_EQ(ParseActivationCheckpoint("none", "f")->mode, CheckpointMode::kNone);
  EXPECT_EQ(ParseActivationCheckpoint("full", "f")->mode, CheckpointMode::kFull);
  EXPECT_EQ(ParseActivationCheckpoint("selective_op", "f")->mode, CheckpointMode::kSelectiveOp);
  auto layer = ParseActivationCheckpoint("selective_layer:3", "f");
  ASSERT_TRUE(layer.ok());
  EXPECT_EQ(layer->mode, CheckpointMode::kSelectiveLayer);
  EXPECT_EQ(layer->every_k, 3);
  EXPECT_EQ(ActivationCheckpointName(*layer), "selective_layer:3");
  auto op2 = ParseActivationCheckpoint("selective_op:2", "f");
  ASSERT_TRUE(op2.ok());
  EXPECT_EQ(op2->mode, CheckpointMode::kSelectiveOp);
  EXPECT_EQ(op2->recompute_every_mm, 2);
  EXPECT_EQ(ActivationCheckpointName(*op2), "selective_op:2");
  EXPECT_EQ(ParseActivationCheckpoint("selective_op", "f")->recompute_every_mm, 0);
  for (const char* bad : {"selective_layer:0", "selective_layer:", "selective_layer:2x", "all",
                          "selective_op:0", "selective_op:", "selective_op:-1"}) {
    auto r = ParseActivationCheckpoint(bad, "training.activation_checkpoint");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(), std::string("training.activation_checkpoint: bad activation "
                                                "checkpoint mode '") +
                                        bad +
                                        "' (expected none, full, selective_op, "
                                        "selective_op:K or selective_layer:K with K >= 1)");
  }
}

TEST(OpCostTest, LinearFlopsAndTensorParallelStyles) {
  const auto lin = Op(OpKind::kLinear, {{"in", 4096}, {"out", 14336}});
  auto c = EstimateOp(lin, Ctx(2, 1024));
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->fwd_flops, 2.0 * 2048 * 4096 * 14336);
  EXPECT_DOUBLE_EQ(c->bwd_flops, 2.0 * c->fwd_flops);
  EXPECT_EQ(c->saved_bytes_none, 2048 * 4096 * 2);        // its bf16 input
  EXPECT_EQ(c->saved_bytes_selective, 2048 * 14336 * 2);  // its output
  EXPECT_EQ(c->gemm_m, 2048);
  EXPECT_EQ(c->gemm_n, 14336);
  // Replicated over tp: all the work; column/row: a quarter, on different gemm dims.
  EXPECT_DOUBLE_EQ(EstimateOp(lin, Ctx(2, 1024, 4))->fwd_flops, c->fwd_flops);
  auto col =
      EstimateOp(Op(OpKind::kLinear, {{"in", 4096}, {"out", 14336}}, "column"), Ctx(2, 1024, 4));
  EXPECT_DOUBLE_EQ(col->fwd_flops, c->fwd_flops / 4);
  EXPECT_EQ(col->gemm_n, 14336 / 4);
  auto row =
      EstimateOp(Op(OpKind::kLinear, {{"in", 4096}, {"out", 14336}}, "row"), Ctx(2, 1024, 4));
  EXPECT_DOUBLE_EQ(row->fwd_flops, c->fwd_flops / 4);
  EXPECT_EQ(row->gemm_k, 4096 / 4);
  auto shared =
      EstimateOp(Op(OpKind::kLinear, {{"in", 8}, {"out", 8}, {"shared_input", 1}}), Ctx(1, 16));
  EXPECT_EQ(shared->saved_bytes_none, 0);
}

TEST(OpCostTest, AttentionCausalHalvesAndWindowBounds) {
  const std::map<std::string, int64_t> dims = {{"heads", 32}, {"kv_heads", 8}, {"head_dim", 128}};
  auto full = EstimateOp(Op(OpKind::kAttention, dims), Ctx(2, 4096));
  auto causal_dims = dims;
  causal_dims["causal"] = 1;
  auto causal = EstimateOp(Op(OpKind::kAttention, causal_dims), Ctx(2, 4096));
  ASSERT_TRUE(full.ok() && causal.ok());
  EXPECT_DOUBLE_EQ(full->fwd_flops, 4.0 * 2 * 4096.0 * 4096 * 32 * 128);
  EXPECT_DOUBLE_EQ(causal->fwd_flops, full->fwd_flops / 2);
  EXPECT_DOUBLE_EQ(causal->bwd_flops, 2.5 * causal->fwd_flops);
  causal_dims["window"] = 1024;
  auto window = EstimateOp(Op(OpKind::kAttention, causal_dims), Ctx(2, 4096));
  // Each query sees at most 1024 keys: 4096·1024 − 1024²/2 pairs per sequence and head.
  EXPECT_DOUBLE_EQ(window->fwd_flops, 4.0 * 2 * 32 * 128 * (4096.0 * 1024 - 1024.0 * 1024 / 2));
  // Saved: q (32 heads), k and v (8 heads), output, and fp32 lse.
  const int64_t tokens = 2 * 4096;
  EXPECT_EQ(causal->saved_bytes_none, tokens * 128 * 2 * (32 + 8 + 8 + 32) + tokens * 32 * 4);
  // Under selective_op only its own outputs: q, k, v are the projections' (saved) outputs and
  // must not be counted twice.
  EXPECT_EQ(causal->saved_bytes_selective, tokens * 128 * 2 * 32 + tokens * 32 * 4);
  // Eager RoPE, repeat_kv and the output transpose move more bytes than the kernel alone.
  const int64_t kernel_bytes = tokens * 128 * 2 * (32 + 8 + 8 + 32) + tokens * 32 * 4;
  EXPECT_GT(causal->fwd_bytes, 2 * kernel_bytes);
  // Those eager kernels are the side bytes (priced in series with the fused kernel): all of
  // fwd_bytes but the kernel's own I/O.
  EXPECT_EQ(causal->side_fwd_bytes, causal->fwd_bytes - kernel_bytes);
  EXPECT_EQ(causal->side_bwd_bytes, causal->side_fwd_bytes);
  // Tensor parallelism splits the heads.
  EXPECT_DOUBLE_EQ(EstimateOp(Op(OpKind::kAttention, dims), Ctx(2, 4096, 4))->fwd_flops,
                   full->fwd_flops / 4);
}

TEST(OpCostTest, MlaValueHeadDimEntersTheFlops) {
  auto c = EstimateOp(Op(OpKind::kAttention, {{"heads", 128},
                                              {"kv_heads", 128},
                                              {"head_dim", 192},
                                              {"v_head_dim", 128},
                                              {"causal", 1}}),
                      Ctx(1, 1000));
  EXPECT_DOUBLE_EQ(c->fwd_flops, 2.0 * 128 * (1000.0 * 1000 / 2) * (192 + 128));
}

TEST(OpCostTest, ExpertsUseRoutedTokensPerRank) {
  const auto experts =
      Op(OpKind::kExperts,
         {{"experts", 128}, {"top_k", 8}, {"dim", 2048}, {"ffn", 768}, {"gated", 1}});
  OpContext ctx = Ctx(1, 4096);
  auto c1 = EstimateOp(experts, ctx);
  ctx.ep = 8;
  auto c8 = EstimateOp(experts, ctx);
  ASSERT_TRUE(c1.ok() && c8.ok());
  EXPECT_DOUBLE_EQ(c1->fwd_flops, 2.0 * 4096 * 8 * 2048 * 768 * 3);
  // EP moves tokens, not work: each rank's 16 experts get every EP rank's tokens routed to them,
  // 8 ranks · 4096 tokens · 8 / 128 experts = 2048 each, as many token-expert pairs as its own
  // 4096 tokens make.
  EXPECT_DOUBLE_EQ(c8->fwd_flops, c1->fwd_flops);
  EXPECT_EQ(c8->gemm_m, 4096 * 8 / 16);  // routed tokens per local expert
}

TEST(OpCostTest, NormsActivationsAndLossAreMemoryBound) {
  auto norm = EstimateOp(Op(OpKind::kNorm, {{"dim", 4096}}, "rmsnorm"), Ctx(1, 100));
  EXPECT_EQ(norm->fwd_flops, 0);
  // transformers' eager RMSNorm (the default implementation) saves its fp32 upcast, the fp32
  // rstd and the normalised input in bf16 (core/model/saved_tensors.cpp).
  EXPECT_EQ(norm->saved_bytes_none, 100 * 4096 * (4 + 2) + 100 * 4);
  EXPECT_EQ(norm->saved_bytes_selective, 0);
  auto act = EstimateOp(Op(OpKind::kActivation, {{"dim", 1000}, {"gated", 1}}, "silu"), Ctx(1, 10));
  // SwiGLU: silu saves its input (the gate output), the multiply both operands.
  EXPECT_EQ(act->saved_bytes_none, 3 * 10 * 1000 * 2);
  auto loss = EstimateOp(Op(OpKind::kLoss, {{"vocab", 128256}}), Ctx(2, 8192));
  // Eager cross-entropy: forward's transients are the bf16 logits and their fp32 copy, the
  // fp32 log-probabilities are saved; backward adds their gradient and the fp32 logits'.
  const int64_t logits = int64_t{2} * 8192 * 128256;
  EXPECT_EQ(loss->workspace_bytes, logits * (2 + 4));
  EXPECT_EQ(loss->saved_bytes_none, logits * 4);
  EXPECT_EQ(loss->backward_workspace_bytes, logits * (4 + 4));
  // Eager RMSNorm moves far more than one read and one write of its input; LayerNorm is one
  // fused kernel each way (plus the residual add both carry).
  auto layer_norm = EstimateOp(Op(OpKind::kNorm, {{"dim", 4096}}, "layernorm"), Ctx(1, 100));
  EXPECT_GT(norm->fwd_bytes, 2 * layer_norm->fwd_bytes);
  EXPECT_GE(layer_norm->fwd_bytes, 2 * 100 * 4096 * 2);
  EXPECT_EQ(act->fwd_bytes, 5 * 10 * 1000 * 2);  // silu(gate): r+w; mul: 2r+w
  auto emb = EstimateOp(Op(OpKind::kEmbedding, {{"vocab", 100}, {"dim", 8}}), Ctx(2, 8));
  EXPECT_EQ(emb->saved_bytes_none, 16 * 8);  // int64 indices
  // Eager launches: the composite RMSNorm is nine kernels forward (with the residual add),
  // fused LayerNorm two; SwiGLU two; the loss three.
  EXPECT_EQ(norm->fwd_kernels, 9);
  EXPECT_GT(norm->bwd_kernels, norm->fwd_kernels);
  EXPECT_EQ(layer_norm->fwd_kernels, 2);
  EXPECT_EQ(act->fwd_kernels, 2);
  EXPECT_EQ(loss->fwd_kernels, 3);
}

TEST(OpCostTest, AttentionCountsItsEagerSideKernels) {
  std::map<std::string, int64_t> dims = {
      {"heads", 32}, {"kv_heads", 8}, {"head_dim", 128}, {"causal", 1}};
  auto gqa = EstimateOp(Op(OpKind::kAttention, dims), Ctx(1, 1024));
  dims["kv_heads"] = 32;
  auto mha = EstimateOp(Op(OpKind::kAttention, dims), Ctx(1, 1024));
  ASSERT_TRUE(gqa.ok() && mha.ok());
  // Fused kernel + RoPE (3 per q and k) + the transpose copy; repeat_kv adds two copies.
  EXPECT_EQ(mha->fwd_kernels, 1 + 6 + 1);
  EXPECT_EQ(gqa->fwd_kernels, mha->fwd_kernels + 2);
  EXPECT_GT(gqa->bwd_kernels, gqa->fwd_kernels);
}

// The work a backend runs: shapes after tp / cp / ep, no cost figures.
TEST(OpWorkTest, DescriptionsCarryTheShapesABackendRuns) {
  OpContext ctx = Ctx(2, 4096, 4);
  ctx.cp = 2;
  ctx.ep = 8;
  const auto col = DescribeOp(Op(OpKind::kLinear, {{"in", 4096}, {"out", 14336}}, "column"), ctx);
  ASSERT_TRUE(col.ok());
  const auto& g = std::get<GemmWork>(*col);
  EXPECT_EQ(g.m, 2 * 4096 / 2);  // tokens after cp
  EXPECT_EQ(g.k, 4096);
  EXPECT_EQ(g.n, 14336 / 4);  // output features sharded over tp
  EXPECT_EQ(g.a_dtype, DType::kBFloat16);
  EXPECT_EQ(g.router_top_k, 0);
  const auto attn = DescribeOp(
      Op(OpKind::kAttention,
         {{"heads", 32}, {"kv_heads", 8}, {"head_dim", 128}, {"causal", 1}, {"window", 1024}}),
      ctx);
  const auto& a = std::get<AttentionWork>(*attn);
  EXPECT_EQ(a.heads, 8);
  EXPECT_EQ(a.kv_heads, 2);
  EXPECT_EQ(a.seq, 4096);
  EXPECT_EQ(a.query_shards, 2);
  EXPECT_EQ(a.q_seq(), 2048);
  EXPECT_EQ(a.kv_seq(), 4096);
  EXPECT_EQ(a.query_tokens(), 2 * 2048);
  EXPECT_EQ(a.v_head_dim, 128);
  EXPECT_TRUE(a.causal);
  EXPECT_EQ(a.window, 1024);
  const auto experts =
      DescribeOp(Op(OpKind::kExperts,
                    {{"experts", 64}, {"top_k", 6}, {"dim", 2048}, {"ffn", 1408}, {"gated", 1}}),
                 ctx);
  const auto& e = std::get<GroupedGemmWork>(*experts);
  EXPECT_EQ(e.experts, 8);
  EXPECT_EQ(e.routed_tokens, 4096 * 6);  // every EP rank's tokens routed to these 8 experts
  EXPECT_EQ(e.tokens_per_expert(), 4096 * 6 / 8);
  EXPECT_EQ(e.branches, 2);
  const auto norm = DescribeOp(Op(OpKind::kNorm, {{"dim", 4096}}, "rmsnorm"), ctx);
  const auto& n = std::get<EltwiseWork>(*norm);
  EXPECT_EQ(n.elements, 4096 * 4096);  // sequence parallelism off: all tokens
  EXPECT_EQ(n.fwd_kernels, 9);
  const auto loss = DescribeOp(Op(OpKind::kLoss, {{"vocab", 128256}}), ctx);
  EXPECT_EQ(std::get<LossWork>(*loss).vocab, 128256);  // gathered logits without loss_parallel
  EXPECT_EQ(std::get<LossWork>(*loss).compute_dtype, DType::kFloat32);
  const auto emb = DescribeOp(Op(OpKind::kEmbedding, {{"vocab", 128256}, {"dim", 4096}}), ctx);
  EXPECT_EQ(std::get<EmbeddingWork>(*emb).tokens, 4096);
  EXPECT_FALSE(DescribeOp(Op(OpKind::kLinear, {{"in", 8}, {"out", 8}}), Ctx(0, 8)).ok());
}

// The figures next to a description are computable from it: the closed forms written out
// from the description's fields, and EstimateOp's figures equal to FiguresOf(DescribeOp).
TEST(OpWorkTest, FiguresFollowFromTheDescription) {
  GemmWork g;
  g.m = 1000;
  g.n = 300;
  g.k = 70;
  g.count = 3;
  g.w_dtype = DType::kFloat32;
  WorkFigures f = FiguresOf(g);
  EXPECT_DOUBLE_EQ(f.fwd_flops, 3 * 2.0 * 1000 * 300 * 70);
  EXPECT_DOUBLE_EQ(f.bwd_flops, 2 * f.fwd_flops);  // data- and weight-gradient GEMMs
  EXPECT_EQ(f.fwd_bytes, 3 * (1000 * 70 * 2 + 70 * 300 * 4 + 1000 * 300 * 2));
  EXPECT_EQ(f.gemm_m, 1000);
  EXPECT_EQ(f.gemm_n, 300);
  EXPECT_EQ(f.gemm_k, 70);
  // Backward's two GEMMs have the forward's FLOPs each, at their own shapes.
  const GemmWork dgrad = g.DataGradient(), wgrad = g.WeightGradient();
  EXPECT_EQ(dgrad.m, 1000);
  EXPECT_EQ(dgrad.n, 70);
  EXPECT_EQ(dgrad.k, 300);
  EXPECT_EQ(wgrad.m, 70);
  EXPECT_EQ(wgrad.n, 300);
  EXPECT_EQ(wgrad.k, 1000);
  EXPECT_EQ(wgrad.out_dtype, DType::kFloat32);  // the weight's gradient, in its dtype
  EXPECT_DOUBLE_EQ(FiguresOf(dgrad).fwd_flops + FiguresOf(wgrad).fwd_flops, f.bwd_flops);

  AttentionWork a;
  a.batch = 2;
  a.heads = 8;
  a.kv_heads = 8;
  a.seq = 1024;
  a.query_shards = 2;
  a.head_dim = 64;
  a.v_head_dim = 32;
  a.causal = true;
  f = FiguresOf(a);
  EXPECT_DOUBLE_EQ(f.fwd_flops, 2.0 * 2 * 8 * (1024.0 * 1024 / 2) * (64 + 32) / 2);
  EXPECT_DOUBLE_EQ(f.bwd_flops, 2.5 * f.fwd_flops);
  EXPECT_EQ(f.fwd_kernels, 1 + 6 + 1);  // no repeat_kv without grouped-query heads

  GroupedGemmWork e;
  e.experts = 4;
  e.routed_tokens = 4000;
  e.dim = 512;
  e.ffn = 256;
  e.branches = 2;
  f = FiguresOf(e);
  EXPECT_DOUBLE_EQ(f.fwd_flops, 2.0 * 4000 * 512 * 256 * 3);
  EXPECT_EQ(f.gemm_m, 1000);
  EXPECT_EQ(f.gemm_n, 512);

  EltwiseWork chain;
  chain.fwd_bytes = 123;
  chain.bwd_bytes = 456;
  chain.fwd_kernels = 2;
  chain.bwd_kernels = 3;
  f = FiguresOf(chain);
  EXPECT_EQ(f.fwd_bytes, 123);
  EXPECT_EQ(f.bwd_kernels, 3);
  EXPECT_EQ(f.fwd_flops, 0);
  // The optimizer's and the copies' traffic is the cost model's (sim/cost), not core's.
  EXPECT_EQ(FiguresOf(OptimizerWork{}).fwd_bytes, 0);
  EXPECT_EQ(FiguresOf(FsdpCopyWork{}).fwd_bytes, 0);

  OpContext ctx = Ctx(2, 2048, 2);
  ctx.cp = 2;
  ctx.sequence_parallel = true;
  const std::vector<OpDescriptor> ops = {
      Op(OpKind::kLinear, {{"in", 4096}, {"out", 1024}, {"bias", 1}}, "row"),
      Op(OpKind::kEmbedding, {{"vocab", 32000}, {"dim", 4096}}, "vocab"),
      Op(OpKind::kNorm, {{"dim", 4096}}, "layernorm"),
      Op(OpKind::kActivation, {{"dim", 11008}, {"gated", 1}}),
      Op(OpKind::kAttention, {{"heads", 32}, {"kv_heads", 4}, {"head_dim", 128}, {"causal", 1}}),
      Op(OpKind::kRouter, {{"dim", 2048}, {"experts", 64}, {"top_k", 6}}),
      Op(OpKind::kExperts, {{"experts", 64}, {"top_k", 6}, {"dim", 2048}, {"ffn", 1408}}),
      Op(OpKind::kLoss, {{"vocab", 32000}}),
  };
  for (const OpDescriptor& op : ops) {
    const auto work = DescribeOp(op, ctx);
    const auto cost = EstimateOp(op, ctx);
    ASSERT_TRUE(work.ok() && cost.ok());
    const WorkFigures w = FiguresOf(*work);
    EXPECT_DOUBLE_EQ(cost->fwd_flops, w.fwd_flops) << static_cast<int>(op.kind);
    EXPECT_DOUBLE_EQ(cost->bwd_flops, w.bwd_flops) << static_cast<int>(op.kind);
    EXPECT_EQ(cost->fwd_bytes, w.fwd_bytes) << static_cast<int>(op.kind);
    EXPECT_EQ(cost->bwd_bytes, w.bwd_bytes) << static_cast<int>(op.kind);
    EXPECT_EQ(cost->side_fwd_bytes, w.side_fwd_bytes) << static_cast<int>(op.kind);
    EXPECT_EQ(cost->fwd_kernels, w.fwd_kernels) << static_cast<int>(op.kind);
    EXPECT_EQ(cost->bwd_kernels, w.bwd_kernels) << static_cast<int>(op.kind);
    EXPECT_EQ(cost->gemm_m, w.gemm_m) << static_cast<int>(op.kind);
  }
}

TEST(OpCostTest, RejectsBadContext) {
  OpContext ctx = Ctx(1, 16);
  ctx.tp = 0;
  auto r = EstimateOp(Op(OpKind::kLinear, {{"in", 8}, {"out", 8}}), ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "op cost: batch, seq, tp, cp and ep must all be >= 1 (got batch=1, seq=16, tp=0, "
            "cp=1, ep=1)");
}

// Issue 15: dimensions the tree loader allows (2^32) can still form products past int64 with
// the scenario's tokens; such an op is refused with the figure, never priced with a wrapped one.
TEST(OpCostTest, RefusesFiguresBeyondSixtyFourBits) {
  const int64_t huge = int64_t{1} << 32;
  auto linear = EstimateOp(Op(OpKind::kLinear, {{"in", huge}, {"out", huge}}), Ctx(2, 8192));
  ASSERT_FALSE(linear.ok());
  EXPECT_EQ(linear.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(linear.status().message(),
            "op cost: linear op on 16384 tokens per micro-batch forms tensors of 1.84e+19 "
            "elements, beyond the limit of 2^51 (its byte counts would not fit 64 bits); check "
            "the op's dimensions, or training.seq_len and training.local_batch");
  // repeat_kv multiplies by the head count before dividing: heads² enters the bound.
  auto attention =
      EstimateOp(Op(OpKind::kAttention, {{"heads", 1 << 20}, {"kv_heads", 1}, {"head_dim", 128}}),
                 Ctx(1, 1 << 16));
  EXPECT_FALSE(attention.ok());
  // The largest real ops (a 256K vocabulary over 1M tokens per micro-batch, DeepSeek-V3's
  // experts) are far inside it.
  EXPECT_TRUE(EstimateOp(Op(OpKind::kLoss, {{"vocab", 262144}}), Ctx(128, 8192)).ok());
  EXPECT_TRUE(EstimateOp(Op(OpKind::kExperts,
                            {{"experts", 256}, {"top_k", 8}, {"dim", 7168}, {"ffn", 2048}}),
                         Ctx(16, 4096))
                  .ok());
}

}  // namespace
}  // namespace shardscope
