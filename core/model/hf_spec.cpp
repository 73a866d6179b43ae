#include "core/model/hf_spec.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/model/hf_config_reader.h"

// Class names, child order and defaults follow transformers 5.x (the modeling_*.py and
// configuration_*.py of each family); tests/fixtures/trees/ holds trees exported from it.
namespace shardscope {
namespace {

// Every layer is a handful of tree nodes; real models have at most a few hundred.
constexpr int64_t kMaxLayers = 1024;

struct Family {
  const char* model_type;
  const char* prefix;        // class-name prefix, e.g. "Llama"
  int64_t default_head_dim;  // 0: hidden_size / num_attention_heads
  bool default_tie;
};

constexpr std::array<Family, 10> kFamilies = {{
    {"deepseek_v3", "DeepseekV3", 0, false},
    {"gemma2", "Gemma2", 256, true},
    {"gemma3_text", "Gemma3", 256, true},
    {"gpt_oss", "GptOss", 64, false},
    {"llama", "Llama", 0, false},
    {"mistral", "Mistral", 0, false},
    {"mixtral", "Mixtral", 0, false},
    {"qwen2", "Qwen2", 0, false},
    {"qwen3", "Qwen3", 128, false},
    {"qwen3_moe", "Qwen3Moe", 0, false},
}};

// transformers' ACT2FN: config name → (module class, descriptor variant).
Result<std::pair<std::string, std::string>> Activation(const ConfigReader& r, const char* key,
                                                       const std::string& fallback) {
  SS_ASSIGN_OR_RETURN(std::string act, r.StringOr(key, fallback));
  if (act == "silu") return std::make_pair(std::string("SiLUActivation"), std::string("silu"));
  if (act == "swish") return std::make_pair(std::string("SiLU"), std::string("silu"));
  if (act == "gelu") return std::make_pair(std::string("GELUActivation"), std::string("gelu"));
  if (act == "gelu_pytorch_tanh") {
    return std::make_pair(std::string("GELUTanh"), std::string("gelu_tanh"));
  }
  if (act == "gelu_new") {
    return std::make_pair(std::string("NewGELUActivation"), std::string("gelu_tanh"));
  }
  if (act == "relu") return std::make_pair(std::string("ReLU"), std::string("relu"));
  return r.Error(key, "unsupported activation '" + act +
                          "' (expected silu, swish, gelu, gelu_pytorch_tanh, gelu_new or relu)");
}

// Per-layer sliding windows: `layer_types` when given, else the family's default pattern.
Result<std::vector<int64_t>> Windows(const ConfigReader& r, const std::string& type,
                                     int64_t layers) {
  std::vector<int64_t> window(static_cast<size_t>(layers), 0);
  SS_ASSIGN_OR_RETURN(int64_t sliding, r.IntOr("sliding_window", 0));
  SS_ASSIGN_OR_RETURN(std::vector<std::string> types, r.StringList("layer_types"));
  if (!types.empty()) {
    if (static_cast<int64_t>(types.size()) != layers) {
      return r.Error("layer_types", "expected " + std::to_string(layers) +
                                        " entries (num_hidden_layers), found " +
                                        std::to_string(types.size()));
    }
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] == "sliding_attention") {
        window[i] = sliding;
      } else if (types[i] != "full_attention") {
        return r.Error("layer_types", "unknown entry '" + types[i] +
                                          "' (expected sliding_attention or full_attention)");
      }
    }
    return window;
  }
  for (int64_t i = 0; i < layers; ++i) {
    bool slides = false;
    if (type == "mistral" || type == "mixtral") slides = sliding > 0;
    if (type == "gemma2" || type == "gpt_oss") slides = (i + 1) % 2 != 0;
    if (type == "gemma3_text") {
      SS_ASSIGN_OR_RETURN(int64_t pattern, r.IntOr("sliding_window_pattern", 6, 1));
      slides = (i + 1) % pattern != 0;
    }
    if (type == "qwen2" || type == "qwen3" || type == "qwen3_moe") {
      SS_ASSIGN_OR_RETURN(bool use, r.BoolOr("use_sliding_window", false));
      SS_ASSIGN_OR_RETURN(int64_t from, r.IntOr("max_window_layers", layers));
      slides = use && i >= from;
    }
    if (slides) window[static_cast<size_t>(i)] = sliding;
  }
  return window;
}

