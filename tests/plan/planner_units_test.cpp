// planning.md §2 step 3 (units), 7 (wrapping order), 8 (execution order).
#include <gtest/gtest.h>

#include "tests/plan/plan_test_util.h"

namespace shardscope {
namespace {

using namespace testing_util;
using Names = std::vector<std::string>;

TEST(PlannerUnitsTest, BlocksKeepRegisteredNames) {
  // layers is a dict with keys 2 and 7: units are named by key, not by position.
  TreeBuilder b;
  const int model = b.Add(0, "model", "Model", true);
  const int layers = b.Add(model, "layers", "ModuleDict");
  for (const char* key : {"2", "7"}) {
    const int l = b.Add(layers, key, "Block");
    b.P(b.Add(l, "proj", "Linear"), "weight", {8, 8});
  }
  b.P(b.Add(model, "norm"), "weight", {8});
  MeshContext mesh = Mesh(8, 8);
  Plan plan = PlanOf(b.tree, mesh, Config(mesh));
  EXPECT_EQ(WrapOrder(plan), (Names{"model.layers.2", "model.layers.7", ""}));
  EXPECT_EQ(ExecOrder(plan), (Names{"model.layers.2", "model.layers.7"}));
  EXPECT_EQ(ParamFqns(Unit(plan, "model.layers.7").params), (Names{"model.layers.7.proj.weight"}));
  EXPECT_EQ(ParamFqns(plan.root().params), (Names{"model.norm.weight"}));
  EXPECT_TRUE(plan.root().is_root);
  EXPECT_FALSE(plan.root().execution_index.has_value());
}

TEST(PlannerUnitsTest, LeafChildrenOfTheContainerAreNotUnits) {
  // embed_tokens and norm have no children; layers has, so its children become units.
  MeshContext mesh = Mesh(8, 8);
  Plan plan = PlanOf(LlamaLike(3), mesh, Config(mesh));
  EXPECT_EQ(ExecOrder(plan), (Names{"model.layers.0", "model.layers.1", "model.layers.2"}));
  EXPECT_EQ(ParamFqns(plan.root().params),
            (Names{"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"}));
}

// layers.i is a checkpoint wrapper around a decoder layer that itself carries
// gradient_checkpointing (recent HF): the wrapped layer must not be walked as a container.
ModelTree CheckpointWrappedTree(bool mark_wrapper) {
  TreeBuilder b;
  const int model = b.Add(0, "model", "LlamaModel", true);
  const int layers = b.Add(model, "layers", "ModuleList");
  for (int i = 0; i < 2; ++i) {
    const int w = b.Add(layers, std::to_string(i), "CheckpointWrapper");
    b.tree.modules[static_cast<size_t>(w)].checkpoint_wrapper = mark_wrapper;
    const int inner = b.Add(w, "_checkpoint_wrapped_module", "LlamaDecoderLayer", true);
    const int attn = b.Add(inner, "self_attn");
    b.P(b.Add(attn, "q_proj", "Linear"), "weight", {16, 16});
    const int mlp = b.Add(inner, "mlp");
    b.P(b.Add(mlp, "up_proj", "Linear"), "weight", {16, 16});
  }
  return b.tree;
}

TEST(PlannerUnitsTest, CheckpointWrappedBlocks) {
  MeshContext mesh = Mesh(8, 8);
  Plan plan = PlanOf(CheckpointWrappedTree(true), mesh, Config(mesh));
  EXPECT_EQ(ExecOrder(plan), (Names{"model.layers.0", "model.layers.1"}));
  EXPECT_EQ(ParamFqns(Unit(plan, "model.layers.1").params),
            (Names{"model.layers.1._checkpoint_wrapped_module.self_attn.q_proj.weight",
                   "model.layers.1._checkpoint_wrapped_module.mlp.up_proj.weight"}));
  // Without the wrapper flag the wrapped layer is a container of its own and its children's
  // children (the projections) become units too.
  Plan unmarked = PlanOf(CheckpointWrappedTree(false), mesh, Config(mesh));
  EXPECT_GT(unmarked.units.size(), plan.units.size());
}

// A vision tower beside the language model; the adapter declares it and its blocks.
ModelTree VisionTree() {
  TreeBuilder b;
  b.tree.identity = {"custom_vl", "CustomVLForConditionalGeneration"};
  const int vision = b.Add(0, "vision", "VisionTower");
  b.P(b.Add(vision, "patch_embed", "Conv"), "weight", {32, 3});
  const int blocks = b.Add(vision, "blocks", "ModuleList");
  for (int i = 0; i < 2; ++i) {
    const int blk = b.Add(blocks, std::to_string(i), "VisionBlock");
    b.P(b.Add(blk, "fc", "Linear"), "weight", {32, 32});
  }
  const int model = b.Add(0, "model", "Model", true);
  const int layers = b.Add(model, "layers", "ModuleList");
  for (int i = 0; i < 2; ++i) {
    const int l = b.Add(layers, std::to_string(i), "Layer");
    b.P(b.Add(l, "fc", "Linear"), "weight", {32, 32});
  }
  b.P(b.Add(0, "lm_head", "Linear"), "weight", {64, 32});
  return b.tree;
}

TEST(PlannerUnitsTest, DeclaredNestedUnits) {
  AdapterSpec a;
  a.name = "test adapter";
  a.fsdp_wrap_modules = {"vision", "vision.blocks.*"};
  PlanOptions o;
  o.adapter = &a;
  MeshContext mesh = Mesh(8, 8);
  Plan plan = PlanOf(VisionTree(), mesh, Config(mesh), o);
  // List order: automatic blocks, then declared; wrapping: deepest first, stable.
  EXPECT_EQ(WrapOrder(plan), (Names{"model.layers.0", "model.layers.1", "vision.blocks.0",
                                    "vision.blocks.1", "vision", ""}));
  EXPECT_EQ(ExecOrder(plan), (Names{"vision", "vision.blocks.0", "vision.blocks.1",
                                    "model.layers.0", "model.layers.1"}));
  // Ownership: the deepest unit. vision keeps only its patch embedding.
  EXPECT_EQ(ParamFqns(Unit(plan, "vision").params), (Names{"vision.patch_embed.weight"}));
  EXPECT_EQ(ParamFqns(Unit(plan, "vision.blocks.0").params), (Names{"vision.blocks.0.fc.weight"}));
  EXPECT_EQ(plan.adapter, "test adapter");
  EXPECT_EQ(Unit(plan, "vision").depth, 1);
  EXPECT_EQ(Unit(plan, "vision.blocks.0").depth, 3);
}

TEST(PlannerUnitsTest, ExcludedSubtrees) {
  AdapterSpec a;
  a.name = "test adapter";
  a.fsdp_wrap_modules = {"lm_head"};
  a.fsdp_excluded_subtrees = {"model.layers"};
  PlanOptions o;
  o.adapter = &a;
  MeshContext mesh = Mesh(8, 8);
  Plan plan = PlanOf(LlamaLike(2), mesh, Config(mesh), o);
  EXPECT_EQ(WrapOrder(plan), (Names{"lm_head", ""}));
  // Excluding the whole container leaves nothing: the verbatim error.
  a.fsdp_wrap_modules.clear();
  a.fsdp_excluded_subtrees = {"model"};
  EXPECT_EQ(ErrorOf(LlamaLike(2), mesh, Config(mesh), o),
            "wrap_policy='transformer_block' found no decoder, expert, or adapter-declared FSDP "
            "child unit");
}

TEST(PlannerUnitsTest, NoUnitsIsAnError) {
  TreeBuilder b;
  b.P(b.Add(b.Add(0, "encoder"), "fc"), "weight", {4, 4});
  MeshContext mesh = Mesh(2, 2);
  EXPECT_EQ(ErrorOf(b.tree, mesh, Config(mesh)),
            "wrap_policy='transformer_block' found no decoder, expert, or adapter-declared FSDP "
            "child unit");
}

TEST(PlannerUnitsTest, AdapterExecutionOrder) {
  AdapterSpec a;
  a.name = "test adapter";
  a.fsdp_wrap_modules = {"lm_head"};
  a.fsdp_execution_order = {"model.layers.1", "model.layers.0", "lm_head"};
  PlanOptions o;
  o.adapter = &a;
  MeshContext mesh = Mesh(8, 8);
  Plan plan = PlanOf(LlamaLike(2), mesh, Config(mesh), o);
  EXPECT_EQ(ExecOrder(plan), (Names{"model.layers.1", "model.layers.0", "lm_head"}));
  EXPECT_EQ(Unit(plan, "model.layers.1").execution_index, 0);
  EXPECT_EQ(Unit(plan, "model.layers.0").forward_prefetch, (Names{"lm_head"}));
  EXPECT_EQ(Unit(plan, "model.layers.0").backward_prefetch, (Names{"model.layers.1"}));
  // Globs expand in pre-order.
  a.fsdp_execution_order = {"lm_head", "model.layers.*"};
  EXPECT_EQ(ExecOrder(PlanOf(LlamaLike(2), mesh, Config(mesh), o)),
            (Names{"lm_head", "model.layers.0", "model.layers.1"}));

  a.fsdp_execution_order = {"model.layers.1", "lm_head"};
  EXPECT_EQ(ErrorOf(LlamaLike(2), mesh, Config(mesh), o),
            "test adapter: fsdp_execution_order misses unit 'model.layers.0' (it must name every "
            "unit exactly once)");
  a.fsdp_execution_order = {"model.layers.1", "model.layers.1", "model.layers.0", "lm_head"};
  EXPECT_EQ(ErrorOf(LlamaLike(2), mesh, Config(mesh), o),
            "test adapter: fsdp_execution_order names unit 'model.layers.1' twice");
  a.fsdp_execution_order = {"model.layers.1", "model.norm", "model.layers.0", "lm_head"};
  EXPECT_EQ(ErrorOf(LlamaLike(2), mesh, Config(mesh), o),
            "test adapter: fsdp_execution_order names 'model.norm', which is not an FSDP unit");
}

TEST(PlannerUnitsTest, AdapterDeclarationErrors) {
  AdapterSpec a;
  a.name = "scenario adapter";
  PlanOptions o;
  o.adapter = &a;
  MeshContext mesh = Mesh(8, 8);
  a.fsdp_wrap_modules = {"model.missing"};
  EXPECT_EQ(ErrorOf(LlamaLike(1), mesh, Config(mesh), o),
            "scenario adapter: fsdp_wrap_modules[0] = 'model.missing' is not a module FQN of this "
            "model");
  a.fsdp_wrap_modules = {"lm_head", "lm_head"};
  EXPECT_EQ(ErrorOf(LlamaLike(1), mesh, Config(mesh), o),
            "scenario adapter: fsdp_wrap_modules declares module 'lm_head' twice");
  a.fsdp_wrap_modules = {""};
  EXPECT_NE(ErrorOf(LlamaLike(1), mesh, Config(mesh), o).find("fsdp_wrap_modules[0] is empty"),
            std::string::npos);
  a.fsdp_wrap_modules = {"vision.*"};
  EXPECT_EQ(ErrorOf(LlamaLike(1), mesh, Config(mesh), o),
            "scenario adapter: fsdp_wrap_modules[0] = 'vision.*' matches no module");
  a.fsdp_wrap_modules = {};
  a.fsdp_excluded_subtrees = {"model.nope"};
  EXPECT_NE(ErrorOf(LlamaLike(1), mesh, Config(mesh), o)
                .find("fsdp_excluded_subtrees[0] = 'model.nope' is not a module FQN"),
            std::string::npos);
}

// Routed experts stacked in one module per layer, with an `ep` source layout.
ModelTree MoeTree(int layers, int64_t experts, bool expert_layout = true) {
  TreeBuilder b;
  b.tree.identity = {"qwen3_moe", "Qwen3MoeForCausalLM"};
  const int model = b.Add(0, "model", "Qwen3MoeModel", true);
  b.P(b.Add(model, "embed_tokens", "Embedding"), "weight", {128, 32});
  const int list = b.Add(model, "layers", "ModuleList");
  for (int i = 0; i < layers; ++i) {
    const int l = b.Add(list, std::to_string(i), "Qwen3MoeDecoderLayer");
    Param& q = b.P(b.Add(l, "q_proj", "Linear"), "weight", {32, 32});
    q.layout = SourceLayout{{"tp", Placement::Shard(0)}};
    const int mlp = b.Add(l, "mlp", "Qwen3MoeSparseMoeBlock");
    b.P(b.Add(mlp, "gate", "Linear"), "weight", {experts, 32});
    const int ex = b.Add(mlp, "experts", "Experts");
    b.P(ex, "gate_up_proj", {experts, 64, 32});
    b.P(ex, "down_proj", {experts, 32, 32});
    if (expert_layout) {
      // Set after both are added: P() returns a reference into a growing vector.
      for (Param& p : b.tree.modules[static_cast<size_t>(ex)].params) {
        p.layout = SourceLayout{{"ep", Placement::Shard(0)}};
      }
    }
  }
  b.P(b.Add(0, "lm_head", "Linear"), "weight", {128, 32});
  return b.tree;
}

TEST(PlannerUnitsTest, ExpertUnitsOnTheExpertMeshWithEpAndTp) {
  // W=16, tp=2 → dp=8, dp_shard=8; ep=4 → edp=4, edp_shard=2 → edp_replicate=2.
  MeshContext mesh = Mesh(16, 8, 2, 1, 4, 2);
  Plan plan = PlanOf(MoeTree(2, 8), mesh, Config(mesh));
  // List order: blocks, then experts (sorted); wrapping deepest first.
  EXPECT_EQ(WrapOrder(plan), (Names{"model.layers.0.mlp.experts", "model.layers.1.mlp.experts",
                                    "model.layers.0", "model.layers.1", ""}));
  EXPECT_EQ(ExecOrder(plan), (Names{"model.layers.0", "model.layers.0.mlp.experts",
                                    "model.layers.1", "model.layers.1.mlp.experts"}));
  const UnitPlan& ex = Unit(plan, "model.layers.0.mlp.experts");
  EXPECT_TRUE(ex.expert);
  EXPECT_EQ(ex.mesh.dims, (Names{"edp_replicate", "edp_shard"}));
  EXPECT_EQ(ex.mesh.sizes, (std::vector<int>{2, 2}));
  ASSERT_EQ(ex.params.size(), 2u);
  EXPECT_EQ(ex.params[0].global_shape, (std::vector<int64_t>{8, 64, 32}));
  EXPECT_EQ(ex.params[0].local_shape, (std::vector<int64_t>{2, 64, 32}));
  EXPECT_EQ(ex.params[0].shard_rows, 1);  // 2 experts over edp_shard = 2
  EXPECT_TRUE(ex.params[0].expert);
  const UnitPlan& layer = Unit(plan, "model.layers.0");
  EXPECT_FALSE(layer.expert);
  EXPECT_EQ(layer.mesh.dims, (Names{"fsdp_shard"}));
  EXPECT_EQ(layer.mesh.sizes, (std::vector<int>{8}));
  EXPECT_EQ(ParamFqns(layer.params),
            (Names{"model.layers.0.q_proj.weight", "model.layers.0.mlp.gate.weight"}));
  EXPECT_EQ(layer.params[0].local_shape, (std::vector<int64_t>{16, 32}));  // tp Shard(0)
  // Metadata present: sum, scaled by 1/(dp·cp·tp) = 1/16 for dense and expert units alike.
  EXPECT_EQ(ex.reduce_op, ReduceOp::kSum);
  ASSERT_TRUE(ex.gradient_scaling_factor.has_value());
  EXPECT_DOUBLE_EQ(*ex.gradient_scaling_factor, 1.0 / 16);
  EXPECT_EQ(plan.totals.scaled_units, 5);
  EXPECT_EQ(plan.mesh.edp, 4);
  EXPECT_EQ(plan.mesh.edp_replicate, 2);
}

TEST(PlannerUnitsTest, ReshardAfterForwardIntMustDivideTheExpertShardGroupToo) {
  // Dense units shard over 8 ranks, expert units over edp_shard = 2.
  MeshContext mesh = Mesh(16, 8, 2, 1, 4, 2);
  FsdpConfig c = Config(mesh);
  c.reshard_after_forward_ranks = 2;  // divides both: the experts' 2 is their full group
  Plan plan = PlanOf(MoeTree(2, 8), mesh, c);
  EXPECT_EQ(Unit(plan, "model.layers.0").reshard_after_forward_ranks, 2);
  EXPECT_TRUE(Unit(plan, "model.layers.0.mlp.experts").reshard_after_forward);
  EXPECT_EQ(Unit(plan, "model.layers.0.mlp.experts").reshard_after_forward_ranks, 0);
  c.reshard_after_forward_ranks = 4;
  EXPECT_EQ(ErrorOf(MoeTree(2, 8), mesh, c),
            "fsdp_config.reshard_after_forward = 4: unit 'model.layers.0.mlp.experts' shards over "
            "2 ranks (expected a divisor of every unit's shard group size)");
}

TEST(PlannerUnitsTest, ExpertMeshWithoutReplicateDim) {
  MeshContext mesh = Mesh(8, 8, 1, 1, 8, 1);  // edp = 1
  Plan plan = PlanOf(MoeTree(1, 8), mesh, Config(mesh));
  const UnitPlan& ex = Unit(plan, "model.layers.0.mlp.experts");
  EXPECT_EQ(ex.mesh.dims, (Names{"edp_shard"}));
  EXPECT_EQ(ex.mesh.sizes, (std::vector<int>{1}));
  EXPECT_EQ(ex.params[0].local_shape, (std::vector<int64_t>{1, 64, 32}));
}

TEST(PlannerUnitsTest, ExpertParamsAtTheRootAreAnError) {
  // The experts module sits outside any unit and its FQN has no `.experts.` infix.
  TreeBuilder b;
  const int model = b.Add(0, "model", "Model", true);
  const int l = b.Add(b.Add(model, "layers"), "0");
  b.P(b.Add(l, "fc"), "weight", {8, 8});
  Param& w = b.P(b.Add(0, "experts"), "w1", {4, 8, 8});
  w.layout = SourceLayout{{"ep", Placement::Shard(0)}};
  MeshContext mesh = Mesh(8, 8, 1, 1, 4, 2);
  EXPECT_EQ(ErrorOf(b.tree, mesh, Config(mesh)),
            "Routed expert parameters must belong to a nested experts FSDP unit (experts.w1 is "
            "owned by the root)");
}

TEST(PlannerUnitsTest, NoExpertUnitsWithoutExpertMesh) {
  // Same tree without ep layouts and ep = 1: the experts stay in their layer's unit.
  MeshContext mesh = Mesh(8, 8);
  Plan plan = PlanOf(MoeTree(1, 8, /*expert_layout=*/false), mesh, Config(mesh));
  EXPECT_EQ(plan.FindUnit("model.layers.0.mlp.experts"), -1);
  EXPECT_EQ(Unit(plan, "model.layers.0").params.size(), 4u);
}

}  // namespace
}  // namespace shardscope
