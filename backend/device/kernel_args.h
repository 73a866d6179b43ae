// The arguments of the kernels a Device runs (device.h): each names real buffers of the
// device (pointers it handed out) at the schedule's shapes. Row-major, contiguous unless a
// stride says otherwise; element types are DTypes (core/model/dtype.h).
//
// Contents:
//   GemmArgs       out[m×n] = alpha · op(a)[m×k] · op(b)[k×n] + beta · out, `batch` of them
//   AttentionArgs  fused scaled-dot-product attention, forward and backward (GQA, causal, window)
//   NormArgs       RMSNorm over rows
//   EltwiseOp, EltwiseArgs   one elementwise kernel of an eager chain
//   CastArgs       y = cast(scale · x)
//   CopySegment, FsdpCopyArgs   FSDP2's copy-in / copy-out / chunk_cat: many (cast) copies and
//                  zero fills as one launch
//   AdamWTensor, AdamWArgs   foreach AdamW over a list of tensors (PyTorch's exact update)
//   FillArgs       deterministic values (deterministic.h) into a buffer
//   HoldArgs       occupy a lane for a duration with a number of thread blocks (emulation)
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/dtype.h"

namespace shardscope::backend {

// Accumulation is fp32 whatever the operand types (bf16 in, fp32 accumulate).
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;     // `batch` independent GEMMs, operands laid out one after another
  bool trans_a = false;  // a is stored k×m (and read transposed)
  bool trans_b = false;  // b is stored n×k
  DType a_dtype = DType::kBFloat16, b_dtype = DType::kBFloat16, out_dtype = DType::kBFloat16;
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
  float alpha = 1.0f;
  float beta = 0.0f;  // 1: accumulate into out (weight gradients across micro-batches)
};

// q [batch, heads, q_seq, head_dim], k [batch, kv_heads, kv_seq, head_dim],
// v [batch, kv_heads, kv_seq, v_head_dim], out [batch, heads, q_seq, v_head_dim], lse
// [batch, heads, q_seq] fp32. kv_heads divides heads (grouped-query attention). With
// causal, query i (of the last q_seq positions of kv_seq) attends keys <= its position;
// window > 0 keeps the last `window` keys. Backward reads q, k, v, out, lse, d_out and
// writes d_q, d_k, d_v.
struct AttentionArgs {
  int64_t batch = 1, heads = 1, kv_heads = 1;
  int64_t q_seq = 1, kv_seq = 1;
  int64_t head_dim = 0, v_head_dim = 0;
  int64_t window = 0;
  bool causal = true;
  float scale = 0.0f;  // 0: 1/sqrt(head_dim)
  DType dtype = DType::kBFloat16;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  float* lse = nullptr;
  // Backward only.
  const void* d_out = nullptr;
  void* d_q = nullptr;
  void* d_k = nullptr;
  void* d_v = nullptr;
};

// y = x / sqrt(mean(x², row) + eps) · weight, per row of `cols` elements (fp32 math).
struct NormArgs {
  int64_t rows = 0, cols = 0;
  DType dtype = DType::kBFloat16;  // x, y and weight
  const void* x = nullptr;
  const void* weight = nullptr;  // cols elements; nullptr: no weight
  void* y = nullptr;
  float eps = 1e-6f;
};

enum class EltwiseOp : uint8_t {
  kScaleAdd,  // y = alpha · x0 + beta · x1 (x1 may be null: y = alpha · x0 + beta)
  kMul,       // y = x0 · x1
  kSilu,      // y = x0 · sigmoid(x0)
  kSiluMul,   // y = silu(x0) · x1 (SwiGLU)
};

// One eager kernel over `elements` elements in `dtype` (fp32 math); y may alias x0.
struct EltwiseArgs {
  EltwiseOp op = EltwiseOp::kScaleAdd;
  int64_t elements = 0;
  DType dtype = DType::kBFloat16;
  const void* x0 = nullptr;
  const void* x1 = nullptr;
  void* y = nullptr;
  float alpha = 1.0f, beta = 0.0f;
};

// y[i] = cast<dst>(scale · x[i]); with scale 1 a float → bfloat16 cast rounds to nearest
// even and bfloat16 → float is exact, so casts are bit-exact across devices.
struct CastArgs {
  int64_t elements = 0;
  DType src_dtype = DType::kFloat32, dst_dtype = DType::kBFloat16;
  const void* src = nullptr;
  void* dst = nullptr;
  float scale = 1.0f;
};

// `elements` elements from src (src_dtype) to dst (dst_dtype), cast as CastArgs does;
// src == nullptr zero-fills dst (FSDP2's padding rows).
struct CopySegment {
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t elements = 0;
};

// FSDP2's copies as one launch (torch's foreach copy / split_with_sizes_copy / chunk_cat):
// copy-in (local shard, cast to param_dtype, into its slot of the all-gather buffer), copy-out
// (all-gather output into the unsharded parameters), reduce copy-in (unsharded gradients,
// cast to the reduce dtype, padded, into the reduce-scatter input). Segments do not overlap.
// With `accumulate`, dst = cast<dst>(dst + scale · src) in fp32 (torch's in-place `+=` with
// type promotion: FSDP2's unsharded gradient accumulator over micro-steps without sync);
// a segment without src leaves dst as it is.
struct FsdpCopyArgs {
  DType src_dtype = DType::kBFloat16, dst_dtype = DType::kBFloat16;
  float scale = 1.0f;
  std::vector<CopySegment> segments;
  bool accumulate = false;  // last: the positional initialisers before it stay as they were
};

struct AdamWTensor {
  void* param = nullptr;
  const void* grad = nullptr;
  void* exp_avg = nullptr;
  void* exp_avg_sq = nullptr;
  int64_t elements = 0;
};

// torch.optim.AdamW (foreach, maximize=False, amsgrad=False, capturable=False), per element,
// in fp32 whatever the storage types (states stored in state_dtype):
//   param *= 1 − lr·weight_decay
//   m = β1·m + (1 − β1)·g;  v = β2·v + (1 − β2)·g²
//   bc1 = 1 − β1^step;  bc2 = 1 − β2^step  (step counts from 1)
//   param −= (lr / bc1) · m / (sqrt(v) / sqrt(bc2) + eps)
struct AdamWArgs {
  DType param_dtype = DType::kFloat32, grad_dtype = DType::kFloat32;
  DType state_dtype = DType::kFloat32;
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 1e-2f;
  int64_t step = 1;
  std::vector<AdamWTensor> tensors;
};

// dst[i] = cast<dtype>(DeterministicValue(seed, first_index + i) · scale) (deterministic.h),
// for i < elements: the same values on every device and every rank.
struct FillArgs {
  void* dst = nullptr;
  DType dtype = DType::kFloat32;
  int64_t elements = 0;
  uint64_t seed = 0;
  int64_t first_index = 0;
  float scale = 1.0f;
};

// Keeps the lane busy for `ns` nanoseconds with `blocks` resident thread blocks (a GPU
// spins that many blocks, as NCCL's channels would occupy SMs; the host sleeps its thread).
struct HoldArgs {
  int64_t ns = 0;
  int blocks = 1;
};

}  // namespace shardscope::backend
