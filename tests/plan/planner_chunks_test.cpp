// The pipeline extension of the planner: one FSDP root per model chunk (Plan::pipeline_chunks),
// printed by `plan` and serialised by `plan --json`.
#include <gtest/gtest.h>

#include "core/plan/plan_json.h"
#include "tests/plan/plan_test_util.h"

namespace shardscope {
namespace {

using namespace testing_util;
using nlohmann::json;

// LlamaLike with compute on the root's modules: embedding, final norm, head, loss.
ModelTree WithRootCompute(int layers, bool tied = false) {
  ModelTree t = LlamaLike(layers, tied);
  auto give = [&](const std::string& fqn, OpKind kind) {
    for (const ModuleEntry& e : EnumerateModules(t)) {
      if (e.fqn != fqn) continue;
      OpDescriptor d;
      d.kind = kind;
      t.modules[static_cast<size_t>(e.module)].op = d;
      return;
    }
    ADD_FAILURE() << "no module " << fqn;
  };
  give("model.embed_tokens", OpKind::kEmbedding);
  give("model.norm", OpKind::kNorm);
  give("lm_head", OpKind::kLinear);
  give("", OpKind::kLoss);
  return t;
}

MeshContext PipelineMesh(int world, int pp, int dp_shard) {
  MeshLayout l;
  l.world_size = world;
  l.pp = pp;
  l.dp_shard = dp_shard;
  Result<MeshContext> m = BuildMeshContext(l);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : MeshContext();
}

TEST(PlannerChunksTest, EachPipelineChunkHasItsOwnRoot) {
  const MeshContext mesh = PipelineMesh(8, 2, 4);
  PlanOptions o;
  o.pp_virtual_stages = 2;
  const Plan plan = PlanOf(WithRootCompute(6), mesh, Config(mesh), o);
  ASSERT_EQ(plan.pipeline_chunks.size(), 4u);
  // torchtitan's split: 6 blocks + the embedding and the head weighing one each, 2 a chunk;
  // the first and last chunks give a block's place to them.
  const std::vector<std::vector<std::string>> units = {{"model.layers.0"},
                                                       {"model.layers.1", "model.layers.2"},
                                                       {"model.layers.3", "model.layers.4"},
                                                       {"model.layers.5"}};
  for (int c = 0; c < 4; ++c) {
    SCOPED_TRACE(c);
    const ChunkRootPlan& r = plan.pipeline_chunks[static_cast<size_t>(c)];
    EXPECT_EQ(r.chunk, c);
    EXPECT_EQ(r.stage, c % 2);
    EXPECT_EQ(r.label, "root.chunk" + std::to_string(c));
    EXPECT_EQ(r.units, units[static_cast<size_t>(c)]);
  }
  // The embedding runs before every block, the final norm, head and loss after the last.
  EXPECT_EQ(plan.pipeline_chunks[0].modules, std::vector<std::string>{"model.embed_tokens"});
  EXPECT_EQ(plan.pipeline_chunks[0].params, std::vector<std::string>{"model.embed_tokens.weight"});
  EXPECT_EQ(plan.pipeline_chunks[3].modules,
            (std::vector<std::string>{"model.norm", "lm_head", ""}));
  EXPECT_EQ(plan.pipeline_chunks[3].params,
            (std::vector<std::string>{"model.norm.weight", "lm_head.weight"}));
  EXPECT_TRUE(plan.pipeline_chunks[1].params.empty());

  const json j = PlanToJson(plan);
  ASSERT_EQ(j["pipeline_chunks"].size(), 4u);
  EXPECT_EQ(j["pipeline_chunks"][3]["label"], "root.chunk3");
  EXPECT_EQ(j["pipeline_chunks"][3]["stage"], 1);
  EXPECT_EQ(j["pipeline_chunks"][3]["units"], json({"model.layers.5"}));
  EXPECT_EQ(j["pipeline_chunks"][3]["params"], json({"model.norm.weight", "lm_head.weight"}));
  const std::string table = FormatPlanTable(plan);
  EXPECT_NE(table.find("pipeline chunks (4, each its own FSDP root)"), std::string::npos);
  EXPECT_NE(table.find("root.chunk3    stage 1   units model.layers.5; root modules "
                       "model.norm,lm_head,<root>; 2 root params"),
            std::string::npos)
      << table;
}

// An embedding tied to the head: a split by module leaves the weight on the first chunk (the
// embedding) and the last (the head), each managing its own copy; one chunk alone keeps it once.
TEST(PlannerChunksTest, TiedWeightUsedByTwoChunksIsInBoth) {
  const MeshContext mesh = PipelineMesh(8, 2, 4);
  PlanOptions o;
  o.pp_virtual_stages = 2;
  const Plan plan = PlanOf(WithRootCompute(6, /*tied=*/true), mesh, Config(mesh), o);
  ASSERT_EQ(plan.pipeline_chunks.size(), 4u);
  EXPECT_EQ(plan.pipeline_chunks[0].params, std::vector<std::string>{"model.embed_tokens.weight"});
  EXPECT_EQ(plan.pipeline_chunks[3].params,
            (std::vector<std::string>{"model.embed_tokens.weight", "model.norm.weight"}));
  EXPECT_TRUE(plan.pipeline_chunks[1].params.empty());
  ASSERT_EQ(CountWarnings(plan, "tied_across_chunks"), 1);
  for (const PlanWarning& w : plan.warnings) {
    if (w.code != "tied_across_chunks") continue;
    EXPECT_NE(w.message.find("model.embed_tokens.weight in root.chunk0, lm_head.weight in "
                             "root.chunk3"),
              std::string::npos)
        << w.message;
  }
  // Per-rank totals are the stage holding the most: stage 1 runs chunk 3, with the head's copy.
  const Plan untied = PlanOf(WithRootCompute(6), mesh, Config(mesh), o);
  EXPECT_EQ(CountWarnings(untied, "tied_across_chunks"), 0);
  EXPECT_EQ(plan.totals.sharded_bytes_per_rank, untied.totals.sharded_bytes_per_rank);

  const MeshContext flat = Mesh(8, 8);
  const Plan one = PlanOf(WithRootCompute(6, /*tied=*/true), flat, Config(flat));
  EXPECT_EQ(CountWarnings(one, "tied_across_chunks"), 0);
}

// generate_llm_fqn_per_model_part's split (torchtitan): Llama 3 8B's 32 blocks on 4 stages are
// 8, 9, 8, 7; where a chunk would be left without a block the blocks alone split evenly.
TEST(PlannerChunksTest, StagesSplitAsTorchtitanSplitsThem) {
  auto sizes = [](const Plan& plan) {
    std::vector<size_t> n;
    for (const ChunkRootPlan& c : plan.pipeline_chunks) n.push_back(c.units.size());
    return n;
  };
  const MeshContext four = PipelineMesh(8, 4, 2);
  EXPECT_EQ(sizes(PlanOf(WithRootCompute(32), four, Config(four))),
            (std::vector<size_t>{8, 9, 8, 7}));
  EXPECT_EQ(sizes(PlanOf(WithRootCompute(16), four, Config(four))),
            (std::vector<size_t>{4, 5, 4, 3}));
  // 4 blocks on 4 stages: 6 / 4 leaves the first and last a block short of one; even split.
  EXPECT_EQ(sizes(PlanOf(WithRootCompute(4), four, Config(four))),
            (std::vector<size_t>{1, 1, 1, 1}));
  // Without compute on the root (no embedding or head), no weights: 8 blocks, 2 a stage.
  EXPECT_EQ(sizes(PlanOf(LlamaLike(8), four, Config(four))), (std::vector<size_t>{2, 2, 2, 2}));
}

TEST(PlannerChunksTest, NoChunksWithoutPipeliningAndTooFewUnitsIsAnError) {
  const MeshContext flat = Mesh(8, 8);
  const Plan plan = PlanOf(WithRootCompute(2), flat, Config(flat));
  EXPECT_TRUE(plan.pipeline_chunks.empty());
  EXPECT_TRUE(PlanToJson(plan)["pipeline_chunks"].empty());

  const MeshContext mesh = PipelineMesh(8, 2, 4);
  PlanOptions o;
  o.pp_virtual_stages = 2;
  EXPECT_NE(ErrorOf(WithRootCompute(3), mesh, Config(mesh), o)
                .find("pp · pp_virtual_stages = 4 model chunks, but the plan has only 3 "
                      "top-level units"),
            std::string::npos);
}

}  // namespace
}  // namespace shardscope
