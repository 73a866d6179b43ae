// planning.md §2 steps 5 (meshes, policies), 6 (reduction), 9 (prefetch) and the §4 warnings.
#include <gtest/gtest.h>

#include "tests/plan/plan_test_util.h"

namespace shardscope {
namespace {

using namespace testing_util;
using Names = std::vector<std::string>;

TEST(PlannerPolicyTest, HsdpVersusFsdpMesh) {
  Plan fsdp = PlanOf(LlamaLike(1), Mesh(8, 8), Config(Mesh(8, 8)));
  EXPECT_EQ(fsdp.root().mesh.dims, (Names{"fsdp_shard"}));
  EXPECT_EQ(fsdp.root().mesh.sizes, (std::vector<int>{8}));
  MeshContext hsdp_mesh = Mesh(16, 8);
  Plan hsdp = PlanOf(LlamaLike(1), hsdp_mesh, Config(hsdp_mesh));
  EXPECT_EQ(Unit(hsdp, "model.layers.0").mesh.dims, (Names{"fsdp_replicate", "fsdp_shard"}));
  EXPECT_EQ(Unit(hsdp, "model.layers.0").mesh.sizes, (std::vector<int>{2, 8}));
  EXPECT_EQ(Unit(hsdp, "model.layers.0").mesh.shard_size(), 8);
  EXPECT_EQ(Unit(hsdp, "model.layers.0").mesh.replicate_size(), 2);
  EXPECT_EQ(hsdp.mesh.dp_replicate, 2);
  // CP folds into the shard dim: W=16, cp=2, dp_shard=16 → plain FSDP over 16.
  MeshContext cp = Mesh(16, 16, 1, 2);
  Plan cp_plan = PlanOf(LlamaLike(1), cp, Config(cp));
  EXPECT_EQ(cp_plan.root().mesh.dims, (Names{"fsdp_shard"}));
  EXPECT_EQ(cp_plan.root().mesh.sizes, (std::vector<int>{16}));
}

TEST(PlannerPolicyTest, ConfigMustMatchTheMesh) {
  MeshContext mesh = Mesh(8, 8);
  FsdpConfig c = Config(mesh);
  c.dp_shard_size = 4;
  EXPECT_EQ(ErrorOf(LlamaLike(1), mesh, c),
            "fsdp_config.dp_shard_size = 4 but the mesh was built with dp_shard = 8");
  c = Config(mesh);
  c.forward_prefetch_depth = -1;
  EXPECT_EQ(ErrorOf(LlamaLike(1), mesh, c),
            "fsdp_config.forward_prefetch_depth = -1 (expected >= 0)");
}

// One unit's (reduce op, scaling factor) for a mesh and whether any layout is given.
std::pair<ReduceOp, std::optional<double>> Reduction(const MeshContext& mesh, bool layout) {
  PlanOptions o;
  if (layout)
    o.source_layouts["model.layers.0.mlp.up_proj.weight"] = {{"tp", Placement::Replicate()}};
  Plan plan = PlanOf(LlamaLike(1), mesh, Config(mesh), o);
  const UnitPlan& u = Unit(plan, "model.layers.0");
  return {u.reduce_op, u.gradient_scaling_factor};
}

TEST(PlannerPolicyTest, GradientScaling) {
  // Absent metadata: average, no factor.
  auto [op, f] = Reduction(Mesh(8, 8), false);
  EXPECT_EQ(op, ReduceOp::kAvg);
  EXPECT_FALSE(f.has_value());
  // Present (one all-default entry): sum with 1/(dp·cp·tp) = 1/8.
  std::tie(op, f) = Reduction(Mesh(8, 8), true);
  EXPECT_EQ(op, ReduceOp::kSum);
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(*f, 1.0 / 8);
  // tp = 2 (present because tp > 1): D = dp·cp·tp = 4·1·2.
  std::tie(op, f) = Reduction(Mesh(8, 4, 2), false);
  EXPECT_EQ(op, ReduceOp::kSum);
  EXPECT_DOUBLE_EQ(*f, 1.0 / 8);
  // loss_parallel drops the tp factor: D = 4.
  std::tie(op, f) = Reduction(Mesh(8, 4, 2, 1, 1, 1, /*loss_parallel=*/true), false);
  EXPECT_DOUBLE_EQ(*f, 1.0 / 4);
  // cp = 2: D = dp·cp = 4·2 (tp = 1).
  std::tie(op, f) = Reduction(Mesh(8, 8, 1, 2), true);
  EXPECT_DOUBLE_EQ(*f, 1.0 / 8);
  // D = 1: sum without a factor.
  std::tie(op, f) = Reduction(Mesh(1, 1), true);
  EXPECT_EQ(op, ReduceOp::kSum);
  EXPECT_FALSE(f.has_value());
}

TEST(PlannerPolicyTest, ScaledUnitsCountOnlyUnitsWithParameters) {
  AdapterSpec a;
  a.name = "t";
  a.fsdp_wrap_modules = {"model.layers.0.mlp"};
  a.fsdp_excluded_subtrees = {};
  PlanOptions o;
  o.adapter = &a;
  MeshContext mesh = Mesh(8, 4, 2);
  Plan plan = PlanOf(LlamaLike(2), mesh, Config(mesh), o);
  // Units: layers 0, 1, the declared mlp and the root, all with parameters.
  EXPECT_EQ(plan.totals.scaled_units, 4);
}

TEST(PlannerPolicyTest, ReshardAndMixedPrecision) {
  MeshContext mesh = Mesh(8, 8);
  FsdpConfig c = Config(mesh);
  c.reshard_after_forward = true;
  c.mix_precision.param_dtype = DType::kBFloat16;
  c.mix_precision.reduce_dtype = DType::kFloat32;
  c.enable_offload = true;
  c.comm_fusion = true;
  Plan plan = PlanOf(LlamaLike(1), mesh, c);
  EXPECT_FALSE(plan.root().reshard_after_forward);
  EXPECT_TRUE(Unit(plan, "model.layers.0").reshard_after_forward);
  const MixedPrecisionPlan& mp = Unit(plan, "model.layers.0").mixed_precision;
  EXPECT_EQ(mp.param_dtype, DType::kBFloat16);
  EXPECT_EQ(mp.reduce_dtype, DType::kFloat32);
  EXPECT_TRUE(Unit(plan, "model.layers.0").offload);
  EXPECT_TRUE(Unit(plan, "model.layers.0").comm_fusion_zero_copy);  // null follows comm_fusion
  // reduce == param is dropped; param == the parameters' own dtype (float32) is dropped.
  c.mix_precision.param_dtype = DType::kFloat32;
  c.mix_precision.reduce_dtype = DType::kFloat32;
  c.reshard_after_forward = false;
  plan = PlanOf(LlamaLike(1), mesh, c);
  EXPECT_FALSE(Unit(plan, "model.layers.0").mixed_precision.param_dtype.has_value());
  EXPECT_FALSE(Unit(plan, "model.layers.0").mixed_precision.reduce_dtype.has_value());
  EXPECT_FALSE(Unit(plan, "model.layers.0").reshard_after_forward);
  c.mix_precision.param_dtype = DType::kBFloat16;
  c.mix_precision.reduce_dtype = DType::kBFloat16;
  plan = PlanOf(LlamaLike(1), mesh, c);
  EXPECT_EQ(Unit(plan, "model.layers.0").mixed_precision.param_dtype, DType::kBFloat16);
  EXPECT_FALSE(Unit(plan, "model.layers.0").mixed_precision.reduce_dtype.has_value());
}

// Units in execution order: a, a.0, a.1, b, b.0 (a and b declared, nested blocks automatic).
Plan NestedPlan(int forward, int backward) {
  TreeBuilder t;
  for (const char* top : {"a", "b"}) {
    const int m = t.Add(0, top, "Tower", true);
    const int list = t.Add(m, "blocks", "ModuleList");
    for (int i = 0; i < (top[0] == 'a' ? 2 : 1); ++i) {
      const int blk = t.Add(list, std::to_string(i), "Block");
      t.P(t.Add(blk, "fc"), "weight", {512, 1024});
    }
    t.P(t.Add(m, "proj"), "weight", {512, 1024});
  }
  AdapterSpec a;
  a.name = "t";
  a.fsdp_wrap_modules = {"a", "b"};
  a.fsdp_excluded_subtrees = {};
  PlanOptions o;
  o.adapter = &a;
  // Declared towers are excluded from discovery, so declare their blocks too.
  a.fsdp_wrap_modules = {"a", "a.blocks.*", "b", "b.blocks.*"};
  MeshContext mesh = Mesh(4, 4);
  FsdpConfig c = Config(mesh);
  c.forward_prefetch_depth = forward;
  c.backward_prefetch_depth = backward;
  return PlanOf(t.tree, mesh, c, o);
}

TEST(PlannerPolicyTest, PrefetchDepths) {
  Plan p0 = NestedPlan(0, 0);
  EXPECT_EQ(ExecOrder(p0), (Names{"a", "a.blocks.0", "a.blocks.1", "b", "b.blocks.0"}));
  for (const UnitPlan& u : p0.units) {
    EXPECT_TRUE(u.forward_prefetch.empty());
    EXPECT_TRUE(u.backward_prefetch.empty());
  }
  Plan p1 = NestedPlan(1, 1);
  EXPECT_EQ(Unit(p1, "a").forward_prefetch, (Names{"a.blocks.0"}));
  EXPECT_TRUE(Unit(p1, "a").backward_prefetch.empty());
  EXPECT_EQ(Unit(p1, "a.blocks.1").forward_prefetch, (Names{"b"}));
  EXPECT_EQ(Unit(p1, "a.blocks.1").backward_prefetch, (Names{"a.blocks.0"}));
  EXPECT_TRUE(Unit(p1, "b.blocks.0").forward_prefetch.empty());
  EXPECT_TRUE(p1.root().forward_prefetch.empty());
  EXPECT_TRUE(p1.root().backward_prefetch.empty());
  Plan p2 = NestedPlan(2, 2);
  EXPECT_EQ(Unit(p2, "a.blocks.0").forward_prefetch, (Names{"a.blocks.1", "b"}));
  EXPECT_EQ(Unit(p2, "b").backward_prefetch, (Names{"a.blocks.1", "a.blocks.0"}));
  EXPECT_EQ(Unit(p2, "b.blocks.0").backward_prefetch, (Names{"b", "a.blocks.1"}));
  Plan p3 = NestedPlan(3, 3);
  EXPECT_EQ(Unit(p3, "a").forward_prefetch, (Names{"a.blocks.0", "a.blocks.1", "b"}));
  EXPECT_EQ(Unit(p3, "b.blocks.0").backward_prefetch, (Names{"b", "a.blocks.1", "a.blocks.0"}));
  EXPECT_EQ(Unit(p3, "a.blocks.0").backward_prefetch, (Names{"a"}));  // stops at 0
  EXPECT_EQ(p3.forward_prefetch_depth, 3);
}

TEST(PlannerPolicyTest, PrefetchOfAParentWarns) {
  // a.blocks.0's backward target is its parent a, already unsharded: one warning per unit.
  Plan p1 = NestedPlan(1, 1);
  EXPECT_EQ(CountWarnings(p1, "prefetch_parent_unsharded"), 2);  // a.blocks.0, b.blocks.0
  Plan p0 = NestedPlan(0, 0);
  EXPECT_EQ(CountWarnings(p0, "prefetch_parent_unsharded"), 0);
  Plan p3 = NestedPlan(3, 3);
  // a.blocks.0 (→a), a.blocks.1 (→a), b.blocks.0 (→b).
  EXPECT_EQ(CountWarnings(p3, "prefetch_parent_unsharded"), 3);
}

TEST(PlannerPolicyTest, EmptyAndSmallUnitWarnings) {
  MeshContext mesh = Mesh(8, 8);
  // LlamaLike(1) layers hold 2·64² + 2·256·64 + 64 floats ≈ 160 KiB: below 1 MiB.
  Plan plan = PlanOf(LlamaLike(2), mesh, Config(mesh));
  EXPECT_EQ(CountWarnings(plan, "small_unit"), 2);
  PlanOptions o;
  o.small_unit_bytes = 1024;
  plan = PlanOf(LlamaLike(2), mesh, Config(mesh), o);
  EXPECT_EQ(CountWarnings(plan, "small_unit"), 0);
  // A unit whose parameters all belong to nested units is empty.
  AdapterSpec a;
  a.name = "t";
  a.fsdp_wrap_modules = {"model.layers.0.mlp", "model.layers.0.self_attn",
                         "model.layers.0.input_layernorm"};
  o.adapter = &a;
  plan = PlanOf(LlamaLike(1), mesh, Config(mesh), o);
  EXPECT_EQ(CountWarnings(plan, "empty_unit"), 1);
  EXPECT_TRUE(Unit(plan, "model.layers.0").params.empty());
}

}  // namespace
}  // namespace shardscope
