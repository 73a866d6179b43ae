// The model-FLOPs convention behind tokens/s → TFLOP/s → MFU (formats.md §2), from the tree.
//
// Contents:
//   ModelFlops            the figures of the convention for one model and sequence length
//   ModelFlopsPerToken    6·N + 12·Σ_attention(heads·head_dim)·seq
//
// N counts every parameter once (tied ones once) except embeddings (modules whose op is an
// embedding: token and learned position embeddings). Routed experts count at top_k/experts of
// their parameters (the active share per token), as torchtitan does for MoE models. The
// attention term sums heads·head_dim over attention modules, which is layers·hidden for a
// standard decoder; causal masking is not discounted (the usual convention).
#pragma once

#include <cstdint>

#include "core/model/tree.h"

namespace shardscope::sim {

struct ModelFlops {
  double params_non_embedding = 0;  // N (active)
  double embedding_params = 0;
  int attention_layers = 0;
  double attention_width = 0;  // Σ heads·head_dim over attention modules
  double flops_per_token = 0;  // 6·N + 12·attention_width·seq
};

ModelFlops ModelFlopsPerToken(const ModelTree& tree, int64_t seq_len);

}  // namespace shardscope::sim
