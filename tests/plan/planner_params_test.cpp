// planning.md §2 steps 1 (source metadata), 2 (replicate params), 4 (ownership), 10 (sharding).
#include <gtest/gtest.h>

#include "tests/plan/plan_test_util.h"

namespace shardscope {
namespace {

using namespace testing_util;
using Names = std::vector<std::string>;
using Shape = std::vector<int64_t>;

TEST(PlannerParamsTest, TiedEmbeddingAndHeadAtTheRoot) {
  MeshContext mesh = Mesh(8, 8);
  Plan plan = PlanOf(LlamaLike(2, /*tied=*/true), mesh, Config(mesh));
  ASSERT_EQ(plan.root().params.size(), 2u);  // the tied pair once, plus model.norm
  const ParamPlan& emb = plan.root().params[0];
  EXPECT_EQ(emb.fqn, "model.embed_tokens.weight");
  EXPECT_EQ(emb.aliases, (Names{"model.embed_tokens.weight", "lm_head.weight"}));
  EXPECT_EQ(CountWarnings(plan, "tied_across_units"), 0);
  // Tied counted once in the totals: 2 layers of (2·64² + 2·256·64 + 64) + 256·64 + 64.
  EXPECT_EQ(plan.totals.params, 2 * (2 * 64 * 64 + 2 * 256 * 64 + 64) + 256 * 64 + 64);
}

TEST(PlannerParamsTest, TiedInsideOneUnit) {
  TreeBuilder b;
  const int model = b.Add(0, "model", "Model", true);
  const int l = b.Add(b.Add(model, "layers"), "0");
  b.P(b.Add(l, "a"), "weight", {8, 8}, DType::kFloat32, "shared");
  b.P(b.Add(l, "b"), "weight", {8, 8}, DType::kFloat32, "shared");
  MeshContext mesh = Mesh(2, 2);
  Plan plan = PlanOf(b.tree, mesh, Config(mesh));
  const UnitPlan& u = Unit(plan, "model.layers.0");
  ASSERT_EQ(u.params.size(), 1u);
  EXPECT_EQ(u.params[0].aliases, (Names{"model.layers.0.a.weight", "model.layers.0.b.weight"}));
  EXPECT_EQ(CountWarnings(plan, "tied_across_units"), 0);
}

TEST(PlannerParamsTest, TiedAcrossTwoUnitsIsOwnedByTheRootWithAWarning) {
  AdapterSpec a;
  a.name = "test adapter";
  a.fsdp_wrap_modules = {"model.embed_tokens", "lm_head"};
  PlanOptions o;
  o.adapter = &a;
  MeshContext mesh = Mesh(8, 8);
  Plan plan = PlanOf(LlamaLike(1, /*tied=*/true), mesh, Config(mesh), o);
  EXPECT_EQ(ParamFqns(plan.root().params),
            (Names{"model.embed_tokens.weight", "model.norm.weight"}));
  EXPECT_TRUE(Unit(plan, "lm_head").params.empty());
  EXPECT_TRUE(Unit(plan, "model.embed_tokens").params.empty());
  ASSERT_EQ(CountWarnings(plan, "tied_across_units"), 1);
  EXPECT_EQ(CountWarnings(plan, "empty_unit"), 2);
  for (const PlanWarning& w : plan.warnings) {
    if (w.code != "tied_across_units") continue;
    EXPECT_NE(w.message.find("model.embed_tokens.weight in model.embed_tokens"), std::string::npos);
    EXPECT_NE(w.message.find("lm_head.weight in lm_head"), std::string::npos);
    EXPECT_NE(w.message.find("managed once by the root"), std::string::npos);
  }
}

TEST(PlannerParamsTest, ReplicateParamsSplitByOwner) {
  MeshContext mesh = Mesh(8, 8);
  FsdpConfig c = Config(mesh);
  c.replicate_params = {"model.layers.0.input_layernorm.weight", "lm_head.weight"};
  Plan plan = PlanOf(LlamaLike(2, /*tied=*/true), mesh, c);
  EXPECT_EQ(ParamFqns(Unit(plan, "model.layers.0").replicate_params),
            (Names{"model.layers.0.input_layernorm.weight"}));
  EXPECT_TRUE(Unit(plan, "model.layers.1").replicate_params.empty());
  // Named by its alias lm_head.weight, the tied embedding is replicated at the root.
  EXPECT_EQ(ParamFqns(plan.root().replicate_params), (Names{"model.embed_tokens.weight"}));
  const ParamPlan& r = plan.root().replicate_params[0];
  EXPECT_TRUE(r.replicated);
  EXPECT_EQ(r.shard_rows, 256);
  EXPECT_EQ(r.sharded_numel, 256 * 64);
  EXPECT_EQ(plan.totals.replicated_bytes_per_rank, (256 * 64 + 64) * 4);
  c.replicate_params = {"model.layers.9.mlp.up_proj.weight"};
  EXPECT_EQ(ErrorOf(LlamaLike(2), mesh, c),
            "replicate_params contains unknown parameter FQN: model.layers.9.mlp.up_proj.weight");
}

TEST(PlannerParamsTest, IgnoredParamsAreListedNotManaged) {
  MeshContext mesh = Mesh(8, 8);
  FsdpConfig c = Config(mesh);
  c.ignored_params = {"model.layers.1.mlp.up_proj.weight"};
  Plan plan = PlanOf(LlamaLike(2), mesh, c);
  const UnitPlan& u = Unit(plan, "model.layers.1");
  EXPECT_EQ(u.ignored_params, (Names{"model.layers.1.mlp.up_proj.weight"}));
  EXPECT_EQ(u.params.size(), 4u);
  EXPECT_EQ(plan.totals.params - plan.totals.managed_params, 256 * 64);
  EXPECT_EQ(plan.totals.ignored_bytes_per_rank, 256 * 64 * 4);
  c.ignored_params = {"nope"};
  EXPECT_EQ(ErrorOf(LlamaLike(2), mesh, c), "ignored_params contains unknown parameter FQN: nope");
}

TEST(PlannerParamsTest, UnevenDimZeroShardingPads) {
  TreeBuilder b;
  const int model = b.Add(0, "model", "Model", true);
  const int l = b.Add(b.Add(model, "layers"), "0");
  b.P(b.Add(l, "fc"), "weight", {10, 6});
  b.P(b.Add(l, "even"), "weight", {8, 6});
  MeshContext mesh = Mesh(4, 4);
  Plan plan = PlanOf(b.tree, mesh, Config(mesh));
  const ParamPlan& p = Unit(plan, "model.layers.0").params[0];
  EXPECT_EQ(p.shard_rows, 3);   // ceil(10 / 4)
  EXPECT_EQ(p.padded_rows, 2);  // 4·3 − 10
  EXPECT_EQ(p.sharded_numel, 18);
  EXPECT_EQ(p.unsharded_numel, 60);
  const ParamPlan& e = Unit(plan, "model.layers.0").params[1];
  EXPECT_EQ(e.shard_rows, 2);
  EXPECT_EQ(e.padded_rows, 0);
  // 10 rows over 4: the last rank holds 1 real row of 3: mostly padding.
  EXPECT_EQ(CountWarnings(plan, "mostly_padding"), 1);
  EXPECT_EQ(Unit(plan, "model.layers.0").sharded_bytes(), (18 + 12) * 4);
}

TEST(PlannerParamsTest, ScalarParameterIsAnError) {
  TreeBuilder b;
  const int model = b.Add(0, "model", "Model", true);
  const int l = b.Add(b.Add(model, "layers"), "0");
  b.P(b.Add(l, "fc"), "weight", {8, 8});
  b.P(l, "scale", {});
  MeshContext mesh = Mesh(2, 2);
  EXPECT_NE(ErrorOf(b.tree, mesh, Config(mesh))
                .find("parameter model.layers.0.scale is a scalar (shape []): FSDP shards dim 0"),
            std::string::npos);
  // Kept whole it is fine.
  FsdpConfig c = Config(mesh);
  c.replicate_params = {"model.layers.0.scale"};
  Plan plan = PlanOf(b.tree, mesh, c);
  EXPECT_EQ(Unit(plan, "model.layers.0").replicate_params[0].sharded_numel, 1);
}

TEST(PlannerParamsTest, SourceLayoutGivesTheLocalShape) {
  ModelTree t = LlamaLike(1);
  PlanOptions o;
  o.source_layouts["model.layers.0.mlp.up_proj.weight"] = {{"tp", Placement::Shard(0)}};
  o.source_layouts["model.layers.0.mlp.down_proj.weight"] = {{"tp", Placement::Shard(1)}};
  MeshContext mesh = Mesh(8, 4, 2);
  Plan plan = PlanOf(t, mesh, Config(mesh), o);
  const UnitPlan& u = Unit(plan, "model.layers.0");
  EXPECT_EQ(u.params[2].fqn, "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(u.params[2].local_shape, (Shape{128, 64}));
  EXPECT_EQ(u.params[2].shard_rows, 32);
  EXPECT_EQ(u.params[3].local_shape, (Shape{64, 128}));
  EXPECT_EQ(u.params[0].local_shape, (Shape{64, 64}));  // no entry: Replicate
  EXPECT_TRUE(plan.source_metadata_present);
  EXPECT_EQ(CountWarnings(plan, "tp_all_replicated"), 0);
}

TEST(PlannerParamsTest, SourceLayoutErrors) {
  MeshContext mesh = Mesh(8, 4, 2);
  auto error_with = [&](const std::string& fqn, SourceLayout layout) {
    PlanOptions o;
    o.source_layouts[fqn] = std::move(layout);
    return ErrorOf(LlamaLike(1), mesh, Config(mesh), o);
  };
  const std::string up = "model.layers.0.mlp.up_proj.weight";
  EXPECT_EQ(error_with("model.nope.weight", {{"tp", Placement::Shard(0)}}),
            "source layout names unknown parameter FQN: model.nope.weight");
  EXPECT_NE(error_with(up, {{"tp", Placement{Placement::Kind::kPartial, 0}}})
                .find("source layout has Partial() on 'tp'"),
            std::string::npos);
  EXPECT_NE(error_with(up, {{"dp_shard", Placement::Shard(0)}})
                .find("uses mesh dim 'dp_shard', which belongs to FSDP/PP"),
            std::string::npos);
  EXPECT_NE(error_with(up, {{"ep", Placement::Shard(0)}})
                .find("uses mesh dim 'ep', which the mesh lacks"),
            std::string::npos);
  EXPECT_NE(error_with(up, {{"sp", Placement::Shard(0)}}).find("'sp', which the mesh lacks"),
            std::string::npos);
  EXPECT_NE(error_with(up, {{"tp", Placement::Shard(2)}})
                .find("Shard(2) but the parameter has shape [256, 64]"),
            std::string::npos);
  // 64 rows over tp = 3 do not divide.
  MeshContext mesh3 = Mesh(6, 2, 3);
  PlanOptions o;
  o.source_layouts["model.layers.0.self_attn.q_proj.weight"] = {{"tp", Placement::Shard(0)}};
  EXPECT_EQ(ErrorOf(LlamaLike(1), mesh3, Config(mesh3), o),
            "parameter model.layers.0.self_attn.q_proj.weight: dim 0 of shape [64, 64] is 64, not "
            "divisible by tp = 3 (source layout Shard(0))");
}

TEST(PlannerParamsTest, AliasesWithDifferentLayouts) {
  ModelTree t = LlamaLike(1, /*tied=*/true);
  for (Module& m : t.modules) {
    for (Param& p : m.params) {
      if (p.id == "emb" && m.name == "lm_head")
        p.layout = SourceLayout{{"tp", Placement::Shard(0)}};
    }
  }
  MeshContext mesh = Mesh(8, 4, 2);
  EXPECT_NE(ErrorOf(t, mesh, Config(mesh))
                .find("aliases lm_head.weight and model.embed_tokens.weight have different source "
                      "layouts"),
            std::string::npos);
  // Two entries naming aliases of one parameter with different layouts clash too.
  PlanOptions o;
  o.source_layouts["lm_head.weight"] = {{"tp", Placement::Shard(0)}};
  o.source_layouts["model.embed_tokens.weight"] = {{"tp", Placement::Shard(1)}};
  EXPECT_NE(
      ErrorOf(LlamaLike(1, true), mesh, Config(mesh), o).find("have different source layouts"),
      std::string::npos);
}

TEST(PlannerParamsTest, TpWithoutAnyLayoutWarns) {
  MeshContext mesh = Mesh(8, 4, 2);
  Plan plan = PlanOf(LlamaLike(1), mesh, Config(mesh));
  EXPECT_EQ(CountWarnings(plan, "tp_all_replicated"), 1);
  EXPECT_TRUE(plan.source_metadata_present);  // tp > 1
}

}  // namespace
}  // namespace shardscope
