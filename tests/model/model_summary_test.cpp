#include "core/model/model_summary.h"

#include <gtest/gtest.h>

#include "core/model/tree_json.h"

namespace shardscope {
namespace {

using nlohmann::json;

// A gradient_checkpointing container whose ModuleList holds a checkpoint-wrapped block and a
// plain one; a norm tied between block 1 and the top level.
const char* kTree = R"J({"format": "shardscope-tree/1",
  "config": {"model_type": "toy", "architectures": ["ToyForCausalLM"]},
  "root": {"name": "", "class": "ToyForCausalLM", "children": [
    {"name": "model", "class": "ToyModel", "gradient_checkpointing": true, "children": [
      {"name": "embed", "class": "Embedding", "op": {"kind": "embedding", "vocab": 10, "dim": 4},
       "params": [{"name": "weight", "shape": [10, 4], "dtype": "float32", "id": "e"}]},
      {"name": "layers", "class": "ModuleList", "children": [
        {"name": "0", "class": "CheckpointWrapper", "checkpoint_wrapper": true, "children": [
          {"name": "_checkpoint_wrapped_module", "class": "Block",
           "gradient_checkpointing": true, "children": [
            {"name": "proj", "class": "Linear", "params": [
              {"name": "weight", "shape": [4, 4], "dtype": "bfloat16"}]}]}]},
        {"name": "1", "class": "Block", "gradient_checkpointing": true, "children": [
          {"name": "norm", "class": "RMSNorm", "params": [
            {"name": "weight", "shape": [4], "dtype": "float32", "id": "n",
             "requires_grad": false}]}]}]}]},
    {"name": "final_norm", "class": "RMSNorm", "params": [
      {"name": "weight", "shape": [4], "dtype": "float32", "id": "n", "requires_grad": false}]},
    {"name": "head", "class": "Linear", "params": [
      {"name": "weight", "shape": [10, 4], "dtype": "float32", "id": "e"}]}]}})J";

TEST(ModelSummaryTest, CandidatesCountsAndJson) {
  auto tree = ParseModelTree(json::parse(kTree), "toy.json");
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  EXPECT_EQ(FindUnitCandidates(*tree),
            (std::vector<std::string>{"model.layers.0", "model.layers.1"}));
  const ModelSummary s = SummarizeModel(*tree);
  EXPECT_EQ(s.total_params, 40 + 16 + 4);
  EXPECT_EQ(s.trainable_params, 56);
  EXPECT_EQ(s.embedding_params, 40);
  EXPECT_EQ(s.param_bytes, 40 * 4 + 16 * 2 + 4 * 4);
  EXPECT_TRUE(s.tied);
  // The tied norm has a name outside layers.1, so that block does not own it.
  EXPECT_EQ(s.block_params, (std::vector<int64_t>{16, 0}));
  ASSERT_EQ(s.layer_groups.size(), 2u);  // one class, two sizes
  const json j = ModelSummaryToJson(s);
  EXPECT_EQ(j["model_type"], "toy");
  EXPECT_EQ(j["total_params"], 60);
  EXPECT_EQ(j["embedding_params"], 40);
  EXPECT_EQ(j["layers"], 2);
  EXPECT_EQ(j["active_params_per_token"], 60);
  EXPECT_EQ(j["tied"], true);
}

TEST(ModelSummaryTest, NoContainerMeansNoCandidates) {
  ModelTree t;
  t.root().class_name = "Net";
  const int seq = t.AddModule(0, MakeModule("seq", "Sequential"));
  t.AddModule(seq, MakeModule("0", "Linear"));
  EXPECT_TRUE(FindUnitCandidates(t).empty());
}

}  // namespace
}  // namespace shardscope
