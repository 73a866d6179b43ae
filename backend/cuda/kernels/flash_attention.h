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
// Layouts are kernel_args.h's AttentionArgs (dense, row-major): q [batch][heads][q_seq]
// [head_dim], k [batch][kv_heads][kv_seq][head_dim], v [batch][kv_heads][kv_seq][v_head_dim],
// out like q with v_head_dim, lse [batch][heads][q_seq] (natural log of Σ exp(scale · q·k),
// −inf for a row that sees no key). bf16 tensors only; every tensor 16-byte aligned.
//
// Contents:
//   ValidateAttention                    what the kernels support, as InvalidInput
//   FlashAttentionForward                out, lse
//   FlashAttentionBackwardWorkspaceBytes fp32 scratch the backward needs
//   FlashAttentionBackward               d_q, d_k, d_v from out, lse, d_out
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/device/kernel_args.h"
#include "core/util/status.h"

namespace shardscope::backend::cuda {

// kv_heads dividing heads, 1 <= q_seq <= kv_seq, head dims multiples of 16 in [16, 256],
// batch and heads at most 65535, dtype bfloat16.
Status ValidateAttention(const AttentionArgs& args);
float SoftmaxScale(const AttentionArgs& args);  // args.scale, or 1 / sqrt(head_dim)

Status FlashAttentionForward(const AttentionArgs& args, cudaStream_t stream);

int64_t FlashAttentionBackwardWorkspaceBytes(const AttentionArgs& args);

// `workspace` holds FlashAttentionBackwardWorkspaceBytes(args) bytes (the fp32 d_q
// accumulator and the rows' Σ d_out · out), used until the stream passes this call.
Status FlashAttentionBackward(const AttentionArgs& args, void* workspace, cudaStream_t stream);

}  // namespace shardscope::backend::cuda
