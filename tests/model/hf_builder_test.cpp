#include "core/model/hf_builder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/model/hf_spec.h"
#include "core/model/model_source.h"
#include "core/model/model_summary.h"
#include "core/model/tree_json.h"
#include "core/util/file_io.h"

namespace shardscope {
namespace {

using nlohmann::json;

json ReadJson(const std::string& path) {
  auto text = ReadFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? json::parse(*text) : json();
}

// Builder trees equal the trees transformers builds (exported by tools/export_module_tree.py
// into tests/fixtures/trees/ by tests/model/torch_export_check.py --regenerate): names,
// classes, shapes, dtypes, gradient_checkpointing flags, tie identities and descriptors.
class FixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureTest, BuilderTreeEqualsTransformersExport) {
  const std::string base = "tests/fixtures/trees/" + GetParam();
  const json config = ReadJson(base + ".config.json");
  auto built = BuildModelFromHfConfig(config, base + ".config.json", {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  auto exported = ParseModelTree(ReadJson(base + ".tree.json"), base + ".tree.json");
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  EXPECT_EQ(built->identity.model_type, exported->identity.model_type);
  EXPECT_EQ(built->identity.architecture, exported->identity.architecture);
  const json a = ModelTreeToJson(*built)["root"];
  const json b = ModelTreeToJson(*exported)["root"];
  if (a != b) {
    // Name the first differing module to make a failure readable.
    const json patch = json::diff(b, a);
    FAIL() << "builder differs from the export: " << patch.dump().substr(0, 2000);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, FixtureTest,
                         ::testing::Values("llama_tied", "qwen2", "qwen3_moe", "mixtral",
                                           "deepseek_v3", "gemma2", "gemma3_text", "gpt_oss", "mpt",
                                           "mistral", "qwen3", "llama_bias"));

TEST(BuiltinTest, ParameterCountsEqualPinnedTransformersFigures) {
  const json pinned = ReadJson("tests/model/pinned_param_counts.json")["total_params"];
  const auto names = BuiltinModelNames();
  ASSERT_EQ(names.size(), pinned.size());
  for (const std::string& name : names) {
    ModelSource source;
    source.name_or_path = name;
    auto tree = LoadModel(source, {});
    ASSERT_TRUE(tree.ok()) << tree.status().message();
    ASSERT_TRUE(pinned.contains(name)) << name;
    EXPECT_EQ(SummarizeModel(*tree).total_params, pinned[name].get<int64_t>()) << name;
  }
}

TEST(BuiltinTest, TiedEmbeddingIsOneTensorUnderTwoNames) {
  ModelSource source;
  source.name_or_path = "llama3.2-1b";
  auto tree = LoadModel(source, {});
  ASSERT_TRUE(tree.ok());
  auto params = EnumerateParams(*tree);
  EXPECT_EQ(params[0].fqns,
            (std::vector<std::string>{"model.embed_tokens.weight", "lm_head.weight"}));
  const ModelSummary s = SummarizeModel(*tree);
  EXPECT_TRUE(s.tied);
  EXPECT_EQ(s.embedding_params, 128256 * 2048);
  source.name_or_path = "llama3-8b";
  auto untied = LoadModel(source, {});
  ASSERT_TRUE(untied.ok());
  EXPECT_FALSE(SummarizeModel(*untied).tied);
}

TEST(BuiltinTest, MoeActiveParamsAndUnitCandidates) {
  ModelSource source;
  source.name_or_path = "qwen3-30b-a3b";
  auto tree = LoadModel(source, {});
  ASSERT_TRUE(tree.ok());
  const ModelSummary s = SummarizeModel(*tree);
  // 48 layers × 128 experts × 3 × 2048 × 768 routed weights; 8 of 128 active per token.
  const int64_t routed = int64_t{48} * 128 * 3 * 2048 * 768;
  EXPECT_EQ(s.routed_expert_params, routed);
  EXPECT_EQ(s.active_params_per_token, s.total_params - routed + routed / 16);
  ASSERT_EQ(s.blocks.size(), 48u);
  EXPECT_EQ(s.blocks.front(), "model.layers.0");
  ASSERT_EQ(s.expert_modules.size(), 48u);
  EXPECT_EQ(s.expert_modules.front(), "model.layers.0.mlp.experts");
}

TEST(BuiltinTest, DeepseekDenseLayersThenMoe) {
  ModelSource source;
  source.name_or_path = "deepseek-v3";
  auto tree = LoadModel(source, {});
  ASSERT_TRUE(tree.ok());
  const ModelSummary s = SummarizeModel(*tree);
  ASSERT_EQ(s.layer_groups.size(), 2u);
  EXPECT_EQ(s.layer_groups[0].count, 3);
  EXPECT_EQ(s.layer_groups[1].count, 58);
  EXPECT_GT(s.layer_groups[1].params, s.layer_groups[0].params);
}

TEST(BuilderTest, MptCountDependsOnMaxSeqLenWithLearnedPositions) {
  json config = ReadJson("tests/fixtures/trees/mpt.config.json");
  config["attn_config"]["alibi"] = false;
  config["learned_pos_emb"] = true;
  config["max_seq_len"] = 32;
  auto short_ctx = BuildModelFromHfConfig(config, "mpt", {});
  config["max_seq_len"] = 96;
  auto long_ctx = BuildModelFromHfConfig(config, "mpt", {});
  ASSERT_TRUE(short_ctx.ok() && long_ctx.ok());
  EXPECT_EQ(SummarizeModel(*long_ctx).total_params - SummarizeModel(*short_ctx).total_params,
            64 * 64);                     // 64 more positions × d_model
  config["attn_config"]["alibi"] = true;  // ALiBi: no position table
  auto alibi = BuildModelFromHfConfig(config, "mpt", {});
  EXPECT_EQ(SummarizeModel(*alibi).total_params + 32 * 64, SummarizeModel(*short_ctx).total_params);
}

TEST(BuilderTest, TensorAndExpertParallelLayouts) {
  const json config = ReadJson("tests/fixtures/trees/qwen3_moe.config.json");
  ModelBuildOptions options;
  options.tp = 2;
  options.ep = 2;
  auto tree = BuildModelFromHfConfig(config, "qwen3_moe", options);
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  std::map<std::string, std::string> layout;
  for (const ParamEntry& p : EnumerateParams(*tree)) {
    ASSERT_TRUE(p.param->layout.has_value()) << p.fqns[0];
    std::string text;
    for (const auto& [dim, pl] : *p.param->layout) text += dim + "=" + PlacementName(pl);
    layout[p.fqns[0]] = text;
  }
  EXPECT_EQ(layout["model.embed_tokens.weight"], "tp=Shard(0)");
  EXPECT_EQ(layout["model.layers.0.self_attn.q_proj.weight"], "tp=Shard(0)");
  EXPECT_EQ(layout["model.layers.0.self_attn.o_proj.weight"], "tp=Shard(1)");
  EXPECT_EQ(layout["model.layers.0.self_attn.q_norm.weight"], "tp=Replicate()");
  EXPECT_EQ(layout["model.layers.0.mlp.experts.gate_up_proj"], "ep=Shard(0)");
  EXPECT_EQ(layout["model.layers.0.mlp.gate.weight"], "tp=Replicate()");
  EXPECT_EQ(layout["model.layers.1.mlp.down_proj.weight"], "tp=Shard(1)");
  EXPECT_EQ(layout["lm_head.weight"], "tp=Shard(0)");
  // Without tp/ep nothing carries a layout (plain FSDP).
  auto plain = BuildModelFromHfConfig(config, "qwen3_moe", {});
  for (const ParamEntry& p : EnumerateParams(*plain)) EXPECT_FALSE(p.param->layout) << p.fqns[0];
  options.ep = 3;
  auto bad = BuildModelFromHfConfig(config, "qwen3_moe", options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "qwen3_moe: ep=3 does not divide the 4 routed experts");
}

std::string BuildError(json config) {
  auto t = BuildModelFromHfConfig(config, "cfg.json", {});
  if (t.ok()) return "ok";
  EXPECT_EQ(t.status().code(), ErrorCode::kInvalidInput);
  return t.status().message();
}

TEST(BuilderTest, ConfigErrorsNameTheFileAndField) {
  json llama = ReadJson("tests/fixtures/trees/llama_tied.config.json");
  json c = llama;
  c["model_type"] = "bert";
  EXPECT_EQ(BuildError(c),
            "cfg.json: model_type: unsupported 'bert' (built-in builders: deepseek_v3, gemma2, "
            "gemma3_text, gpt_oss, llama, mistral, mixtral, mpt, qwen2, qwen3, qwen3_moe; for "
            "another model export its module tree with tools/export_module_tree.py and pass the "
            "tree file)");
  c = llama;
  c.erase("hidden_size");
  EXPECT_EQ(BuildError(c), "cfg.json: missing required field 'hidden_size'");
  c = llama;
  c["num_hidden_layers"] = "two";
  EXPECT_EQ(BuildError(c),
            "cfg.json: num_hidden_layers: expected an integer in [1, 1024], got \"two\"");
  c = llama;
  c["hidden_size"] = int64_t{1} << 30;
  EXPECT_EQ(BuildError(c),
            "cfg.json: hidden_size: expected an integer in [1, 16777216], got 1073741824");
  json moe = ReadJson("tests/fixtures/trees/qwen3_moe.config.json");
  moe["num_experts"] = 1 << 24;
  moe["hidden_size"] = 1 << 24;
  moe["moe_intermediate_size"] = 1 << 24;
  EXPECT_EQ(BuildError(moe),
            "cfg.json: parameter 'gate_up_proj' of model.layers.0.mlp.experts has more than 2^48 "
            "elements");
  c = llama;
  c["num_key_value_heads"] = 3;
  EXPECT_EQ(BuildError(c),
            "cfg.json: num_key_value_heads: expected a divisor of num_attention_heads (4), got 3");
  c = llama;
  c["hidden_act"] = "swiglu9";
  EXPECT_EQ(BuildError(c),
            "cfg.json: hidden_act: unsupported activation 'swiglu9' (expected silu, swish, gelu, "
            "gelu_pytorch_tanh, gelu_new or relu)");
  c = llama;
  c["layer_types"] = json::array({"full_attention"});
  EXPECT_EQ(BuildError(c),
            "cfg.json: layer_types: expected 2 entries (num_hidden_layers), found 1");
  EXPECT_EQ(BuildError(json::array()), "cfg.json: expected a JSON object (config.json)");
  // Issue 15: hidden_size 2 with 4 heads would give a head_dim of 0 (q_proj [0, 2]).
  c = llama;
  c["hidden_size"] = 2;
  EXPECT_EQ(BuildError(c),
            "cfg.json: hidden_size: expected at least num_attention_heads (4), got 2");
}

TEST(BuilderTest, TensorParallelMustSplitWholeHeads) {
  json llama = ReadJson("tests/fixtures/trees/llama_tied.config.json");  // 4 heads, 2 KV heads
  auto build = [&](int tp) {
    ModelBuildOptions o;
    o.tp = tp;
    auto t = BuildModelFromHfConfig(llama, "cfg.json", o);
    return t.ok() ? std::string("ok") : t.status().message();
  };
  EXPECT_EQ(build(2), "ok");
  EXPECT_EQ(build(3),
            "cfg.json: tp=3 does not divide num_attention_heads (4): tensor parallelism gives "
            "each rank whole heads");
  EXPECT_NE(build(4).find("cfg.json: tp=4 does not divide num_key_value_heads (2)"),
            std::string::npos)
      << build(4);
}

TEST(ModelSourceTest, UnknownBuiltinAndBadFiles) {
  ModelSource source;
  source.name_or_path = "llama9";
  auto r = LoadModel(source, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("model: unknown built-in model 'llama9' (built-ins: ", 0),
            0u);
  auto arg = ClassifyModelArgument("no/such/file.json");
  ASSERT_FALSE(arg.ok());
  EXPECT_NE(arg.status().message().find("neither a built-in model"), std::string::npos);
  auto cls = ClassifyModelArgument(std::string(SHARDSCOPE_SOURCE_DIR) +
                                   "/tests/fixtures/trees/mpt.tree.json");
  ASSERT_TRUE(cls.ok());
  EXPECT_EQ(cls->kind, ModelSource::Kind::kModuleTreeFile);
  cls = ClassifyModelArgument(std::string(SHARDSCOPE_SOURCE_DIR) +
                              "/tests/fixtures/trees/mpt.config.json");
  ASSERT_TRUE(cls.ok());
  EXPECT_EQ(cls->kind, ModelSource::Kind::kHfConfigFile);
  ModelSource inline_source;
  inline_source.kind = ModelSource::Kind::kHfInline;
  inline_source.inline_config = ReadJson("tests/fixtures/trees/llama_tied.config.json");
  EXPECT_TRUE(LoadModel(inline_source, {}).ok());
}

}  // namespace
}  // namespace shardscope
