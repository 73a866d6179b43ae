#include "sim/engine/model_flops.h"

#include <set>
#include <string>
#include <utility>

namespace shardscope::sim {

ModelFlops ModelFlopsPerToken(const ModelTree& tree, int64_t seq_len) {
  ModelFlops f;
  std::set<std::string> seen_ids;
  std::set<int> seen_modules;
  for (const ModuleEntry& entry : EnumerateModules(tree)) {
    // A module registered twice holds the same tensors: count it once.
    if (!seen_modules.insert(entry.module).second) continue;
    const Module& m = tree.modules[entry.module];
    const bool embedding = m.op && m.op->kind == OpKind::kEmbedding;
    double share = 1.0;
    if (m.op && m.op->kind == OpKind::kExperts) {
      const int64_t experts = m.op->dim("experts");
      const int64_t top_k = m.op->dim("top_k");
      if (experts > 0 && top_k > 0)
        share = static_cast<double>(top_k) / static_cast<double>(experts);
    }
    if (m.op && m.op->kind == OpKind::kAttention) {
      const int64_t heads = m.op->dim("heads");
      const int64_t head_dim = m.op->dim("head_dim");
      f.attention_width += static_cast<double>(heads) * static_cast<double>(head_dim);
      ++f.attention_layers;
    }
    for (const Param& p : m.params) {
      if (!p.id.empty() && !seen_ids.insert(p.id).second) continue;
      const double n = static_cast<double>(NumElements(p.shape));
      if (embedding) {
        f.embedding_params += n;
      } else {
        f.params_non_embedding += n * share;
      }
    }
  }
  f.flops_per_token =
      6.0 * f.params_non_embedding + 12.0 * f.attention_width * static_cast<double>(seq_len);
  return f;
}

}  // namespace shardscope::sim
