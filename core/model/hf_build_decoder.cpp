// Decoder-only families (llama, mistral, qwen2/3, qwen3_moe, mixtral, deepseek_v3, gemma2/3,
// gpt_oss) from a DecoderSpec. Child order inside each module is the order transformers 5.x
// registers them in, since pre-order FQN enumeration is part of the contract.
#include <string>
#include <utility>

#include "core/model/hf_build_util.h"
#include "core/model/hf_builder.h"
#include "core/model/hf_spec.h"

namespace shardscope {

Result<ModelTree> BuildMptTree(const nlohmann::json& config, const std::string& source,
                               const ModelBuildOptions& options);  // hf_build_mpt.cpp

namespace {

class DecoderBuilder {
 public:
  DecoderBuilder(const DecoderSpec& s, ModelTree& tree, const ModelBuildOptions& options)
      : s_(s), b_(tree, options) {}

  void Build() {
    ModelTree& t = b_.tree();
    t.identity = {s_.model_type, s_.architecture};
    t.root().class_name = s_.architecture;
    t.root().op = MakeOp(OpKind::kLoss, {{"vocab", s_.vocab}});
    const int model = b_.Plain(0, "model", s_.base_class, /*gc=*/true);
    const std::string tie_id = s_.tie_embeddings ? "model.embed_tokens.weight" : "";
    b_.Embedding(model, "embed_tokens", s_.embedding_class, s_.vocab, s_.hidden, tie_id);
    const int layers = b_.Plain(model, "layers", "ModuleList");
    for (int64_t i = 0; i < s_.layers; ++i) Layer(layers, i);
    b_.Norm(model, "norm", s_.norm_class, s_.hidden);
    b_.Plain(model, "rotary_emb", s_.rotary_class);
    const int head = b_.Linear(0, "lm_head", s_.hidden, s_.vocab, false, TpStyle::kColumn);
    t.modules[static_cast<size_t>(head)].params[0].id = tie_id;
  }

 private:
  void Layer(int layers, int64_t index) {
    const int layer = b_.Plain(layers, std::to_string(index), s_.layer_class, /*gc=*/true);
    if (s_.mla.enabled) {
      MlaAttention(layer, index);
    } else {
      Attention(layer, index);
    }
    const bool moe = !s_.moe.is_moe.empty() && s_.moe.is_moe[static_cast<size_t>(index)];
    if (moe) {
      Moe(layer);
    } else {
      Mlp(layer, "mlp", s_.mlp_class, s_.ffn, false);
    }
    b_.Norm(layer, "input_layernorm", s_.norm_class, s_.hidden);
    b_.Norm(layer, "post_attention_layernorm", s_.norm_class, s_.hidden);
    if (s_.sandwich_norms) {
      b_.Norm(layer, "pre_feedforward_layernorm", s_.norm_class, s_.hidden);
      b_.Norm(layer, "post_feedforward_layernorm", s_.norm_class, s_.hidden);
    }
  }

  OpDescriptor AttentionOp(int64_t index, int64_t head_dim, int64_t v_head_dim) const {
    std::map<std::string, int64_t> dims = {
        {"heads", s_.heads}, {"kv_heads", s_.kv_heads}, {"head_dim", head_dim}, {"causal", 1}};
    if (v_head_dim != head_dim) dims["v_head_dim"] = v_head_dim;
    const int64_t window = s_.window.empty() ? 0 : s_.window[static_cast<size_t>(index)];
    if (window > 0) dims["window"] = window;
    if (s_.sinks) dims["sinks"] = 1;
    return MakeOp(OpKind::kAttention, std::move(dims));
  }