Status ParseMoe(const ConfigReader& r, DecoderSpec& s) {
  MoeSpec& m = s.moe;
  const std::string& t = s.model_type;
  SS_ASSIGN_OR_RETURN(m.top_k, r.Int("num_experts_per_tok"));
  m.is_moe.assign(static_cast<size_t>(s.layers), true);
  if (t == "mixtral" || t == "gpt_oss") {
    SS_ASSIGN_OR_RETURN(m.experts, r.Int("num_local_experts"));
    m.ffn = s.ffn;
  } else if (t == "qwen3_moe") {
    SS_ASSIGN_OR_RETURN(m.experts, r.Int("num_experts", 0));
    SS_ASSIGN_OR_RETURN(m.ffn, r.Int("moe_intermediate_size"));
    SS_ASSIGN_OR_RETURN(int64_t step, r.IntOr("decoder_sparse_step", 1, 1));
    SS_ASSIGN_OR_RETURN(std::vector<int64_t> dense_only, r.IntList("mlp_only_layers"));
    for (int64_t i = 0; i < s.layers; ++i) {
      const bool listed = std::find(dense_only.begin(), dense_only.end(), i) != dense_only.end();
      m.is_moe[static_cast<size_t>(i)] = !listed && m.experts > 0 && (i + 1) % step == 0;
    }
  } else {  // deepseek_v3
    SS_ASSIGN_OR_RETURN(m.experts, r.Has("n_routed_experts") ? r.Int("n_routed_experts")
                                                             : r.Int("num_local_experts"));
    SS_ASSIGN_OR_RETURN(m.ffn, r.Int("moe_intermediate_size"));
    SS_ASSIGN_OR_RETURN(int64_t shared, r.IntOr("n_shared_experts", 0));
    m.shared_ffn = shared * m.ffn;
    SS_ASSIGN_OR_RETURN(int64_t first_dense, r.IntOr("first_k_dense_replace", 0));
    for (int64_t i = 0; i < s.layers; ++i) m.is_moe[static_cast<size_t>(i)] = i >= first_dense;
  }
  if (m.top_k > m.experts && m.experts > 0) {
    return r.Error("num_experts_per_tok", "expected at most the number of experts (" +
                                              std::to_string(m.experts) + "), got " +
                                              std::to_string(m.top_k));
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> SupportedModelTypes() {
  std::vector<std::string> out;
  for (const Family& f : kFamilies) out.emplace_back(f.model_type);
  out.emplace_back("mpt");
  std::sort(out.begin(), out.end());
  return out;
}

Result<DecoderSpec> ParseDecoderSpec(const nlohmann::json& config, const std::string& source) {
  if (!config.is_object()) return InvalidInput(source + ": expected a JSON object (config.json)");
  ConfigReader r(config, source);
  SS_ASSIGN_OR_RETURN(std::string type, r.StringOr("model_type", ""));
  const Family* family = nullptr;
  for (const Family& f : kFamilies) {
    if (type == f.model_type) family = &f;
  }
  if (family == nullptr) {
    std::string list;
    for (const std::string& t : SupportedModelTypes()) list += (list.empty() ? "" : ", ") + t;
    return InvalidInput(source + ": model_type: " +
                        (type.empty() ? std::string("missing") : "unsupported '" + type + "'") +
                        " (built-in builders: " + list +
                        "; for another model export its module tree with "
                        "tools/export_module_tree.py and pass the tree file)");
  }
  DecoderSpec s;
  s.model_type = type;
  const std::string p = family->prefix;
  s.architecture = p + "ForCausalLM";
  s.base_class = p + "Model";
  if (type == "gemma3_text") s.base_class = "Gemma3TextModel";
  s.layer_class = p + "DecoderLayer";
  s.attention_class = p + "Attention";
  s.mlp_class = p + "MLP";
  s.norm_class = p + "RMSNorm";
  s.rotary_class = p + "RotaryEmbedding";
  if (type == "gemma2" || type == "gemma3_text") {
    s.embedding_class =
        (type == "gemma2" ? "Gemma2" : "Gemma3") + std::string("TextScaledWordEmbedding");
    s.sandwich_norms = true;
  }
  SS_ASSIGN_OR_RETURN(s.vocab, r.Int("vocab_size"));
  SS_ASSIGN_OR_RETURN(s.hidden, r.Int("hidden_size"));
  SS_ASSIGN_OR_RETURN(s.layers, r.Int("num_hidden_layers", 1, kMaxLayers));
  SS_ASSIGN_OR_RETURN(s.heads, r.Int("num_attention_heads"));
  SS_ASSIGN_OR_RETURN(s.kv_heads, r.IntOr("num_key_value_heads", s.heads, 1));
  SS_ASSIGN_OR_RETURN(s.ffn, r.Int("intermediate_size"));
  if (s.heads % s.kv_heads != 0) {
    return r.Error("num_key_value_heads", "expected a divisor of num_attention_heads (" +
                                              std::to_string(s.heads) + "), got " +
                                              std::to_string(s.kv_heads));
  }
  if (family->default_head_dim == 0 && s.hidden < s.heads) {
    // head_dim would be hidden_size / heads = 0: every attention projection an empty matrix.
    return r.Error("hidden_size", "expected at least num_attention_heads (" +
                                      std::to_string(s.heads) + "), got " +
                                      std::to_string(s.hidden));
  }
  const int64_t default_head_dim =
      family->default_head_dim ? family->default_head_dim : s.hidden / s.heads;
  SS_ASSIGN_OR_RETURN(s.head_dim, r.IntOr("head_dim", default_head_dim, 1));
  SS_ASSIGN_OR_RETURN(s.tie_embeddings, r.BoolOr("tie_word_embeddings", family->default_tie));
  const bool gemma = type == "gemma2" || type == "gemma3_text";
  const char* act_key = gemma && r.Has("hidden_activation") ? "hidden_activation" : "hidden_act";
  SS_ASSIGN_OR_RETURN(auto act, Activation(r, act_key, gemma ? "gelu_pytorch_tanh" : "silu"));
  s.act_class = act.first;
  s.act_variant = act.second;
  SS_ASSIGN_OR_RETURN(bool attention_bias, r.BoolOr("attention_bias", type == "gpt_oss"));
  if (type == "llama" || type == "qwen3" || type == "qwen3_moe" || gemma || type == "gpt_oss" ||
      type == "deepseek_v3") {
    s.qkv_bias = s.o_bias = attention_bias;
  }
  if (type == "qwen2") s.qkv_bias = true;
  if (type == "llama") {
    SS_ASSIGN_OR_RETURN(s.mlp_bias, r.BoolOr("mlp_bias", false));
  }
  s.qk_norm = type == "qwen3" || type == "qwen3_moe" || type == "gemma3_text";
  s.sinks = type == "gpt_oss";
  SS_ASSIGN_OR_RETURN(s.window, Windows(r, type, s.layers));

  if (type == "qwen3_moe" || type == "mixtral" || type == "deepseek_v3" || type == "gpt_oss") {
    SS_RETURN_IF_ERROR(ParseMoe(r, s));
    MoeSpec& m = s.moe;
    m.experts_class = p + "Experts";
    m.router_class = p + "TopKRouter";
    m.block_class = p + "SparseMoeBlock";
    if (type == "qwen3_moe") m.gate_before_experts = false;
    if (type == "deepseek_v3") {
      m.block_class = "DeepseekV3MoE";
      m.router_class = "DeepseekV3TopkRouter";
      m.shared_class = "DeepseekV3MLP";
      m.gate_before_experts = false;
      m.router_fp32 = true;
    }
    if (type == "gpt_oss") {
      m.block_class = "GptOssMLP";
      m.router_name = "router";
      m.router_bias = m.expert_bias = true;
      m.experts_act_child = false;
      m.transposed_experts = true;
    }
  }
  if (type == "deepseek_v3") {
    MlaSpec& mla = s.mla;
    mla.enabled = true;
    SS_ASSIGN_OR_RETURN(mla.q_lora_rank, r.IntOr("q_lora_rank", 0));
    SS_ASSIGN_OR_RETURN(mla.kv_lora_rank, r.Int("kv_lora_rank"));
    SS_ASSIGN_OR_RETURN(mla.qk_nope_head_dim, r.Int("qk_nope_head_dim"));
    SS_ASSIGN_OR_RETURN(mla.qk_rope_head_dim, r.Int("qk_rope_head_dim"));
    SS_ASSIGN_OR_RETURN(mla.v_head_dim, r.Int("v_head_dim"));
    s.head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
    s.kv_heads = s.heads;  // kv_b_proj expands the latent to every head
  }
  return s;
}

}  // namespace shardscope
