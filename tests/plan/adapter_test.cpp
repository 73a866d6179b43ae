#include "core/plan/adapter.h"

#include <gtest/gtest.h>

#include "tests/plan/plan_test_util.h"

namespace shardscope {
namespace {

using namespace testing_util;
using Names = std::vector<std::string>;

TEST(AdapterTest, NormalizeModelName) {
  EXPECT_EQ(NormalizeModelName("Qwen2_5_VLForConditionalGeneration"), "qwen25vl");
  EXPECT_EQ(NormalizeModelName("qwen2_5_vl"), "qwen25vl");
  EXPECT_EQ(NormalizeModelName("LlamaForCausalLM"), "llama");
  EXPECT_EQ(NormalizeModelName("GPT2LMHeadModel"), "gpt2");
  EXPECT_EQ(NormalizeModelName("BertForSequenceClassification"), "bert");
  EXPECT_EQ(NormalizeModelName("MistralModel"), "mistral");
  EXPECT_EQ(NormalizeModelName("deepseek-v3"), "deepseekv3");
  EXPECT_EQ(NormalizeModelName("Model"), "model");  // nothing left to strip to
}

TEST(AdapterTest, LookupByModelTypeThenArchitecture) {
  AdapterRegistry r;
  AdapterSpec a;
  a.name = "A";
  AdapterSpec b;
  b.name = "B";
  r.Register(a, {"my_model"});
  r.Register(b, {"OtherArch"});
  EXPECT_EQ(r.Find({"My-Model", "OtherArchForCausalLM"})->name, "A");  // model_type first
  EXPECT_EQ(r.Find({"unknown", "OtherArchForCausalLM"})->name, "B");
  EXPECT_EQ(r.Find({"unknown", "Nope"}), nullptr);
  EXPECT_EQ(r.Find({"", ""}), nullptr);
  // Built-ins: Qwen2-VL by either name.
  EXPECT_NE(BuiltinAdapters().Find({"qwen2_vl", ""}), nullptr);
  EXPECT_NE(BuiltinAdapters().Find({"", "Qwen2_5_VLForConditionalGeneration"}), nullptr);
  EXPECT_EQ(BuiltinAdapters().Find({"llama", "LlamaForCausalLM"}), nullptr);
}

TEST(AdapterTest, GlobMatchesOneComponent) {
  EXPECT_TRUE(GlobMatch("model.vision.blocks.*", "model.vision.blocks.3"));
  EXPECT_FALSE(GlobMatch("model.vision.blocks.*", "model.vision.blocks.3.mlp"));
  EXPECT_FALSE(GlobMatch("model.vision.blocks.*", "model.vision.blocks"));
  EXPECT_TRUE(GlobMatch("*.experts", "layers.experts"));
  EXPECT_TRUE(GlobMatch("a.*.c", "a.b.c"));
  EXPECT_FALSE(GlobMatch("a.*.c", "a.b.d"));
  EXPECT_TRUE(GlobMatch("lm_head", "lm_head"));
}

TEST(AdapterTest, ResolveSharedModuleNeedsItsFirstName) {
  TreeBuilder b;
  const int model = b.Add(0, "model", "Model", true);
  const int shared = b.Add(model, "shared", "Block");
  b.P(b.Add(shared, "fc"), "weight", {4, 4});
  const int other = b.Add(0, "other");
  b.tree.AddExistingChild(other, shared);
  AdapterSpec a;
  a.name = "t";
  a.fsdp_wrap_modules = {"other.shared"};
  Result<ResolvedAdapter> r = ResolveAdapter(a, EnumerateModules(b.tree));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("second name of a shared module"), std::string::npos);
  a.fsdp_wrap_modules = {"model.shared"};
  r = ResolveAdapter(a, EnumerateModules(b.tree));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->wrap_modules, (Names{"model.shared"}));
}

// Qwen2-VL as transformers >= 4.52 builds it: model.visual + model.language_model.
ModelTree QwenVlTree() {
  TreeBuilder b;
  b.tree.identity = {"qwen2_vl", "Qwen2VLForConditionalGeneration"};
  const int model = b.Add(0, "model", "Qwen2VLModel");
  const int visual = b.Add(model, "visual", "Qwen2VisionTransformerPretrainedModel", true);
  const int patch = b.Add(visual, "patch_embed", "PatchEmbed");
  b.P(b.Add(patch, "proj", "Conv3d"), "weight", {1280, 3, 2, 14, 14});
  const int blocks = b.Add(visual, "blocks", "ModuleList");
  for (int i = 0; i < 2; ++i) {
    const int blk = b.Add(blocks, std::to_string(i), "Qwen2VLVisionBlock");
    b.P(b.Add(blk, "attn"), "weight", {64, 64});
  }
  const int merger = b.Add(visual, "merger", "PatchMerger");
  b.P(b.Add(merger, "ln_q"), "weight", {64});
  b.P(b.Add(merger, "mlp"), "weight", {64, 256});
  const int lm = b.Add(model, "language_model", "Qwen2VLTextModel", true);
  const int layers = b.Add(lm, "layers", "ModuleList");
  for (int i = 0; i < 2; ++i) {
    const int l = b.Add(layers, std::to_string(i), "Qwen2VLDecoderLayer");
    b.P(b.Add(l, "mlp"), "weight", {64, 64});
  }
  b.P(b.Add(0, "lm_head"), "weight", {100, 64});
  return b.tree;
}

TEST(AdapterTest, BuiltinQwen2VlDeclaresVisionBlocksAndMerger) {
  MeshContext mesh = Mesh(8, 8);
  Plan plan = PlanOf(QwenVlTree(), mesh, Config(mesh));
  EXPECT_EQ(plan.adapter, "built-in adapter qwen2_vl");
  EXPECT_EQ(ExecOrder(plan),
            (Names{"model.visual.blocks.0", "model.visual.blocks.1", "model.visual.merger",
                   "model.language_model.layers.0", "model.language_model.layers.1"}));
  EXPECT_EQ(ParamFqns(Unit(plan, "model.visual.merger").params),
            (Names{"model.visual.merger.ln_q.weight", "model.visual.merger.mlp.weight"}));
  // Without the adapter, discovery splits the tower: patch_embed.proj, merger.ln_q, merger.mlp.
  PlanOptions none;
  none.use_builtin_adapters = false;
  Plan bare = PlanOf(QwenVlTree(), mesh, Config(mesh), none);
  EXPECT_NE(bare.FindUnit("model.visual.merger.ln_q"), -1);
  EXPECT_NE(bare.FindUnit("model.visual.patch_embed.proj"), -1);
  EXPECT_EQ(bare.adapter, "");
}

}  // namespace
}  // namespace shardscope
