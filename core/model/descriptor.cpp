#include "core/model/descriptor.h"

#include <array>
#include <utility>

namespace shardscope {
namespace {
constexpr std::array<std::pair<OpKind, std::string_view>, 8> kNames = {{
    {OpKind::kLinear, "linear"},
    {OpKind::kEmbedding, "embedding"},
    {OpKind::kNorm, "norm"},
    {OpKind::kActivation, "activation"},
    {OpKind::kAttention, "attention"},
    {OpKind::kRouter, "router"},
    {OpKind::kExperts, "experts"},
    {OpKind::kLoss, "loss"},
}};
}  // namespace

std::string_view OpKindName(OpKind kind) {
  for (const auto& [k, name] : kNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

Result<OpKind> ParseOpKind(std::string_view name, std::string_view what) {
  for (const auto& [k, n] : kNames) {
    if (n == name) return k;
  }
  return InvalidInput(std::string(what) + ": unknown op kind '" + std::string(name) +
                      "' (expected linear, embedding, norm, activation, attention, router, "
                      "experts or loss)");
}

const std::vector<std::string_view>& OpDimKeys(OpKind kind) {
  static const std::vector<std::string_view> kLinear = {"in", "out", "bias", "shared_input"};
  static const std::vector<std::string_view> kEmbedding = {"vocab", "dim"};
  static const std::vector<std::string_view> kNorm = {"dim", "heads"};
  static const std::vector<std::string_view> kActivation = {"dim", "gated"};
  static const std::vector<std::string_view> kAttention = {
      "heads", "kv_heads", "head_dim", "v_head_dim", "causal", "window", "sinks"};
  static const std::vector<std::string_view> kRouter = {"dim", "experts", "top_k", "shared_input"};
  static const std::vector<std::string_view> kExperts = {"experts", "top_k", "dim", "ffn", "gated"};
  static const std::vector<std::string_view> kLoss = {"vocab"};
  switch (kind) {
    case OpKind::kLinear:
      return kLinear;
    case OpKind::kEmbedding:
      return kEmbedding;
    case OpKind::kNorm:
      return kNorm;
    case OpKind::kActivation:
      return kActivation;
    case OpKind::kAttention:
      return kAttention;
    case OpKind::kRouter:
      return kRouter;
    case OpKind::kExperts:
      return kExperts;
    case OpKind::kLoss:
      return kLoss;
  }
  return kLoss;
}

const std::vector<std::string_view>& OpVariants(OpKind kind) {
  static const std::vector<std::string_view> kNone = {};
  static const std::vector<std::string_view> kNorm = {"rmsnorm", "layernorm"};
  static const std::vector<std::string_view> kActivation = {"silu", "gelu", "gelu_tanh", "relu"};
  static const std::vector<std::string_view> kLinear = {"column", "row"};
  static const std::vector<std::string_view> kEmbedding = {"vocab"};
  if (kind == OpKind::kLinear) return kLinear;
  if (kind == OpKind::kEmbedding) return kEmbedding;
  if (kind == OpKind::kNorm) return kNorm;
  if (kind == OpKind::kActivation) return kActivation;
  return kNone;
}

}  // namespace shardscope
