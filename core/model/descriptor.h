// What a module computes, in the terms the cost model needs (issue: model zoo).
//
// Contents:
//   OpKind         linear, embedding, norm, activation, attention, router, experts, loss
//   OpDescriptor   kind + variant + named integer dimensions (global, before TP/EP)
//   OpKindName / ParseOpKind
//   OpDimKeys / OpVariants   the dimension keys and variants each kind accepts (the table below)
//
// A descriptor hangs on a module (`Module::op`). Leaves carry the op they run; an attention
// module also carries the attention core (a function call, not a module) as its own op, beside
// its projection children. Dimensions are global (unsharded); the estimator divides by tp/ep.
//
// Keys by kind (missing keys read as 0):
//   linear      in, out, bias (0/1), shared_input (0/1)
//                                                     variant: column | row (tensor parallel style;
//                                                     empty = replicated over tp)
//   embedding   vocab, dim                            variant: vocab (vocab-parallel under tp)
//   norm        dim, heads (vectors of `dim` normalised per token, 0 = 1: a per-head norm such
//               as Qwen3's q_norm / k_norm over [tokens, heads, head_dim]; split over tp)
//                                                     variant: rmsnorm | layernorm
//   activation  dim, gated (0/1: SwiGLU-style product of two branches)
//                                                     variant: silu | gelu | gelu_tanh | relu
//   attention   heads, kv_heads, head_dim, v_head_dim (0 = head_dim), causal (0/1),
//               window (sliding-window length, 0 = full), sinks (0/1)
//   router      dim, experts, top_k, shared_input (0/1)
//   experts     experts, top_k, dim, ffn, gated (0/1)  (routed experts as a grouped GEMM)
//   loss        vocab                                 (cross-entropy over the logits)
//
// shared_input = 1: the op's input tensor is already saved for backward by another op (k_proj
// after q_proj read the same normed hidden state; o_proj reads the attention output that the
// attention core saves), so saving it again costs no memory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace shardscope {

enum class OpKind { kLinear, kEmbedding, kNorm, kActivation, kAttention, kRouter, kExperts, kLoss };

struct OpDescriptor {
  OpKind kind = OpKind::kLinear;
  std::string variant;                  // see the table above; empty when the kind has none
  std::map<std::string, int64_t> dims;  // see the table above

  // The dimension `key`, or `fallback` when absent.
  int64_t dim(std::string_view key, int64_t fallback = 0) const {
    auto it = dims.find(std::string(key));
    return it == dims.end() ? fallback : it->second;
  }
  bool operator==(const OpDescriptor&) const = default;
};

std::string_view OpKindName(OpKind kind);
// `what` names the field for the error message (e.g. "tree.json: root.children[0].op.kind").
Result<OpKind> ParseOpKind(std::string_view name, std::string_view what);

// The dimension keys `kind` accepts, in the order of the table above.
const std::vector<std::string_view>& OpDimKeys(OpKind kind);
// The variants `kind` accepts; empty when the kind has none (the variant must then be empty).
const std::vector<std::string_view>& OpVariants(OpKind kind);

}  // namespace shardscope