  void Attention(int layer, int64_t index) {
    Module attn = MakeModule("self_attn", s_.attention_class);
    attn.op = AttentionOp(index, s_.head_dim, s_.head_dim);
    // gpt-oss: one learned sink logit per head, split with the heads under tp.
    if (s_.sinks) attn.params.push_back(b_.MakeParam("sinks", {s_.heads}, Placement::Shard(0)));
    const int a = b_.tree().AddModule(layer, std::move(attn));
    const int64_t q = s_.heads * s_.head_dim, kv = s_.kv_heads * s_.head_dim;
    b_.Linear(a, "q_proj", s_.hidden, q, s_.qkv_bias, TpStyle::kColumn);
    b_.Linear(a, "k_proj", s_.hidden, kv, s_.qkv_bias, TpStyle::kColumn, true);
    b_.Linear(a, "v_proj", s_.hidden, kv, s_.qkv_bias, TpStyle::kColumn, true);
    b_.Linear(a, "o_proj", q, s_.hidden, s_.o_bias, TpStyle::kRow, true);
    if (s_.qk_norm) {
      b_.HeadNorm(a, "q_norm", s_.norm_class, s_.head_dim, s_.heads);
      b_.HeadNorm(a, "k_norm", s_.norm_class, s_.head_dim, s_.kv_heads);
    }
  }

  // Multi-head latent attention (DeepSeek V2/V3). Low-rank down-projections are replicated
  // over tp (torchtitan's plan); the up-projections are column-wise, o_proj row-wise.
  void MlaAttention(int layer, int64_t index) {
    const MlaSpec& m = s_.mla;
    const int64_t qk_head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
    Module attn = MakeModule("self_attn", s_.attention_class);
    attn.op = AttentionOp(index, qk_head_dim, m.v_head_dim);
    const int a = b_.tree().AddModule(layer, std::move(attn));
    if (m.q_lora_rank > 0) {
      b_.Linear(a, "q_a_proj", s_.hidden, m.q_lora_rank, s_.qkv_bias, TpStyle::kReplicate);
      b_.Norm(a, "q_a_layernorm", s_.norm_class, m.q_lora_rank);
      b_.Linear(a, "q_b_proj", m.q_lora_rank, s_.heads * qk_head_dim, false, TpStyle::kColumn);
    } else {
      b_.Linear(a, "q_proj", s_.hidden, s_.heads * qk_head_dim, false, TpStyle::kColumn);
    }
    b_.Linear(a, "kv_a_proj_with_mqa", s_.hidden, m.kv_lora_rank + m.qk_rope_head_dim, s_.qkv_bias,
              TpStyle::kReplicate, /*shared_input=*/true);
    b_.Norm(a, "kv_a_layernorm", s_.norm_class, m.kv_lora_rank);
    b_.Linear(a, "kv_b_proj", m.kv_lora_rank, s_.heads * (m.qk_nope_head_dim + m.v_head_dim), false,
              TpStyle::kColumn);
    b_.Linear(a, "o_proj", s_.heads * m.v_head_dim, s_.hidden, s_.o_bias, TpStyle::kRow, true);
  }

  // A gated MLP: gate_proj, up_proj, down_proj, act_fn (transformers' order).
  void Mlp(int parent, const std::string& name, const std::string& class_name, int64_t ffn,
           bool input_shared) {
    const int mlp = b_.Plain(parent, name, class_name);
    b_.Linear(mlp, "gate_proj", s_.hidden, ffn, s_.mlp_bias, TpStyle::kColumn, input_shared);
    b_.Linear(mlp, "up_proj", s_.hidden, ffn, s_.mlp_bias, TpStyle::kColumn, true);
    b_.Linear(mlp, "down_proj", ffn, s_.hidden, s_.mlp_bias, TpStyle::kRow);
    b_.Activation(mlp, "act_fn", s_.act_class, s_.act_variant, ffn, true);
  }

  void Router(int block) {
    const MoeSpec& m = s_.moe;
    Module r = MakeModule(m.router_name, m.router_class);
    Param w = b_.MakeParam("weight", {m.experts, s_.hidden});
    if (m.router_fp32) w.dtype = DType::kFloat32;
    r.params.push_back(std::move(w));
    if (m.router_bias) r.params.push_back(b_.MakeParam("bias", {m.experts}));
    r.op =
        MakeOp(OpKind::kRouter, {{"dim", s_.hidden}, {"experts", m.experts}, {"top_k", m.top_k}});
    b_.tree().AddModule(block, std::move(r));
  }

