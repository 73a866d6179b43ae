// A small Llama-shaped model built in code (descriptors on every leaf) and the plan / options
// that go with it, shared by the schedule tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/mesh/mesh_context.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_builder.h"

namespace shardscope::testing {

struct TinyShape {
  int layers = 4;
  int64_t vocab = 1024;
  int64_t dim = 256;
  int64_t ffn = 512;
  int64_t heads = 8;
  int64_t kv_heads = 4;
};

inline Param W(std::vector<int64_t> shape, std::string name = "weight") {
  Param p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  return p;
}

inline OpDescriptor Op(OpKind kind, std::map<std::string, int64_t> dims, std::string variant = "") {
  OpDescriptor d;
  d.kind = kind;
  d.dims = std::move(dims);
  d.variant = std::move(variant);
  return d;
}

inline int Leaf(ModelTree& t, int parent, std::string name, std::string cls, OpDescriptor op,
                std::vector<int64_t> weight) {
  Module m = MakeModule(std::move(name), std::move(cls));
  m.op = std::move(op);
  if (!weight.empty()) m.params.push_back(W(std::move(weight)));
  return t.AddModule(parent, std::move(m));
}

inline ModelTree TinyLlama(const TinyShape& s = {}) {
  ModelTree t;
  t.identity.model_type = "tinyllama";
  t.root().class_name = "TinyForCausalLM";
  t.root().op = Op(OpKind::kLoss, {{"vocab", s.vocab}});
  const int64_t hd = s.dim / s.heads;
  int model = t.AddModule(0, MakeModule("model", "TinyModel", true));
  Leaf(t, model, "embed_tokens", "Embedding",
       Op(OpKind::kEmbedding, {{"vocab", s.vocab}, {"dim", s.dim}}, "vocab"), {s.vocab, s.dim});
  int layers = t.AddModule(model, MakeModule("layers", "ModuleList"));
  for (int i = 0; i < s.layers; ++i) {
    int block = t.AddModule(layers, MakeModule(std::to_string(i), "TinyDecoderLayer", true));
    Leaf(t, block, "input_layernorm", "RMSNorm", Op(OpKind::kNorm, {{"dim", s.dim}}, "rmsnorm"),
         {s.dim});
    Module attn = MakeModule("self_attn", "TinyAttention");
    attn.op = Op(OpKind::kAttention,
                 {{"heads", s.heads}, {"kv_heads", s.kv_heads}, {"head_dim", hd}, {"causal", 1}});
    int a = t.AddModule(block, std::move(attn));
    Leaf(t, a, "q_proj", "Linear", Op(OpKind::kLinear, {{"in", s.dim}, {"out", s.dim}}, "column"),
         {s.dim, s.dim});
    Leaf(t, a, "k_proj", "Linear",
         Op(OpKind::kLinear, {{"in", s.dim}, {"out", s.kv_heads * hd}, {"shared_input", 1}},
            "column"),
         {s.kv_heads * hd, s.dim});
    Leaf(t, a, "v_proj", "Linear",
         Op(OpKind::kLinear, {{"in", s.dim}, {"out", s.kv_heads * hd}, {"shared_input", 1}},
            "column"),
         {s.kv_heads * hd, s.dim});
    Leaf(t, a, "o_proj", "Linear",
         Op(OpKind::kLinear, {{"in", s.dim}, {"out", s.dim}, {"shared_input", 1}}, "row"),
         {s.dim, s.dim});
    Leaf(t, block, "post_attention_layernorm", "RMSNorm",
         Op(OpKind::kNorm, {{"dim", s.dim}}, "rmsnorm"), {s.dim});
    int mlp = t.AddModule(block, MakeModule("mlp", "TinyMLP"));
    Leaf(t, mlp, "gate_proj", "Linear",
         Op(OpKind::kLinear, {{"in", s.dim}, {"out", s.ffn}}, "column"), {s.ffn, s.dim});
    Leaf(t, mlp, "up_proj", "Linear",
         Op(OpKind::kLinear, {{"in", s.dim}, {"out", s.ffn}, {"shared_input", 1}}, "column"),
         {s.ffn, s.dim});
    Leaf(t, mlp, "act_fn", "SiLU", Op(OpKind::kActivation, {{"dim", s.ffn}, {"gated", 1}}, "silu"),
         {});
    Leaf(t, mlp, "down_proj", "Linear", Op(OpKind::kLinear, {{"in", s.ffn}, {"out", s.dim}}, "row"),
         {s.dim, s.ffn});
  }
  Leaf(t, model, "norm", "RMSNorm", Op(OpKind::kNorm, {{"dim", s.dim}}, "rmsnorm"), {s.dim});
  Leaf(t, 0, "lm_head", "Linear", Op(OpKind::kLinear, {{"in", s.dim}, {"out", s.vocab}}, "column"),
       {s.vocab, s.dim});
  return t;
}

// Two MoE blocks: router + routed experts (expert-parallel source layout) in each.
inline ModelTree TinyMoe() {
  ModelTree t;
  t.root().op = Op(OpKind::kLoss, {{"vocab", 512}});
  int model = t.AddModule(0, MakeModule("model", "MoeModel", true));
  Leaf(t, model, "embed_tokens", "Embedding", Op(OpKind::kEmbedding, {{"vocab", 512}, {"dim", 64}}),
       {512, 64});
  int layers = t.AddModule(model, MakeModule("layers", "ModuleList"));
  for (int i = 0; i < 2; ++i) {
    int block = t.AddModule(layers, MakeModule(std::to_string(i), "MoeBlock", true));
    Leaf(t, block, "norm", "RMSNorm", Op(OpKind::kNorm, {{"dim", 64}}, "rmsnorm"), {64});
    int mlp = t.AddModule(block, MakeModule("mlp", "MoE"));
    Leaf(t, mlp, "gate", "Router", Op(OpKind::kRouter, {{"dim", 64}, {"experts", 8}, {"top_k", 2}}),
         {8, 64});
    Module experts = MakeModule("experts", "GroupedExperts");
    experts.op = Op(OpKind::kExperts,
                    {{"experts", 8}, {"top_k", 2}, {"dim", 64}, {"ffn", 128}, {"gated", 1}});
    for (const char* w : {"w1", "w2", "w3"}) {
      Param p = W({8, 128, 64}, w);
      p.layout = SourceLayout{{"ep", Placement::Shard(0)}};
      experts.params.push_back(p);
    }
    t.AddModule(mlp, std::move(experts));
  }
  Leaf(t, 0, "lm_head", "Linear", Op(OpKind::kLinear, {{"in", 64}, {"out", 512}}), {512, 64});
  return t;
}

// Scenario-like knobs for one test case.
struct Case {
  int world = 8;
  int dp_replicate = 1;
  int tp = 1;
  int cp = 1;
  int pp = 1;
  int ep = 1;
  FsdpConfig fsdp;
  ScheduleOptions options;
  // Fills the mesh-derived fields of `options` and returns the planning layout.
  MeshLayout Layout() {
    MeshLayout l;
    l.world_size = world;
    l.tp = tp;
    l.cp = cp;
    l.pp = pp;
    l.ep = ep;
    l.edp_shard = fsdp.edp_shard_size;
    const int dp = world / (tp * cp * pp);
    l.dp_shard = dp * cp / dp_replicate;
    fsdp.dp_shard_size = l.dp_shard;
    options.world_size = world;
    options.tp = tp;
    options.cp = cp;
    options.pp = pp;
    options.ep = ep;
    options.dp_replicate = dp_replicate;
    options.dp_shard = dp / dp_replicate;
    options.reshard_after_backward = fsdp.reshard_after_backward;
    options.requires_grad_sync = fsdp.requires_grad_sync;
    return l;
  }
};

// The builder tests' common job: batch 2 × 128 tokens, bf16 parameters, fp32 reduction.
inline Case MixedPrecisionCase() {
  Case s;
  s.options.local_batch = 2;
  s.options.seq_len = 128;
  s.fsdp.mix_precision.param_dtype = DType::kBFloat16;
  s.fsdp.mix_precision.reduce_dtype = DType::kFloat32;
  return s;
}

struct Built {
  ModelTree tree;
  Plan plan;
  Schedule schedule;
};

inline Built BuildTree(Case setup, ModelTree tree) {
  Built b;
  b.tree = std::move(tree);
  const MeshLayout layout = setup.Layout();
  Result<MeshContext> mesh = BuildMeshContext(layout);
  EXPECT_TRUE(mesh.ok()) << mesh.status().message();
  PlanOptions plan_options;
  plan_options.pp_virtual_stages = setup.options.pp_virtual_stages;
  Result<Plan> plan = BuildPlan(b.tree, *mesh, setup.fsdp, plan_options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  b.plan = *plan;
  Result<Schedule> s = BuildSchedule(b.tree, b.plan, setup.options);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (s.ok()) b.schedule = *s;
  return b;
}

inline Built BuildAll(Case setup, const TinyShape& shape = {}) {
  return BuildTree(std::move(setup), TinyLlama(shape));
}

// Index of the op after ops[i] on the same role and lane (issue order), or -1.
inline int NextOnLane(const Schedule& s, int i) {
  for (size_t j = static_cast<size_t>(i) + 1; j < s.ops.size(); ++j) {
    if (s.ops[j].role == s.ops[i].role && s.ops[j].lane == s.ops[i].lane) {
      return static_cast<int>(j);
    }
  }
  return -1;
}

}  // namespace shardscope::testing
