// Small model trees, meshes and configs for the planner tests.
//
// Contents:
//   TreeBuilder     adds modules and parameters by parent index
//   LlamaLike       model.{embed_tokens, layers.<i>.{attn.{q,o}, mlp.{up,down}, norm}, norm},
//   lm_head Mesh            MeshContext for (W, dp_shard, tp, cp, ep, edp_shard, loss_parallel)
//   Config          FsdpConfig whose sizes match a MeshContext
//   PlanOf          BuildPlan, failing the test on error
//   ErrorOf         the message of a BuildPlan error (fails the test when it succeeds)
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/plan/planner.h"

namespace shardscope::testing_util {

struct TreeBuilder {
  ModelTree tree;

  int Add(int parent, const std::string& name, const std::string& cls = "Module",
          bool gradient_checkpointing = false) {
    return tree.AddModule(parent, MakeModule(name, cls, gradient_checkpointing));
  }
  Param& P(int module, const std::string& name, std::vector<int64_t> shape,
           DType dtype = DType::kFloat32, const std::string& id = "") {
    Param p;
    p.name = name;
    p.shape = std::move(shape);
    p.dtype = dtype;
    p.id = id;
    auto& params = tree.modules[static_cast<size_t>(module)].params;
    params.push_back(std::move(p));
    return params.back();
  }
};

// A decoder with `layers` blocks under a `gradient_checkpointing` model; tied embeddings when
// `tied`. Hidden h, vocab v.
inline ModelTree LlamaLike(int layers, bool tied = false, int64_t h = 64, int64_t v = 256) {
  TreeBuilder b;
  b.tree.root().class_name = "LlamaForCausalLM";
  b.tree.identity = {"llama", "LlamaForCausalLM"};
  const int model = b.Add(0, "model", "LlamaModel", true);
  const int emb = b.Add(model, "embed_tokens", "Embedding");
  b.P(emb, "weight", {v, h}, DType::kFloat32, tied ? "emb" : "");
  const int list = b.Add(model, "layers", "ModuleList");
  for (int i = 0; i < layers; ++i) {
    const int l = b.Add(list, std::to_string(i), "LlamaDecoderLayer");
    const int attn = b.Add(l, "self_attn", "LlamaAttention");
    b.P(b.Add(attn, "q_proj", "Linear"), "weight", {h, h});
    b.P(b.Add(attn, "o_proj", "Linear"), "weight", {h, h});
    const int mlp = b.Add(l, "mlp", "LlamaMLP");
    b.P(b.Add(mlp, "up_proj", "Linear"), "weight", {4 * h, h});
    b.P(b.Add(mlp, "down_proj", "Linear"), "weight", {h, 4 * h});
    b.P(b.Add(l, "input_layernorm", "LlamaRMSNorm"), "weight", {h});
  }
  b.P(b.Add(model, "norm", "LlamaRMSNorm"), "weight", {h});
  b.P(b.Add(0, "lm_head", "Linear"), "weight", {v, h}, DType::kFloat32, tied ? "emb" : "");
  return b.tree;
}

inline MeshContext Mesh(int world, int dp_shard, int tp = 1, int cp = 1, int ep = 1,
                        int edp_shard = 1, bool loss_parallel = false) {
  MeshLayout l;
  l.world_size = world;
  l.dp_shard = dp_shard;
  l.tp = tp;
  l.cp = cp;
  l.ep = ep;
  l.edp_shard = edp_shard;
  l.loss_parallel = loss_parallel;
  Result<MeshContext> m = BuildMeshContext(l);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : MeshContext();
}

inline FsdpConfig Config(const MeshContext& mesh) {
  FsdpConfig c;
  c.dp_shard_size = mesh.layout.dp_shard;
  c.edp_shard_size = mesh.layout.edp_shard;
  return c;
}

inline Plan PlanOf(const ModelTree& tree, const MeshContext& mesh, const FsdpConfig& config,
                   const PlanOptions& options = {}) {
  Result<Plan> p = BuildPlan(tree, mesh, config, options);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? std::move(p).value() : Plan();
}

inline std::string ErrorOf(const ModelTree& tree, const MeshContext& mesh, const FsdpConfig& config,
                           const PlanOptions& options = {}) {
  Result<Plan> p = BuildPlan(tree, mesh, config, options);
  EXPECT_FALSE(p.ok());
  if (p.ok()) return "";
  EXPECT_EQ(p.status().code(), ErrorCode::kInvalidInput);
  return p.status().message();
}

// Unit FQNs in wrapping order (root as "").
inline std::vector<std::string> WrapOrder(const Plan& plan) {
  std::vector<std::string> out;
  for (const UnitPlan& u : plan.units) out.push_back(u.fqn);
  return out;
}

inline std::vector<std::string> ExecOrder(const Plan& plan) {
  std::vector<std::string> out;
  for (int i : plan.execution_order) out.push_back(plan.units[static_cast<size_t>(i)].fqn);
  return out;
}

inline const UnitPlan& Unit(const Plan& plan, const std::string& fqn) {
  const int i = plan.FindUnit(fqn);
  EXPECT_GE(i, 0) << "no unit " << fqn;
  return plan.units[static_cast<size_t>(i < 0 ? static_cast<int>(plan.units.size()) - 1 : i)];
}

inline std::vector<std::string> ParamFqns(const std::vector<ParamPlan>& params) {
  std::vector<std::string> out;
  for (const ParamPlan& p : params) out.push_back(p.fqn);
  return out;
}

inline int CountWarnings(const Plan& plan, const std::string& code) {
  int n = 0;
  for (const PlanWarning& w : plan.warnings) n += w.code == code;
  return n;
}

}  // namespace shardscope::testing_util