  // Routed experts stacked on a leading experts dim (transformers 5.x fused layout).
  void Experts(int block) {
    const MoeSpec& m = s_.moe;
    Module e = MakeModule("experts", m.experts_class);
    const int64_t E = m.experts, d = s_.hidden, f = m.ffn;
    if (m.transposed_experts) {  // gpt-oss: [E, in, out]
      e.params.push_back(b_.MakeExpertParam("gate_up_proj", {E, d, 2 * f}, Placement::Shard(2)));
      e.params.push_back(b_.MakeExpertParam("gate_up_proj_bias", {E, 2 * f}, Placement::Shard(1)));
      e.params.push_back(b_.MakeExpertParam("down_proj", {E, f, d}, Placement::Shard(1)));
      e.params.push_back(b_.MakeExpertParam("down_proj_bias", {E, d}, Placement::Replicate()));
    } else {  // [E, out, in]
      e.params.push_back(b_.MakeExpertParam("gate_up_proj", {E, 2 * f, d}, Placement::Shard(1)));
      e.params.push_back(b_.MakeExpertParam("down_proj", {E, d, f}, Placement::Shard(2)));
    }
    e.op = MakeOp(OpKind::kExperts,
                  {{"experts", E}, {"top_k", m.top_k}, {"dim", d}, {"ffn", f}, {"gated", 1}});
    const int experts = b_.tree().AddModule(block, std::move(e));
    // The experts op covers the activation; its act_fn module carries no op of its own.
    if (m.experts_act_child) b_.Plain(experts, "act_fn", s_.act_class);
  }

  void Moe(int layer) {
    const MoeSpec& m = s_.moe;
    const int block = b_.Plain(layer, "mlp", m.block_class);
    if (m.gate_before_experts) {
      Router(block);
      Experts(block);
    } else {
      Experts(block);
      Router(block);
    }
    if (m.shared_ffn > 0) Mlp(block, "shared_experts", m.shared_class, m.shared_ffn, true);
  }

  const DecoderSpec& s_;
  TreeBuilder b_;
};

}  // namespace

Result<ModelTree> BuildModelFromHfConfig(const nlohmann::json& config, const std::string& source,
                                         const ModelBuildOptions& options) {
  if (options.tp < 1 || options.ep < 1) {
    return InvalidInput(source + ": tp and ep must be >= 1 (got tp=" + std::to_string(options.tp) +
                        ", ep=" + std::to_string(options.ep) + ")");
  }
  if (config.is_object() && config.value("model_type", nlohmann::json()) == "mpt") {
    SS_ASSIGN_OR_RETURN(ModelTree mpt, BuildMptTree(config, source, options));
    SS_RETURN_IF_ERROR(CheckTreeSize(mpt, source));
    return mpt;
  }
  SS_ASSIGN_OR_RETURN(DecoderSpec spec, ParseDecoderSpec(config, source));
  if (options.ep > 1 && spec.moe.experts > 0 && spec.moe.experts % options.ep != 0) {
    return InvalidInput(source + ": ep=" + std::to_string(options.ep) + " does not divide the " +
                        std::to_string(spec.moe.experts) + " routed experts");
  }
  // q_proj, k_proj and v_proj are column-sharded over tp (torchtitan's plan, which this builder
  // follows; it does not replicate KV heads as Megatron does), so tp splits both head counts.
  if (spec.heads % options.tp != 0) {
    return InvalidInput(source + ": tp=" + std::to_string(options.tp) +
                        " does not divide num_attention_heads (" + std::to_string(spec.heads) +
                        "): tensor parallelism gives each rank whole heads");
  }
  if (!spec.mla.enabled && spec.kv_heads % options.tp != 0) {
    return InvalidInput(source + ": tp=" + std::to_string(options.tp) +
                        " does not divide num_key_value_heads (" + std::to_string(spec.kv_heads) +
                        "): k_proj and v_proj are column-sharded over tp (KV heads are not "
                        "replicated), so tp may be at most the KV head count and must divide it");
  }
  ModelTree tree;
  DecoderBuilder(spec, tree, options).Build();
  SS_RETURN_IF_ERROR(CheckTreeSize(tree, source));
  tree.config = config;
  tree.config["model_type"] = spec.model_type;
  if (!tree.config.contains("architectures")) {
    tree.config["architectures"] = nlohmann::json::array({spec.architecture});
  }
  return tree;
}

}  // namespace shardscope
