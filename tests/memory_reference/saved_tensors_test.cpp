// The saved-tensor table (core/model/saved_tensors.h) and the two bugs of issue 11: a
// checkpointed unit's saved input is the block's input, and Qwen3's q_norm / k_norm are sized
// by [tokens, heads · head_dim].
#include "core/model/saved_tensors.h"

#include <gtest/gtest.h>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/model/op_cost.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_options.h"
#include "core/util/units.h"

namespace shardscope {
namespace {

Result<Schedule> FromScenario(const nlohmann::json& doc, ModelTree* tree_out = nullptr) {
  SS_ASSIGN_OR_RETURN(Scenario sc, ParseScenario(doc, "job.json", "."));
  SS_ASSIGN_OR_RETURN(ModelTree tree, LoadModel(sc.model, ModelBuildOptions{}));
  SS_ASSIGN_OR_RETURN(Plan plan, PlanScenario(sc, tree));
  if (tree_out != nullptr) *tree_out = tree;
  return BuildScenarioSchedule(sc, tree, plan);
}

nlohmann::json Job(const nlohmann::json& model, const std::string& ac, int64_t seq) {
  return {{"model", model},
          {"cluster", {{"nodes", 1}, {"gpus_per_node", 8}}},
          {"training", {{"local_batch", 1}, {"seq_len", seq}, {"activation_checkpoint", ac}}}};
}

// Σ bytes of the buffers of `category` owned by the unit labelled `unit`.
int64_t UnitBytes(const Schedule& s, const std::string& unit, MemCategory category) {
  int64_t total = 0;
  for (const Buffer& b : s.buffers) {
    if (b.unit == unit && b.category == category) total += b.bytes;
  }
  return total;
}

// Issue 11, bug 1: with full checkpointing a Llama 3 8B layer keeps its input, the hidden state
// entering the block (8192 tokens · 4096 · bf16 = 64 MiB), not its first work item's (the
// attention core's q + k + v, 96 MiB): transformers registers self_attn before
// input_layernorm.
TEST(SavedTensorsTest, FullCheckpointingKeepsTheBlocksInput) {
  Result<Schedule> s = FromScenario(Job("llama3-8b", "full", 8192));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(UnitBytes(*s, "model.layers.0", MemCategory::kActivations), 64 * kMiB);
  EXPECT_EQ(UnitBytes(*s, "model.layers.31", MemCategory::kActivations), 64 * kMiB);
  // Llama 2 13B (MHA, hidden 5120): 40 MiB at 4096 tokens, not 120.
  Result<Schedule> l2 = FromScenario(Job("llama2-13b", "full", 4096));
  ASSERT_TRUE(l2.ok()) << l2.status().message();
  EXPECT_EQ(UnitBytes(*l2, "model.layers.0", MemCategory::kActivations), 40 * kMiB);
}

// Issue 11, bug 2: Qwen3's q_norm / k_norm normalise [tokens, heads, head_dim]; their weight is
// [head_dim]. At 8192 tokens q_norm's input is 32 heads · 128 · bf16 = 64 MiB (k_norm: 8 kv
// heads, 16 MiB), not 2 MiB.
TEST(SavedTensorsTest, PerHeadNormsAreSizedByTheirHeads) {
  Result<ModelSource> src = ClassifyModelArgument("qwen3-8b");
  ASSERT_TRUE(src.ok());
  Result<ModelTree> tree = LoadModel(*src, ModelBuildOptions{});
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  OpContext ctx;
  ctx.seq = 8192;
  int64_t q = -1, k = -1;
  for (const ModuleEntry& e : EnumerateModules(*tree)) {
    const Module& m = tree->modules[e.module];
    if (!m.op || m.op->kind != OpKind::kNorm) continue;
    if (e.fqn == "model.layers.0.self_attn.q_norm" || e.fqn == "model.layers.0.self_attn.k_norm") {
      Result<OpCost> c = EstimateOp(*m.op, ctx);
      ASSERT_TRUE(c.ok());
      (e.fqn.ends_with("q_norm") ? q : k) = c->input_bytes;
    }
  }
  EXPECT_EQ(q, 64 * kMiB);
  EXPECT_EQ(k, 16 * kMiB);
}

// transformers' LlamaRMSNorm keeps its fp32 upcast and the normalised tensor; torchtitan's
// nn.RMSNorm (fused on CUDA) keeps its input; SwiGLU saves SiLU's output besides gate and up.
TEST(SavedTensorsTest, RulesFollowTheImplementation) {
  OpDescriptor norm{OpKind::kNorm, "rmsnorm", {{"dim", 4096}}};
  OpContext ctx;
  ctx.seq = 8192;
  Result<OpCost> hf = EstimateOp(norm, ctx);
  ctx.implementation = Implementation::kTorchtitan;
  Result<OpCost> titan = EstimateOp(norm, ctx);
  ASSERT_TRUE(hf.ok() && titan.ok());
  const int64_t rstd = 8192 * 4;
  EXPECT_EQ(hf->saved_bytes_none, 128 * kMiB + 64 * kMiB + rstd);
  EXPECT_EQ(titan->saved_bytes_none, 64 * kMiB + rstd);
  OpDescriptor swiglu{OpKind::kActivation, "silu", {{"dim", 14336}, {"gated", 1}}};
  Result<OpCost> act = EstimateOp(swiglu, ctx);
  ASSERT_TRUE(act.ok());
  EXPECT_EQ(act->saved_bytes_none, 3 * 224 * kMiB);
  for (OpKind kind : {OpKind::kLinear, OpKind::kEmbedding, OpKind::kNorm, OpKind::kActivation,
                      OpKind::kAttention, OpKind::kRouter, OpKind::kExperts, OpKind::kLoss}) {
    for (Implementation impl : {Implementation::kTransformers, Implementation::kTorchtitan}) {
      const SavedTensorRule* r = FindSavedTensorRule(kind, "", impl);
      ASSERT_NE(r, nullptr) << OpKindName(kind) << " " << ImplementationName(impl);
      EXPECT_FALSE(r->mirrors.empty());
    }
  }
}

// The loss region: at the loss backward three fp32 [tokens, vocab] tensors are live (saved
// log-probabilities + the backward's two), the bf16 logits freed.
TEST(SavedTensorsTest, LossRegionHoldsThreeFp32Logits) {
  OpDescriptor loss{OpKind::kLoss, "", {{"vocab", 1000}}};
  OpContext ctx;
  ctx.seq = 64;
  Result<OpCost> c = EstimateOp(loss, ctx);
  ASSERT_TRUE(c.ok());
  const int64_t logits = 64 * 1000;
  EXPECT_EQ(c->saved_bytes_none, 4 * logits);
  EXPECT_EQ(c->saved_bytes_none + c->backward_workspace_bytes, 3 * 4 * logits);
  EXPECT_EQ(c->workspace_bytes, (2 + 4) * logits);
}

// The schedule allocates the loss region tensor by tensor (the caching allocator reuses a freed
// block only for a request that fits): forward the bf16 logits and their fp32 copy, backward
// the two fp32 gradients, each [tokens, vocab].
TEST(SavedTensorsTest, LossRegionTensorsAreBuffersOfTheirOwn) {
  Result<Schedule> s = FromScenario(Job("llama3.2-1b", "none", 1024));
  ASSERT_TRUE(s.ok()) << s.status().message();
  const int64_t logits = int64_t{1024} * 128256;
  auto temporaries = [&](const std::string& id) {
    std::vector<int64_t> sizes;
    for (const ScheduleOp& op : s->ops) {
      if (OpIdOf(*s, op) != id) continue;
      for (const MemoryEffect& m : EffectsOf(*s, op)) {
        if (m.bytes > 0 && m.category == MemCategory::kTemporaries) sizes.push_back(m.bytes);
      }
    }
    return sizes;
  };
  EXPECT_EQ(temporaries("fwd/root/compute:2"), (std::vector<int64_t>{2 * logits, 4 * logits}));
  EXPECT_EQ(temporaries("bwd/root/compute"), (std::vector<int64_t>{4 * logits, 4 * logits}));
}

// Where the loss runs sets when FSDP2's root hooks fire: inside the root (transformers) the
// root's pre-backward prefetch of the last layer precedes the loss backward; outside it
// (torchtitan) it follows.
TEST(SavedTensorsTest, RootPreBackwardFollowsTheLossPlacement) {
  auto index = [](const Schedule& s, const std::string& id) {
    for (size_t i = 0; i < s.ops.size(); ++i) {
      if (OpIdOf(s, s.ops[i]) == id) return static_cast<int>(i);
    }
    return -1;
  };
  Result<Schedule> hf = FromScenario(Job("llama3.2-1b", "none", 1024));
  Result<Schedule> titan = FromScenario(
      Job({{"builtin", "llama3.2-1b"}, {"implementation", "torchtitan"}}, "none", 1024));
  ASSERT_TRUE(hf.ok() && titan.ok());
  const std::string last = "bwd/model.layers.15/all_gather";
  ASSERT_GE(index(*hf, last), 0);
  EXPECT_LT(index(*hf, last), index(*hf, "bwd/root/compute"));
  EXPECT_GT(index(*titan, last), index(*titan, "bwd/root/compute"));
}

TEST(SavedTensorsTest, ScenarioFieldIsValidated) {
  nlohmann::json job =
      Job({{"builtin", "llama3-8b"}, {"implementation", "torchtitan"}}, "full", 1024);
  Result<Scenario> ok = ParseScenario(job, "job.json", ".");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->model.implementation, Implementation::kTorchtitan);
  job["model"]["implementation"] = "megatron";
  Result<Scenario> bad = ParseScenario(job, "job.json", ".");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model.implementation"), std::string::npos);
  EXPECT_NE(bad.status().message().find("transformers or torchtitan"), std::string::npos);
  nlohmann::json doc = Job("llama3-8b", "full", 1024);
  ASSERT_TRUE(ApplyOverride(doc, "model.implementation=torchtitan").ok());
  EXPECT_EQ(doc["model"],
            nlohmann::json({{"builtin", "llama3-8b"}, {"implementation", "torchtitan"}}));
}

}  // namespace
}  // namespace shardscope
