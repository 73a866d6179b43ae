// Fused attention of our own (FlashAttention-2's algorithm on WMMA tensor cores): bf16 in,
// fp32 scores, softmax and accumulation, causal, sliding window, grouped-query heads, query
// and key lengths that differ (context-parallel shards: the queries are the last q_seq
// positions of the kv_seq keys, FlashAttention's bottom-right alignment).
//
// Why our own and not cuDNN's SDPA: this backend must be right before it first runs on a
// GPU; a kernel whose every step a host reference checks (tests/backend_gpu) is reviewable
// line by line, while cuDNN's backend descriptors fail only at run time, on the device, and
// the C++ frontend that tames them is not in the toolkit (a fresh GPU machine has no network
// to fetch it).
//
// Layouts (dense, row-major): q [batch][q_seq][heads][head_dim], k [batch][kv_seq][kv_heads]
// [head_dim], v [batch][kv_seq][kv_heads][v_head_dim], o like q with v_head_dim, lse
// [batch][heads][q_seq] (natural log of Σ exp(scale · q·k), −inf for a row that sees no key).
//
// Contents:
//   AttentionShape                      the problem; Validate names what is unsupported
//   FlashAttentionForward               o, lse
//   FlashAttentionBackwardWorkspaceBytes  fp32 scratch the backward needs
//   FlashAttentionBackward              dq, dk, dv from o, lse, do
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/util/status.h"

namespace shardscope::backend::cuda {

struct AttentionShape {
  int64_t batch = 1;
  int64_t heads = 1, kv_heads = 1;  // heads a multiple of kv_heads (GQA)
  int64_t q_seq = 1, kv_seq = 1;    // q_seq <= kv_seq
  int64_t head_dim = 128, v_head_dim = 128;  // multiples of 16, at most 256
  int64_t window = 0;                        // keys within `window` positions (0: all)
  bool causal = true;
  float scale = 0.0f;  // softmax scale; 0: 1 / sqrt(head_dim)
  Status Validate() const;
  float softmax_scale() const;
};

Status FlashAttentionForward(const __nv_bfloat16* q, const __nv_bfloat16* k,
                             const __nv_bfloat16* v, __nv_bfloat16* o, float* lse,
                             const AttentionShape& shape, cudaStream_t stream);

int64_t FlashAttentionBackwardWorkspaceBytes(const AttentionShape& shape);

// `workspace` holds FlashAttentionBackwardWorkspaceBytes(shape) bytes (fp32 dq accumulator
// and the rows' Σ do·o).
Status FlashAttentionBackward(const __nv_bfloat16* q, const __nv_bfloat16* k,
                              const __nv_bfloat16* v, const __nv_bfloat16* o, const float* lse,
                              const __nv_bfloat16* dout, __nv_bfloat16* dq, __nv_bfloat16* dk,
                              __nv_bfloat16* dv, void* workspace, const AttentionShape& shape,
                              cudaStream_t stream);

}  // namespace shardscope::backend::cuda
