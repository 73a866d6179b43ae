#include "core/config/scenario_schema.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

using nlohmann::json;

TEST(ScenarioSchemaTest, SuggestsSiblingsAndKeysInTheWrongSection) {
  EXPECT_EQ(SuggestKey("fsdp.forward_prefech_depth"), "fsdp.forward_prefetch_depth");
  EXPECT_EQ(SuggestKey("parallelism.dp_shards"), "parallelism.dp_shard");
  EXPECT_EQ(SuggestKey("training.tp"), "parallelism.tp");
  EXPECT_EQ(SuggestKey("paralelism"), "parallelism");
  EXPECT_EQ(SuggestKey("fsdp.mix_precision.param_dtyp"), "fsdp.mix_precision.param_dtype");
}

TEST(ScenarioSchemaTest, DefaultsFollowTheFormatsExample) {
  json d = ScenarioDefaults();
  EXPECT_EQ(d["cluster"]["gpu"], "h100-sxm");
  EXPECT_EQ(d["cluster"]["gpus_per_node"], 8);
  EXPECT_EQ(d["parallelism"]["dp_shard"], -1);
  EXPECT_EQ(d["fsdp"]["mix_precision"]["param_dtype"], "bfloat16");
  EXPECT_EQ(d["fsdp"]["mix_precision"]["reduce_dtype"], "float32");
  EXPECT_EQ(d["training"]["seq_len"], 8192);
  EXPECT_EQ(d["training"]["activation_checkpoint"], "selective_op");
  EXPECT_TRUE(d["adapter"]["fsdp_wrap_modules"].is_array());
  EXPECT_FALSE(d.contains("model"));
  // The defaults document passes its own schema.
  d["model"] = "llama3-8b";
  EXPECT_TRUE(CheckAgainstSchema(d).ok());
}

TEST(ScenarioSchemaTest, TypeErrorsNamePathAndExpectedType) {
  Status s = CheckAgainstSchema(json{{"model", "x"}, {"parallelism", {{"tp", "2"}}}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "parallelism.tp: expected an integer, got string");
  s = CheckAgainstSchema(json{{"model", "x"}, {"fsdp", {{"ignored_params", {1, 2}}}}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "fsdp.ignored_params: expected an array of strings, got array");
  s = CheckAgainstSchema(json{{"model", "x"}, {"training", 3}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "training: expected an object, got integer");
  s = CheckAgainstSchema(json{{"model", {{"module_tre", "a.json"}}}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "model.module_tre: unknown key (did you mean model.module_tree?)");
  s = CheckAgainstSchema(json{{"model", 7}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("model: expected a built-in name"), std::string::npos);
}

}  // namespace
}  // namespace shardscope
