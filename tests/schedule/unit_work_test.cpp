#include "core/schedule/unit_work.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <variant>

#include "core/config/scenario.h"
#include "core/schedule/schedule_options.h"
#include "tests/schedule/test_model.h"

namespace shardscope::testing {
namespace {

// A plan with the root as its only unit (module 0), enough for the tree walk.
Plan RootOnly() {
  Plan p;
  UnitPlan root;
  root.is_root = true;
  root.module = 0;
  p.units.push_back(root);
  return p;
}

std::vector<std::string> CommKinds(const UnitWork& w, bool forward) {
  std::vector<std::string> out;
  for (const WorkEntry& e : w.entries) {
    if (e.kind != WorkEntry::Kind::kComm) continue;
    for (const CommSpec& c : forward ? e.fwd : e.bwd) out.push_back(c.what);
  }
  return out;
}

TEST(UnitWorkTest, ExpertParallelAllToAllsSurroundTheRoutedExperts) {
  ModelTree t;
  int moe = t.AddModule(0, MakeModule("moe", "MoE"));
  Leaf(t, moe, "gate", "Router", Op(OpKind::kRouter, {{"dim", 64}, {"experts", 8}, {"top_k", 2}}),
       {8, 64});
  Leaf(
      t, moe, "experts", "Experts",
      Op(OpKind::kExperts, {{"experts", 8}, {"top_k", 2}, {"dim", 64}, {"ffn", 128}, {"gated", 1}}),
      {8, 256, 64});
  ScheduleOptions o;
  o.ep = 4;
  OpContext ctx;
  ctx.batch = 2;
  ctx.seq = 32;
  ctx.ep = 4;
  WorkGroups g;
  g.ep = 0;
  std::vector<std::string> names;
  Result<std::vector<UnitWork>> w = BuildUnitWork(t, RootOnly(), o, ctx, g, names);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const UnitWork& root = (*w)[0];
  EXPECT_EQ(names.at(root.entries[2].item.module), "moe.experts");
  EXPECT_EQ(CommKinds(root, true), (std::vector<std::string>{"ep_dispatch", "ep_combine"}));
  EXPECT_EQ(CommKinds(root, false), (std::vector<std::string>{"ep_dispatch", "ep_combine"}));
  // Order: router, dispatch, experts, combine; size tokens · top_k · dim · bf16.
  ASSERT_EQ(root.entries.size(), 4u);
  EXPECT_EQ(root.entries[1].fwd[0].bytes, 2 * 32 * 2 * 64 * 2);
  EXPECT_EQ(root.entries[2].item.kind, OpKind::kExperts);
  EXPECT_EQ(root.entries[1].fwd[0].type, OpType::kAllToAll);

  g.ep = -1;  // ep = 1: no all-to-all
  Result<std::vector<UnitWork>> local = BuildUnitWork(t, RootOnly(), o, ctx, g, names);
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(CommKinds((*local)[0], true).empty());
}

// Every module item says what to run (its Work) next to the figures the estimator gave.
TEST(UnitWorkTest, ItemsCarryTheirModulesWorkDescriptions) {
  ModelTree t;
  int moe = t.AddModule(0, MakeModule("moe", "MoE"));
  Leaf(t, moe, "gate", "Router", Op(OpKind::kRouter, {{"dim", 64}, {"experts", 8}, {"top_k", 2}}),
       {8, 64});
  Leaf(
      t, moe, "experts", "Experts",
      Op(OpKind::kExperts, {{"experts", 8}, {"top_k", 2}, {"dim", 64}, {"ffn", 128}, {"gated", 1}}),
      {8, 256, 64});
  ScheduleOptions o;
  OpContext ctx;
  ctx.batch = 2;
  ctx.seq = 32;
  ctx.ep = 2;
  std::vector<std::string> names;
  Result<std::vector<UnitWork>> w = BuildUnitWork(t, RootOnly(), o, ctx, WorkGroups{}, names);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const std::vector<WorkEntry>& entries = (*w)[0].entries;
  ASSERT_EQ(entries.size(), 2u);
  const auto* router = std::get_if<GemmWork>(&entries[0].item.work);
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->m, 64);
  EXPECT_EQ(router->n, 8);
  EXPECT_EQ(router->router_top_k, 2);
  const auto* experts = std::get_if<GroupedGemmWork>(&entries[1].item.work);
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->experts, 4);
  EXPECT_EQ(experts->routed_tokens, 64 * 2);  // ep 2: both ranks' tokens routed to these 4 experts
  for (const WorkEntry& e : entries) {
    EXPECT_TRUE(e.item.is_module());
    EXPECT_DOUBLE_EQ(FiguresOf(e.item.work).fwd_flops, e.item.cost.fwd_flops);
    EXPECT_EQ(FiguresOf(e.item.work).fwd_bytes, e.item.cost.fwd_bytes);
  }
}

