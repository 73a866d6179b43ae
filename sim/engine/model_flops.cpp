#include "sim/engine/model_flops.h"

#include <string_view>
#include <unordered_set>
#include <vector>

namespace shardscope::sim {

ModelFlops ModelFlopsPerToken(const ModelTree& tree, int64_t seq_len) {
  ModelFlops f;
  std::unordered_set<std::string_view> seen_ids;
  // Each module once, in EnumerateModules' pre-order (the sums below keep their order), without
  // the FQNs an enumeration builds: a module registered twice holds the same tensors.
  std::vector<char> seen(tree.modules.size(), 0);
  std::vector<int> stack = {0};
  while (!stack.empty()) {
    const int module = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(module)]) continue;
    seen[static_cast<size_t>(module)] = 1;
    const Module& m = tree.modules[static_cast<size_t>(module)];
    stack.insert(stack.end(), m.children.rbegin(), m.children.rend());
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
