// Every scenario in examples/ loads, builds its model and plans; a few facts per example.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/plan/planner.h"
#include "tests/plan/plan_test_util.h"

namespace shardscope {
namespace {

using namespace testing_util;
using Names = std::vector<std::string>;

std::string ExamplePath(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/examples/" + name;
}

Result<Plan> PlanExample(const std::string& name, const std::vector<std::string>& sets = {}) {
  SS_ASSIGN_OR_RETURN(Scenario s, LoadScenario(ExamplePath(name), sets));
  ModelBuildOptions build;
  build.tp = s.parallelism.tp;
  build.ep = s.parallelism.ep;
  SS_ASSIGN_OR_RETURN(ModelTree tree, LoadModel(s.model, build));
  return PlanScenario(s, tree);
}

TEST(ExamplesTest, EveryExamplePlans) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ExamplePath(""))) {
    if (entry.path().extension() != ".json") continue;
    Result<Plan> p = PlanExample(entry.path().filename().string());
    EXPECT_TRUE(p.ok()) << entry.path() << ": " << p.status().message();
    ++count;
  }
  EXPECT_GE(count, 9);
}

TEST(ExamplesTest, DenseIsPlainFsdp) {
  Result<Plan> p = PlanExample("dense_llama3_8b.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->units.size(), 33u);  // 32 decoder layers + root
  EXPECT_EQ(p->root().mesh.dims, (Names{"fsdp_shard"}));
  EXPECT_EQ(p->units[0].reduce_op, ReduceOp::kAvg);
  EXPECT_FALSE(p->source_metadata_present);
  EXPECT_EQ(p->units[0].mixed_precision.param_dtype, DType::kBFloat16);
}

TEST(ExamplesTest, TiedEmbeddingManagedOnceAtTheRoot) {
  Result<Plan> p = PlanExample("tied_llama3.2_1b.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  bool found = false;
  for (const ParamPlan& q : p->root().params) {
    if (q.aliases.size() == 2) {
      found = true;
      EXPECT_EQ(q.aliases[1], "lm_head.weight");
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(CountWarnings(*p, "tied_across_units"), 0);
}

TEST(ExamplesTest, MoeExpertsOnTheExpertMesh) {
  Result<Plan> p = PlanExample("moe_qwen3_30b_a3b_ep8.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  int experts = 0;
  for (const UnitPlan& u : p->units) {
    if (!u.expert) continue;
    ++experts;
    // edp = 2 and edp_shard = 2: the size-1 edp_replicate dimension drops out.
    EXPECT_EQ(u.mesh.dims, (Names{"edp_shard"}));
    EXPECT_EQ(u.mesh.sizes, (std::vector<int>{2}));
    EXPECT_EQ(u.reduce_op, ReduceOp::kSum);
  }
  EXPECT_EQ(experts, 48);
}

// The contract lets the expert shard group span dp_replicate's replicas; torchtitan's expert
// mesh does not (dp_replicate × efsdp, efsdp = dp_shard·cp·tp / ep): said in a warning.
TEST(ExamplesTest, ExpertShardsAcrossReplicasAreNamed) {
  Result<Plan> fits = PlanExample("moe_deepseek_v3_ep32.json");
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_EQ(CountWarnings(*fits, "edp_spans_replicas"), 0);  // edp_shard 8 = 256 / 32
  Result<Plan> spans = PlanExample("moe_deepseek_v3_ep32.json", {"parallelism.edp_shard=16"});
  ASSERT_TRUE(spans.ok()) << spans.status().message();
  ASSERT_EQ(CountWarnings(*spans, "edp_spans_replicas"), 1);
  for (const PlanWarning& w : spans->warnings) {
    if (w.code != "edp_spans_replicas") continue;
    EXPECT_NE(w.message.find("parallelism.edp_shard = 16 shards expert state across the 2 "
                             "dp_replicate groups"),
              std::string::npos)
        << w.message;
    EXPECT_NE(w.message.find("efsdp = dp_shard·cp·tp / ep = 8"), std::string::npos) << w.message;
  }
}

TEST(ExamplesTest, HsdpMesh) {
  Result<Plan> p = PlanExample("hsdp_llama3_70b.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->units[0].mesh.dims, (Names{"fsdp_replicate", "fsdp_shard"}));
  EXPECT_EQ(p->units[0].mesh.sizes, (std::vector<int>{2, 64}));
  EXPECT_EQ(p->units[0].forward_prefetch.size(), 2u);
}

TEST(ExamplesTest, TpSourceLayoutsShrinkLocalShapes) {
  Result<Plan> p = PlanExample("tp_llama3_70b.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->source_metadata_present);
  const UnitPlan& u = p->units[0];
  ASSERT_TRUE(u.gradient_scaling_factor.has_value());
  EXPECT_DOUBLE_EQ(*u.gradient_scaling_factor, 1.0 / 4);  // dp = 4, loss_parallel
  bool sharded = false;
  for (const ParamPlan& q : u.params) sharded = sharded || q.local_shape != q.global_shape;
  EXPECT_TRUE(sharded);
  EXPECT_EQ(CountWarnings(*p, "tp_all_replicated"), 0);
}

TEST(ExamplesTest, AdapterDeclaresExcludesAndOrders) {
  Result<Plan> p = PlanExample("adapter_tiny_vl.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->adapter, "scenario adapter");
  EXPECT_EQ(ExecOrder(*p),
            (Names{"vision.blocks.0", "vision.blocks.1", "vision.blocks.2", "vision.blocks.3",
                   "vision.merger", "model.layers.0", "model.layers.1", "model.layers.2",
                   "model.layers.3", "model.layers.4", "model.layers.5"}));
  EXPECT_EQ(p->FindUnit("vision.patch_embed.proj"), -1);  // excluded from discovery
  EXPECT_EQ(ParamFqns(p->root().replicate_params), (Names{"model.norm.weight"}));
  // --set replaces the order; an incomplete one is an error.
  Result<Plan> bad =
      PlanExample("adapter_tiny_vl.json", {"adapter.fsdp_execution_order=[\"vision.merger\"]"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fsdp_execution_order misses unit 'model.layers.0'"),
            std::string::npos);
}

}  // namespace
}  // namespace shardscope
