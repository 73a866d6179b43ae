#include "core/model/tree_json.h"

#include <gtest/gtest.h>

#include <string>

namespace shardscope {
namespace {

using nlohmann::json;

json Parse(const std::string& text) { return json::parse(text); }

// A small tied model: embed_tokens.weight and lm_head.weight share id "emb".
const char* kTied = R"J({
  "format": "shardscope-tree/1",
  "config": {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 8},
  "root": {"name": "", "class": "LlamaForCausalLM", "op": {"kind": "loss", "vocab": 100},
    "children": [
      {"name": "model", "class": "LlamaModel", "gradient_checkpointing": true, "children": [
        {"name": "embed_tokens", "class": "Embedding",
         "op": {"kind": "embedding", "vocab": 100, "dim": 8},
         "params": [{"name": "weight", "id": "emb", "shape": [100, 8], "dtype": "float32"}]},
        {"name": "layers", "class": "ModuleList", "children": [
          {"name": "0", "class": "CheckpointWrapper", "checkpoint_wrapper": true, "children": [
            {"name": "_checkpoint_wrapped_module", "class": "LlamaDecoderLayer", "children": [
              {"name": "proj", "class": "Linear", "op": {"kind": "linear", "variant": "column",
                                                         "in": 8, "out": 8},
               "params": [{"name": "weight", "shape": [8, 8], "dtype": "bfloat16",
                           "layout": {"tp": "Shard(0)"}},
                          {"name": "bias", "shape": [8], "dtype": "bfloat16",
                           "requires_grad": false}]}]}]}]}]},
      {"name": "lm_head", "class": "Linear",
       "params": [{"name": "weight", "id": "emb", "shape": [100, 8], "dtype": "float32"}]}]}
})J";

TEST(TreeJsonTest, ParsesFieldsAndTies) {
  auto tree = ParseModelTree(Parse(kTied), "tree.json");
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  EXPECT_EQ(tree->identity.model_type, "llama");
  EXPECT_EQ(tree->identity.architecture, "LlamaForCausalLM");
  EXPECT_EQ(tree->config["hidden_size"], 8);
  auto params = EnumerateParams(*tree);
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].fqns,
            (std::vector<std::string>{"model.embed_tokens.weight", "lm_head.weight"}));
  EXPECT_EQ(params[1].fqns[0], "model.layers.0._checkpoint_wrapped_module.proj.weight");
  EXPECT_EQ(params[1].param->dtype, DType::kBFloat16);
  ASSERT_TRUE(params[1].param->layout.has_value());
  EXPECT_EQ(params[1].param->layout->at("tp"), Placement::Shard(0));
  EXPECT_FALSE(params[2].param->requires_grad);
  EXPECT_TRUE(tree->modules[1].gradient_checkpointing);
  auto mods = EnumerateModules(*tree);
  EXPECT_TRUE(tree->modules[static_cast<size_t>(mods[4].module)].checkpoint_wrapper);
  ASSERT_TRUE(tree->root().op.has_value());
  EXPECT_EQ(tree->root().op->kind, OpKind::kLoss);
  EXPECT_EQ(tree->root().op->dim("vocab"), 100);
  const Module& proj = tree->modules[static_cast<size_t>(mods[6].module)];
  ASSERT_TRUE(proj.op.has_value());
  EXPECT_EQ(proj.op->variant, "column");
}

TEST(TreeJsonTest, RoundTripIsIdentical) {
  auto tree = ParseModelTree(Parse(kTied), "tree.json");
  ASSERT_TRUE(tree.ok());
  json once = ModelTreeToJson(*tree);
  auto again = ParseModelTree(once, "roundtrip");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(ModelTreeToJson(*again), once);
  EXPECT_EQ(again->modules.size(), tree->modules.size());
}

