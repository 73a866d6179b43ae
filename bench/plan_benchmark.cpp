// Planning speed (issue 2): a 126-layer dense model (Llama 3 405B shapes) on 8×128 GPUs and
// a 61-layer model with 256 routed experts per layer (DeepSeek-V3 shapes, ep 8), whose
// per-expert module tree has ~60k modules. Target: < 100 ms per plan.
//
// Run: build-<you>/bench/plan_benchmark --benchmark_repetitions=5
// --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <string>

#include "core/model/model_source.h"
#include "core/plan/planner.h"

namespace shardscope {
namespace {

Param MakeParam(std::string name, std::vector<int64_t> shape,
                std::optional<SourceLayout> layout = {}) {
  Param p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  p.dtype = DType::kBFloat16;
  p.layout = std::move(layout);
  return p;
}

int Linear(ModelTree& t, int parent, const std::string& name, int64_t out, int64_t in,
           std::optional<SourceLayout> layout = {}) {
  Module m = MakeModule(name, "Linear");
  m.params.push_back(MakeParam("weight", {out, in}, std::move(layout)));
  return t.AddModule(parent, std::move(m));
}

int Norm(ModelTree& t, int parent, const std::string& name, int64_t dim) {
  Module m = MakeModule(name, "RMSNorm");
  m.params.push_back(MakeParam("weight", {dim}));
  return t.AddModule(parent, std::move(m));
}

// Llama 3 405B as transformers builds it: 126 layers, hidden 16384, ffn 53248, 128 heads of
// 128, 8 KV heads, vocab 128256.
ModelTree Llama405B() {
  const int64_t h = 16384, ffn = 53248, kv = 8 * 128, vocab = 128256;
  ModelTree t;
  t.identity = {"llama", "LlamaForCausalLM"};
  const int model = t.AddModule(0, MakeModule("model", "LlamaModel", true));
  Module emb = MakeModule("embed_tokens", "Embedding");
  emb.params.push_back(MakeParam("weight", {vocab, h}));
  t.AddModule(model, std::move(emb));
  const int layers = t.AddModule(model, MakeModule("layers", "ModuleList"));
  for (int i = 0; i < 126; ++i) {
    const int l = t.AddModule(layers, MakeModule(std::to_string(i), "LlamaDecoderLayer", true));
    const int attn = t.AddModule(l, MakeModule("self_attn", "LlamaAttention"));
    Linear(t, attn, "q_proj", h, h);
    Linear(t, attn, "k_proj", kv, h);
    Linear(t, attn, "v_proj", kv, h);
    Linear(t, attn, "o_proj", h, h);
    const int mlp = t.AddModule(l, MakeModule("mlp", "LlamaMLP"));
    Linear(t, mlp, "gate_proj", ffn, h);
    Linear(t, mlp, "up_proj", ffn, h);
    Linear(t, mlp, "down_proj", h, ffn);
    Norm(t, l, "input_layernorm", h);
    Norm(t, l, "post_attention_layernorm", h);
  }
  Norm(t, model, "norm", h);
  Linear(t, 0, "lm_head", vocab, h);
  return t;
}

// DeepSeek-V3 with the per-expert ModuleList of transformers 4.x (DeepseekV3MoE.experts):
// 61 layers (3 dense), MLA attention, 256 routed experts of ffn 2048 and one shared expert.
// Routed-expert weights carry {"ep": Replicate()} so they sit on the expert mesh and form
// expert units; with per-expert modules EP splits the list, not a tensor dim, which a
// per-parameter placement cannot express, so the layout is for planning-scale purposes.
ModelTree DeepSeekV3PerExpert() {
  const int64_t h = 7168, moe_ffn = 2048, dense_ffn = 18432, vocab = 129280;
  const SourceLayout on_ep{{"ep", Placement::Replicate()}};
  ModelTree t;
  t.identity = {"deepseek_v3", "DeepseekV3ForCausalLM"};
  const int model = t.AddModule(0, MakeModule("model", "DeepseekV3Model", true));
  Module emb = MakeModule("embed_tokens", "Embedding");
  emb.params.push_back(MakeParam("weight", {vocab, h}));
  t.AddModule(model, std::move(emb));
  const int layers = t.AddModule(model, MakeModule("layers", "ModuleList"));
  for (int i = 0; i < 61; ++i) {
    const int l =
        t.AddModule(layers, MakeModule(std::to_string(i), "DeepseekV3DecoderLayer", true));
    const int attn = t.AddModule(l, MakeModule("self_attn", "DeepseekV3Attention"));
    Linear(t, attn, "q_a_proj", 1536, h);
    Norm(t, attn, "q_a_layernorm", 1536);
    Linear(t, attn, "q_b_proj", 128 * 192, 1536);
    Linear(t, attn, "kv_a_proj_with_mqa", 512 + 64, h);
    Norm(t, attn, "kv_a_layernorm", 512);
    Linear(t, attn, "kv_b_proj", 128 * (128 + 128), 512);
    Linear(t, attn, "o_proj", h, 128 * 128);
    if (i < 3) {
      const int mlp = t.AddModule(l, MakeModule("mlp", "DeepseekV3MLP"));
      Linear(t, mlp, "gate_proj", dense_ffn, h);
      Linear(t, mlp, "up_proj", dense_ffn, h);
      Linear(t, mlp, "down_proj", h, dense_ffn);
    } else {
      const int mlp = t.AddModule(l, MakeModule("mlp", "DeepseekV3MoE"));
      const int experts = t.AddModule(mlp, MakeModule("experts", "ModuleList"));
      for (int e = 0; e < 256; ++e) {
        const int ex = t.AddModule(experts, MakeModule(std::to_string(e), "DeepseekV3MLP"));
        Linear(t, ex, "gate_proj", moe_ffn, h, on_ep);
        Linear(t, ex, "up_proj", moe_ffn, h, on_ep);
        Linear(t, ex, "down_proj", h, moe_ffn, on_ep);
      }
      Module gate = MakeModule("gate", "DeepseekV3TopkRouter");
      gate.params.push_back(MakeParam("weight", {256, h}));
      gate.params.push_back(MakeParam("e_score_correction_bias", {256}));
      t.AddModule(mlp, std::move(gate));
      const int shared = t.AddModule(mlp, MakeModule("shared_experts", "DeepseekV3MLP"));
      Linear(t, shared, "gate_proj", moe_ffn, h);
      Linear(t, shared, "up_proj", moe_ffn, h);
      Linear(t, shared, "down_proj", h, moe_ffn);
    }
    Norm(t, l, "input_layernorm", h);
    Norm(t, l, "post_attention_layernorm", h);
  }
  Norm(t, model, "norm", h);
  Linear(t, 0, "lm_head", vocab, h);
  return t;
}

void RunPlan(benchmark::State& state, const ModelTree& tree, const MeshLayout& layout) {
  Result<MeshContext> mesh = BuildMeshContext(layout);
  if (!mesh.ok()) {
    state.SkipWithError(mesh.status().message().c_str());
    return;
  }
  FsdpConfig config;
  config.dp_shard_size = layout.dp_shard;
  config.edp_shard_size = layout.edp_shard;
  config.mix_precision.param_dtype = DType::kBFloat16;
  config.mix_precision.reduce_dtype = DType::kFloat32;
  size_t units = 0;
  for (auto _ : state) {
    Result<Plan> plan = BuildPlan(tree, *mesh, config);
    if (!plan.ok()) {
      state.SkipWithError(plan.status().message().c_str());
      return;
    }
    units = plan->units.size();
    benchmark::DoNotOptimize(plan->totals.sharded_bytes_per_rank);
  }
  size_t params = 0;
  for (const Module& m : tree.modules) params += m.params.size();
  state.counters["modules"] = static_cast<double>(tree.modules.size());
  state.counters["params"] = static_cast<double>(params);
  state.counters["units"] = static_cast<double>(units);
}

// 8 nodes-groups × 128: HSDP with dp_replicate 8, dp_shard 128.
void BM_PlanLlama405B_8x128(benchmark::State& state) {
  static const ModelTree tree = Llama405B();
  MeshLayout l;
  l.world_size = 1024;
  l.dp_shard = 128;
  RunPlan(state, tree, l);
}
BENCHMARK(BM_PlanLlama405B_8x128)->Unit(benchmark::kMillisecond);

// 256 GPUs: dense HSDP 8 × 32, experts over ep 8 with edp_shard 32.
void BM_PlanDeepSeekV3PerExpert_Ep8(benchmark::State& state) {
  static const ModelTree tree = DeepSeekV3PerExpert();
  MeshLayout l;
  l.world_size = 256;
  l.dp_shard = 32;
  l.ep = 8;
  l.edp_shard = 32;
  RunPlan(state, tree, l);
}
BENCHMARK(BM_PlanDeepSeekV3PerExpert_Ep8)->Unit(benchmark::kMillisecond);

// The model zoo's DeepSeek-V3 (stacked experts, EP Shard(0) layouts) through LoadModel.
void BM_PlanDeepSeekV3Builtin_Ep8(benchmark::State& state) {
  ModelSource src;
  src.name_or_path = "deepseek-v3";
  ModelBuildOptions options;
  options.ep = 8;
  static const Result<ModelTree> tree = LoadModel(src, options);
  if (!tree.ok()) {
    state.SkipWithError(tree.status().message().c_str());
    return;
  }
  MeshLayout l;
  l.world_size = 256;
  l.dp_shard = 32;
  l.ep = 8;
  l.edp_shard = 32;
  RunPlan(state, *tree, l);
}
BENCHMARK(BM_PlanDeepSeekV3Builtin_Ep8)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardscope

BENCHMARK_MAIN();
