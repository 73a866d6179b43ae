#include "core/model/tree.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

Param P(std::string name, std::vector<int64_t> shape, std::string id = "") {
  Param p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  p.id = std::move(id);
  return p;
}

// model.embed_tokens.weight tied to lm_head.weight; layers registered as a dict {2, 7}.
ModelTree TiedTree() {
  ModelTree t;
  t.root().class_name = "LlamaForCausalLM";
  int model = t.AddModule(0, MakeModule("model", "LlamaModel", true));
  int emb = t.AddModule(model, MakeModule("embed_tokens", "Embedding"));
  t.modules[emb].params.push_back(P("weight", {100, 8}, "emb"));
  int layers = t.AddModule(model, MakeModule("layers", "ModuleDict"));
  for (const char* key : {"2", "7"}) {
    int l = t.AddModule(layers, MakeModule(key, "Block"));
    int lin = t.AddModule(l, MakeModule("proj", "Linear"));
    t.modules[lin].params.push_back(P("weight", {8, 8}));
  }
  int head = t.AddModule(0, MakeModule("lm_head", "Linear"));
  t.modules[head].params.push_back(P("weight", {100, 8}, "emb"));
  return t;
}

TEST(TreeTest, ModulesInPreOrderWithRegisteredNames) {
  ModelTree t = TiedTree();
  std::vector<std::string> fqns;
  for (const auto& e : EnumerateModules(t)) fqns.push_back(e.fqn);
  EXPECT_EQ(fqns, (std::vector<std::string>{"", "model", "model.embed_tokens", "model.layers",
                                            "model.layers.2", "model.layers.2.proj",
                                            "model.layers.7", "model.layers.7.proj", "lm_head"}));
}

TEST(TreeTest, TiedParamsAreOneEntryWithAllAliases) {
  ModelTree t = TiedTree();
  auto params = EnumerateParams(t);
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].fqns,
            (std::vector<std::string>{"model.embed_tokens.weight", "lm_head.weight"}));
  EXPECT_EQ(params[1].fqns, (std::vector<std::string>{"model.layers.2.proj.weight"}));
  EXPECT_EQ(params[2].fqns, (std::vector<std::string>{"model.layers.7.proj.weight"}));
}

TEST(TreeTest, SharedModuleIsVisitedTwiceAndItsParamsAreOneTensor) {
  ModelTree t;
  int a = t.AddModule(0, MakeModule("a", "Block"));
  int shared = t.AddModule(a, MakeModule("norm", "RMSNorm"));
  t.modules[shared].params.push_back(P("weight", {8}));
  int b = t.AddModule(0, MakeModule("b", "Block"));
  t.AddExistingChild(b, shared);
  auto mods = EnumerateModules(t);
  ASSERT_EQ(mods.size(), 5u);
  EXPECT_EQ(mods[2].fqn, "a.norm");
  EXPECT_TRUE(mods[2].first_visit);
  EXPECT_EQ(mods[4].fqn, "b.norm");
  EXPECT_FALSE(mods[4].first_visit);
  auto params = EnumerateParams(t);
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].fqns, (std::vector<std::string>{"a.norm.weight", "b.norm.weight"}));
}

TEST(TreeTest, PlacementParsing) {
  EXPECT_EQ(*ParsePlacement("Shard(1)", "f"), Placement::Shard(1));
  EXPECT_EQ(*ParsePlacement("Replicate()", "f"), Placement::Replicate());
  EXPECT_EQ(ParsePlacement("Partial()", "f")->kind, Placement::Kind::kPartial);
  auto bad = ParsePlacement("Shard(-1)", "params.w.layout.tp");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("params.w.layout.tp"), std::string::npos);
  EXPECT_FALSE(ParsePlacement("Shard(x)", "f").ok());
}

TEST(TreeTest, DTypes) {
  EXPECT_EQ(*ParseDType("torch.bfloat16", "f"), DType::kBFloat16);
  EXPECT_EQ(*ParseDType("fp32", "f"), DType::kFloat32);
  EXPECT_EQ(DTypeBytes(DType::kBFloat16), 2);
  auto bad = ParseDType("bfloat17", "fsdp.mix_precision.param_dtype");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fsdp.mix_precision.param_dtype"), std::string::npos);
  EXPECT_NE(bad.status().message().find("bfloat17"), std::string::npos);
}

}  // namespace
}  // namespace shardscope