TEST(TreeJsonTest, RepeatedModuleIdIsOneNode) {
  const char* text = R"J({"format": "shardscope-tree/1", "root": {"name": "", "class": "M",
    "children": [
      {"name": "a", "class": "Block", "children": [
        {"name": "norm", "class": "RMSNorm", "id": "n",
         "params": [{"name": "weight", "shape": [4], "dtype": "float32"}]}]},
      {"name": "b", "class": "Block", "children": [
        {"name": "norm", "class": "RMSNorm", "id": "n"}]},
      {"name": "c", "class": "Block", "children": [
        {"name": "other", "class": "RMSNorm", "id": "n"}]}]}})J";
  auto tree = ParseModelTree(Parse(text), "t.json");
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  auto mods = EnumerateModules(*tree);
  ASSERT_EQ(mods.size(), 7u);
  EXPECT_EQ(mods[2].module, mods[4].module);  // same name: the same node
  EXPECT_FALSE(mods[4].first_visit);
  EXPECT_EQ(mods[6].fqn, "c.other");  // another name: a copy with tied parameters
  auto params = EnumerateParams(*tree);
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].fqns,
            (std::vector<std::string>{"a.norm.weight", "b.norm.weight", "c.other.weight"}));
  // Writing it back keeps one tensor under three names.
  auto again = ParseModelTree(ModelTreeToJson(*tree), "rt");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(EnumerateParams(*again).size(), 1u);
  EXPECT_EQ(EnumerateParams(*again)[0].fqns.size(), 3u);
}

std::string ErrorOf(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return "not json";
  auto tree = ParseModelTree(j, "tree.json");
  if (tree.ok()) return "ok";
  EXPECT_EQ(tree.status().code(), ErrorCode::kInvalidInput);
  return tree.status().message();
}

std::string WithChild(const std::string& child) {
  return R"J({"format": "shardscope-tree/1", "root": {"name": "", "class": "M", "children": [)J" +
         child + "]}}";
}

TEST(TreeJsonTest, ErrorsNameTheFileAndJsonPath) {
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L", "params": [
      {"name": "w", "shape": [4, -1], "dtype": "float32"}]})J")),
            "tree.json: root.children[0].params[0].shape: expected an array of non-negative "
            "integers");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L", "colour": 1})J")),
            "tree.json: root.children[0]: unknown key 'colour' (expected one of: name, class, "
            "children, params, gradient_checkpointing, checkpoint_wrapper, op, id)");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L"}, {"name": "a", "class": "L"})J")),
            "tree.json: root.children[1].name: duplicate name 'a' in tree.json: root");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L", "params": [
      {"name": "w", "shape": [4], "dtype": "float32", "id": "t"}]},
      {"name": "b", "class": "L", "params": [
      {"name": "w", "shape": [5], "dtype": "float32", "id": "t"}]})J")),
            "tree.json: root.children[1].params[0]: tied parameter id 't' differs in shape, "
            "dtype or requires_grad from tree.json: root.children[0].params[0]");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "w", "class": "CheckpointWrapper",
      "checkpoint_wrapper": true})J")),
            "tree.json: root.children[0]: a checkpoint_wrapper module must have exactly one "
            "child (the wrapped block), found 0");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L", "params": [
      {"name": "w", "shape": [4], "dtype": "float33"}]})J")),
            "tree.json: root.children[0].params[0].dtype: unknown dtype 'float33' (expected one "
            "of float32, bfloat16, float16, float64, float8_e4m3fn, float8_e5m2, int64, int32, "
            "int8, uint8, bool)");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L", "params": [
      {"name": "w", "shape": [4], "dtype": "float32", "layout": {"tp": "Shard(x)"}}]})J")),
            "tree.json: root.children[0].params[0].layout.tp: bad placement 'Shard(x)' "
            "(expected Replicate(), Shard(d) with d >= 0, or Partial())");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L", "op": {"kind": "linear",
      "in": 4, "heads": 2}})J")),
            "tree.json: root.children[0].op: unknown key 'heads' (expected one of: kind, "
            "variant, in, out, bias, shared_input)");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a.b", "class": "L"})J")),
            "tree.json: root.children[0].name: expected a non-empty name without '.', got 'a.b'");
  EXPECT_EQ(ErrorOf(R"J({"format": "shardscope-tree/2", "root": {}})J"),
            "tree.json: format: expected \"shardscope-tree/1\", got \"shardscope-tree/2\"");
  EXPECT_EQ(ErrorOf(R"J([1, 2])J"), "tree.json: expected a JSON object (a module tree)");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L", "id": "x", "children": [
      {"name": "b", "class": "L", "id": "x"}]})J")),
            "tree.json: root.children[0].children[0]: module id 'x' repeats one of its own "
            "ancestors");
  // Issue 15: a module repeating its own root's id is a cycle too.
  EXPECT_EQ(ErrorOf(R"J({"format": "shardscope-tree/1", "root": {"name": "", "class": "M",
      "id": "r", "children": [{"name": "a", "class": "M", "id": "r"}]}})J"),
            "tree.json: root.children[0]: module id 'r' repeats one of its own ancestors");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L", "params": [
      {"name": "w", "shape": [1099511627776, 1099511627776], "dtype": "float32"}]})J")),
            "tree.json: root.children[0].params[0].shape: tensor has more than 2^48 elements");
}

