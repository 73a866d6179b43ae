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

}  // namespace shardscope
