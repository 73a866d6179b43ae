// A decoder-only transformer as the builders see it: every family's config.json reduced to the
// figures and class names that decide the module tree transformers builds.
//
// Contents:
//   MoeSpec, MlaSpec   the optional mixture-of-experts and multi-head latent attention parts
//   DecoderSpec        one family-independent description of the model
//   ParseDecoderSpec   config.json → DecoderSpec for the supported model_types
//   SupportedModelTypes the model_types ParseDecoderSpec accepts, sorted
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace shardscope {

struct MoeSpec {
  int64_t experts = 0;  // routed experts (0: no MoE layers)
  int64_t top_k = 0;
  int64_t ffn = 0;                  // intermediate size of one routed expert
  int64_t shared_ffn = 0;           // intermediate size of the shared-experts MLP (0: none)
  std::vector<bool> is_moe;         // per layer: routed experts, else a dense MLP
  bool router_bias = false;         // gpt-oss
  bool expert_bias = false;         // gpt-oss: gate_up_proj_bias, down_proj_bias
  bool router_fp32 = false;         // deepseek keeps gate.weight in float32
  bool gate_before_experts = true;  // child order inside the MoE block
  bool experts_act_child = true;    // the experts module owns an act_fn submodule
  bool transposed_experts = false;  // gpt-oss stores [E, in, out] instead of [E, out, in]
  std::string block_class, router_class, experts_class, router_name = "gate";
  std::string shared_class;  // class of shared_experts (an MLP)
};

struct MlaSpec {
  bool enabled = false;
  int64_t q_lora_rank = 0;  // 0: a plain q_proj
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

struct DecoderSpec {
  std::string model_type;
  std::string architecture;  // e.g. LlamaForCausalLM
  std::string base_class;    // e.g. LlamaModel
  std::string layer_class, attention_class, mlp_class, norm_class, rotary_class;
  std::string embedding_class = "Embedding";
  std::string act_class;    // e.g. SiLUActivation; empty: the MLP has no act_fn child
  std::string act_variant;  // descriptor variant: silu | gelu_tanh | gelu
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0;
  bool tie_embeddings = false;
  bool qkv_bias = false;  // bias on q/k/v projections
  bool o_bias = false;    // bias on the output projection
  bool mlp_bias = false;
  bool qk_norm = false;         // q_norm / k_norm over head_dim (qwen3, gemma3)
  bool sandwich_norms = false;  // gemma: pre_/post_feedforward_layernorm
  bool sinks = false;           // gpt-oss attention sinks parameter
  std::vector<int64_t> window;  // per layer: sliding window length, 0 = full attention
  MoeSpec moe;
  MlaSpec mla;
};

// Reads the figures of one of SupportedModelTypes(); an unknown model_type is an error that
// lists them and points at tools/export_module_tree.py. `source` prefixes errors.
Result<DecoderSpec> ParseDecoderSpec(const nlohmann::json& config, const std::string& source);

// All model_types the builders accept (decoder families and mpt), sorted.
std::vector<std::string> SupportedModelTypes();

}  // namespace shardscope