// Issue 15: op dimensions are bounded (a 2^62-wide linear used to wrap in the op costs), and
// the 0/1 switches are switches.
TEST(TreeJsonTest, OpDimensionsAreBounded) {
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L", "op": {"kind": "linear",
      "in": 4611686018427387904, "out": 4}})J")),
            "tree.json: root.children[0].op.in = 4611686018427387904: expected an integer from "
            "0 to 2^32");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L", "op": {"kind": "linear",
      "in": 4, "out": 4, "bias": 2}})J")),
            "tree.json: root.children[0].op.bias = 2: expected 0 or 1");
  EXPECT_EQ(ErrorOf(WithChild(R"J({"name": "a", "class": "L", "op": {"kind": "linear",
      "in": 4294967296, "out": 4294967296}})J")),
            "ok");
}

// A module registered under two parents is visited (planned, scheduled) once per registration:
// 40 levels that each register the level below twice stand for 2^41 modules.
TEST(TreeJsonTest, SharedModulesCountPerRegistration) {
  std::string level = R"J({"name": "x", "class": "L", "id": "m0", "params": [
      {"name": "w", "shape": [4], "dtype": "float32"}]})J";
  for (int i = 1; i <= 40; ++i) {
    const std::string prev = "m" + std::to_string(i - 1);
    level =
        R"J({"name": "x", "class": "L", "id": "m)J" + std::to_string(i) +
        R"J(", "children": [{"name": "a", "class": "P", "children": [)J" + level +
        R"J(]}, {"name": "b", "class": "P", "children": [{"name": "x", "class": "L", "id": ")J" +
        prev + R"J("}]}]})J";
  }
  EXPECT_EQ(ErrorOf(WithChild(level)),
            "tree.json: module tree (shared modules counted per registration): 4398046511102 "
            "modules, more than the limit of 1048576 (set SHARDSCOPE_MAX_MODULES to raise it)");
}

// A repeat under a new name copies the subtree: the copies are counted as they are made.
TEST(TreeJsonTest, TiedCopiesAreBounded) {
  std::string level = R"J({"name": "x0", "class": "L", "id": "m0"})J";
  for (int i = 1; i <= 40; ++i) {
    const std::string prev = "m" + std::to_string(i - 1);
    level = R"J({"name": "x)J" + std::to_string(i) + R"J(", "class": "L", "id": "m)J" +
            std::to_string(i) + R"J(", "children": [)J" + level +
            R"J(, {"name": "copy", "class": "L", "id": ")J" + prev + R"J("}]})J";
  }
  EXPECT_EQ(ErrorOf(WithChild(level)),
            "tree.json: module tree: 1048577 modules, more than the limit of 1048576 (set "
            "SHARDSCOPE_MAX_MODULES to raise it)");
}

TEST(TreeJsonTest, DeepNestingIsAnErrorNotACrash) {
  std::string text = R"J({"format": "shardscope-tree/1", "root": {"name": "", "class": "M")J";
  std::string close;
  for (int i = 0; i < 300; ++i) {
    text += R"J(, "children": [{"name": "c", "class": "M")J";
    close += "}]";
  }
  text += close + "}}";
  EXPECT_NE(ErrorOf(text).find("nested deeper than 200 levels"), std::string::npos);
}

TEST(TreeJsonTest, LoadFileReportsSyntaxErrors) {
  auto missing = LoadModelTreeFile("tests/fixtures/trees/does_not_exist.json");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("does_not_exist.json"), std::string::npos);
}

}  // namespace
}  // namespace shardscope
