#include "core/plan/plan_json.h"

#include <gtest/gtest.h>

#include "tests/plan/plan_test_util.h"

namespace shardscope {
namespace {

using namespace testing_util;
using nlohmann::json;

TEST(PlanJsonTest, ReshardAfterForwardIntIsWrittenAsFsdp2TakesIt) {
  MeshContext mesh = Mesh(8, 8);
  FsdpConfig c = Config(mesh);
  c.reshard_after_forward_ranks = 2;
  Plan plan = PlanOf(LlamaLike(2), mesh, c);
  json j = PlanToJson(plan);
  EXPECT_EQ(j["units"][0]["reshard_after_forward"], 2);
  EXPECT_EQ(j["units"][2]["reshard_after_forward"], false);  // the root
  EXPECT_NE(FormatPlanTable(plan).find("to 2"), std::string::npos);
}

TEST(PlanJsonTest, TableSaysWhatDepthZeroMeansToFsdp2) {
  MeshContext mesh = Mesh(8, 8);
  FsdpConfig c = Config(mesh);
  EXPECT_EQ(FormatPlanTable(PlanOf(LlamaLike(2), mesh, c)).find("prefetch depth 0"),
            std::string::npos);
  c.backward_prefetch_depth = 0;
  const std::string table = FormatPlanTable(PlanOf(LlamaLike(2), mesh, c));
  EXPECT_NE(table.find("FSDP2 cannot switch backward prefetch off"), std::string::npos) << table;
}

TEST(PlanJsonTest, FollowsFormats1b) {
  MeshContext mesh = Mesh(16, 8);
  FsdpConfig c = Config(mesh);
  c.ignored_params = {"model.norm.weight"};
  Plan plan = PlanOf(LlamaLike(2, /*tied=*/true), mesh, c);
  json j = PlanToJson(plan);
  EXPECT_EQ(j["format"], "shardscope-plan/1");
  ASSERT_EQ(j["units"].size(), 3u);
  const json& first = j["units"][0];
  EXPECT_EQ(first["fqn"], "model.layers.0");
  EXPECT_EQ(first["is_root"], false);
  EXPECT_EQ(first["wrap_index"], 0);
  EXPECT_EQ(first["execution_index"], 0);
  EXPECT_EQ(first["mesh"]["dims"], json({"fsdp_replicate", "fsdp_shard"}));
  EXPECT_EQ(first["mesh"]["sizes"], json({2, 8}));
  EXPECT_EQ(first["reduce_op"], "avg");
  EXPECT_TRUE(first["gradient_scaling_factor"].is_null());
  EXPECT_EQ(first["reshard_after_forward"], true);
  EXPECT_EQ(first["forward_prefetch"], json({"model.layers.1"}));
  EXPECT_EQ(first["backward_prefetch"], json::array());
  const json& up = first["params"][2];
  EXPECT_EQ(up["fqn"], "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(up["global_shape"], json({256, 64}));
  EXPECT_EQ(up["local_shape"], json({256, 64}));
  EXPECT_EQ(up["shard_rows"], 32);
  EXPECT_EQ(up["padded_rows"], 0);
  EXPECT_EQ(up["dtype"], "float32");
  const json& root = j["units"][2];
  EXPECT_EQ(root["fqn"], "");
  EXPECT_EQ(root["is_root"], true);
  EXPECT_TRUE(root["execution_index"].is_null());
  EXPECT_EQ(root["reshard_after_forward"], false);
  EXPECT_EQ(root["ignored_params"], json({"model.norm.weight"}));
  EXPECT_EQ(root["params"][0]["aliases"], json({"model.embed_tokens.weight", "lm_head.weight"}));
  EXPECT_EQ(j["totals"]["params"], plan.totals.params);
  EXPECT_EQ(j["totals"]["sharded_bytes_per_rank"], plan.totals.sharded_bytes_per_rank);
  EXPECT_EQ(j["execution_order"], json({"model.layers.0", "model.layers.1"}));
  EXPECT_EQ(j["mesh"]["dp_replicate"], 2);
  ASSERT_FALSE(j["warnings"].empty());
  EXPECT_TRUE(j["warnings"][0].contains("code"));
  EXPECT_TRUE(j["warnings"][0].contains("message"));
}

TEST(PlanJsonTest, TableListsUnitsWarningsAndTotals) {
  MeshContext mesh = Mesh(8, 4, 2);
  Plan plan = PlanOf(LlamaLike(2), mesh, Config(mesh));
  const std::string table = FormatPlanTable(plan);
  EXPECT_NE(table.find("model.layers.1"), std::string::npos);
  EXPECT_NE(table.find("<root>"), std::string::npos);
  EXPECT_NE(table.find("fsdp_shard=4"), std::string::npos);
  EXPECT_NE(table.find("sum ×1/8"), std::string::npos);
  EXPECT_NE(table.find("[tp_all_replicated]"), std::string::npos);
  EXPECT_NE(table.find("totals: 2 units + root"), std::string::npos);
}

TEST(PlanJsonTest, FormatBytes) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(3 << 20), "3.0 MiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 29), "1.50 GiB");
}

}  // namespace
}  // namespace shardscope