TEST(UnitWorkTest, ContextParallelGathersKeysAndValuesBeforeAttention) {
  ModelTree t = TinyLlama(TinyShape{1});
  ScheduleOptions o;
  OpContext ctx;
  ctx.batch = 1;
  ctx.seq = 128;
  ctx.cp = 2;
  WorkGroups g;
  g.cp = 0;
  std::vector<std::string> names;
  Result<std::vector<UnitWork>> w = BuildUnitWork(t, RootOnly(), o, ctx, g, names);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(CommKinds((*w)[0], true), (std::vector<std::string>{"cp_all_gather"}));
  EXPECT_EQ(CommKinds((*w)[0], false),
            (std::vector<std::string>{"cp_all_gather", "cp_reduce_scatter"}));
  // K and V of all 128 tokens: 4 kv heads × (32 + 32) dims × bf16.
  for (const WorkEntry& e : (*w)[0].entries) {
    if (e.kind == WorkEntry::Kind::kComm) {
      EXPECT_EQ(e.fwd[0].bytes, 128 * 4 * 64 * 2);
    }
  }
  // The loss runs last although it hangs on the root module.
  EXPECT_EQ((*w)[0].entries.back().item.kind, OpKind::kLoss);
}

// BuildUnitWork describes each distinct descriptor once and hands its figures to every module
// that repeats it: equal descriptors give equal items, a different variant or dimension its
// own.
TEST(UnitWorkTest, ModulesShareTheFiguresOfEqualDescriptorsOnly) {
  ModelTree t;
  Leaf(t, 0, "a", "Linear", Op(OpKind::kLinear, {{"in", 64}, {"out", 128}}, "column"), {128, 64});
  Leaf(t, 0, "b", "Linear", Op(OpKind::kLinear, {{"in", 64}, {"out", 128}}, "column"), {128, 64});
  Leaf(t, 0, "c", "Linear", Op(OpKind::kLinear, {{"in", 64}, {"out", 128}}, "row"), {128, 64});
  Leaf(t, 0, "d", "Linear", Op(OpKind::kLinear, {{"in", 64}, {"out", 96}}, "column"), {96, 64});
  ScheduleOptions o;
  o.tp = 2;
  OpContext ctx;
  ctx.batch = 2;
  ctx.seq = 16;
  ctx.tp = 2;
  std::vector<std::string> names;
  Result<std::vector<UnitWork>> w = BuildUnitWork(t, RootOnly(), o, ctx, WorkGroups{}, names);
  ASSERT_TRUE(w.ok()) << w.status().message();
  std::map<std::string, const GemmWork*> gemm;
  std::map<std::string, double> flops;
  for (const WorkEntry& e : (*w)[0].entries) {
    if (e.kind != WorkEntry::Kind::kItem) continue;
    gemm[names.at(e.item.module)] = std::get_if<GemmWork>(&e.item.work);
    flops[names.at(e.item.module)] = e.item.cost.fwd_flops;
  }
  ASSERT_EQ(gemm.size(), 4u);
  for (const auto& [name, g] : gemm) ASSERT_NE(g, nullptr) << name;
  // column: the output features split over tp; row: the input features.
  EXPECT_EQ(gemm["a"]->n, 64);
  EXPECT_EQ(gemm["a"]->k, 64);
  EXPECT_EQ(gemm["b"]->n, 64);
  EXPECT_EQ(gemm["c"]->n, 128);
  EXPECT_EQ(gemm["c"]->k, 32);
  EXPECT_EQ(gemm["d"]->n, 48);
  EXPECT_DOUBLE_EQ(flops["a"], flops["b"]);
  EXPECT_DOUBLE_EQ(flops["a"], flops["c"]);  // the same work, split the other way
  EXPECT_DOUBLE_EQ(flops["d"], flops["a"] * 96 / 128);
}

TEST(UnitWorkTest, ScenarioFieldsReachTheOptions) {
  nlohmann::json doc = {{"model", "llama3-8b"},
                        {"cluster", {{"nodes", 2}, {"gpus_per_node", 8}}},
                        {"parallelism", {{"tp", 2}, {"dp_replicate", 2}}},
                        {"fsdp", {{"requires_grad_sync", false}}},
                        {"training",
                         {{"local_batch", 3},
                          {"seq_len", 4096},
                          {"grad_accum", 2},
                          {"activation_checkpoint", "full"},
                          {"optimizer", "sgd"}}}};
  Result<Scenario> s = ParseScenario(doc, "job.json", ".");
  ASSERT_TRUE(s.ok()) << s.status().message();
  const ScheduleOptions o = ScheduleOptionsFromScenario(*s);
  EXPECT_EQ(o.world_size, 16);
  EXPECT_EQ(o.tp, 2);
  EXPECT_EQ(o.dp_replicate, 2);
  EXPECT_EQ(o.dp_shard, 4);
  EXPECT_EQ(o.local_batch, 3);
  EXPECT_EQ(o.seq_len, 4096);
  EXPECT_EQ(o.grad_accum, 2);
  EXPECT_EQ(o.activation_checkpoint.mode, CheckpointMode::kFull);
  EXPECT_EQ(o.optimizer, "sgd");
  EXPECT_FALSE(o.requires_grad_sync);
  EXPECT_TRUE(o.reshard_after_backward);
}

}  // namespace
}  // namespace shardscope::testing
