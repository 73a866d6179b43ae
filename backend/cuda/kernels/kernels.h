// The CUDA backend's own kernels, launched from host code: every call enqueues on `stream`
// and returns the launch's Status (kernel faults surface at the next synchronisation).
//
// Contents:
//   ElemType            element types the copy / fill kernels move (fp32, bf16, raw bytes)
//   RmsNormForward / RmsNormBackward       transformers' LlamaRMSNorm (fp32 statistics)
//   LayerNormForward / LayerNormBackward   nn.LayerNorm (fp32 statistics)
//   SiluMulForward / SiluMulBackward       SwiGLU's silu(gate) · up
//   GeluForward / GeluBackward             GELU, exact (erf) or tanh approximation
//   ResidualAdd                            out = a + b
//   CastFloatToBf16 / CastBf16ToFloat      round-to-nearest-even casts
//   CopySegment, BatchedCopy               FSDP2 copy-in / copy-out / chunk_cat: many
//                                          (offset, count) segments in one launch, with cast
//                                          and zero padding
//   FillDeterministic                      a buffer's values from (seed, element index)
//   EmulatedCollective                     writes a collective's output and holds `channels`
//                                          SMs for a given time, as NCCL's kernel would
// AdamW is in foreach_adamw.h, attention in flash_attention.h.
//
// Tensors are dense row-major; `rows × cols` operands are [rows][cols]. Norm statistics and
// weight gradients are fp32, as PyTorch computes them for bf16 inputs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "core/util/status.h"

namespace shardscope::backend::cuda {

using bf16 = __nv_bfloat16;

enum class ElemType : uint8_t { kFloat32, kBFloat16, kByte };
int ElemBytes(ElemType t);

// y = weight · bf16(x · rstd), rstd = 1 / sqrt(mean(x²) + eps) per row (saved for backward).
Status RmsNormForward(const bf16* x, const bf16* weight, bf16* y, float* rstd, int64_t rows,
                      int64_t cols, float eps, cudaStream_t stream);
// dx from dy; dweight[cols] (fp32) is overwritten with Σ_rows dy · x̂.
Status RmsNormBackward(const bf16* x, const bf16* weight, const float* rstd, const bf16* dy,
                       bf16* dx, float* dweight, int64_t rows, int64_t cols, cudaStream_t stream);

// y = (x − mean) · rstd · weight + bias per row; mean and rstd saved for backward.
Status LayerNormForward(const bf16* x, const bf16* weight, const bf16* bias, bf16* y, float* mean,
                        float* rstd, int64_t rows, int64_t cols, float eps, cudaStream_t stream);
// dx from dy; dweight and dbias[cols] (fp32) are overwritten with Σ dy · x̂ and Σ dy.
Status LayerNormBackward(const bf16* x, const bf16* weight, const float* mean, const float* rstd,
                         const bf16* dy, bf16* dx, float* dweight, float* dbias, int64_t rows,
                         int64_t cols, cudaStream_t stream);

// out = silu(gate) · up, elementwise over n.
Status SiluMulForward(const bf16* gate, const bf16* up, bf16* out, int64_t n, cudaStream_t stream);
Status SiluMulBackward(const bf16* gate, const bf16* up, const bf16* dout, bf16* dgate, bf16* dup,
                       int64_t n, cudaStream_t stream);

enum class GeluKind : uint8_t { kErf, kTanh };  // nn.GELU() / nn.GELU(approximate="tanh")
Status GeluForward(const bf16* x, bf16* y, int64_t n, GeluKind kind, cudaStream_t stream);
Status GeluBackward(const bf16* x, const bf16* dy, bf16* dx, int64_t n, GeluKind kind,
                    cudaStream_t stream);

Status ResidualAdd(const bf16* a, const bf16* b, bf16* out, int64_t n, cudaStream_t stream);

Status CastFloatToBf16(const float* x, bf16* y, int64_t n, cudaStream_t stream);
Status CastBf16ToFloat(const bf16* x, float* y, int64_t n, cudaStream_t stream);

// One run of `count` elements from src[src_offset] to dst[dst_offset] (element offsets in the
// respective element types). src_offset < 0 writes zeros (FSDP2's padding).
struct CopySegment {
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
  int64_t count = 0;
};
// Copies every segment, converting src_type → dst_type (fp32 ↔ bf16 round to nearest even;
// kByte only to kByte). Segments must not overlap in dst. Any number of segments: they
// travel in the kernel's parameters, in launches of up to 1024.
Status BatchedCopy(const void* src, ElemType src_type, void* dst, ElemType dst_type,
                   std::span<const CopySegment> segments, cudaStream_t stream);

// dst[i] = a value in [-scale, scale) from (seed, i), identical on every device and in
// DeterministicValue on the host (the reference).
Status FillDeterministic(void* dst, ElemType type, int64_t n, uint64_t seed, float scale,
                         cudaStream_t stream);
// The host side of FillDeterministic's values (as float, before rounding to bf16).
float DeterministicValue(uint64_t seed, int64_t index, float scale);

// A collective emulated on one GPU (single-rank emulation): `channels` blocks of NCCL's
// thread count write the output (FillDeterministic over [0, n) except [keep_begin,
// keep_end), the part this rank already holds, e.g. its own shard of an in-place
// all-gather) and then stay resident until `duration_ns` has passed since the kernel began,
// so compute beside it competes for SMs and memory as beside NCCL.
struct EmulatedCollectiveArgs {
  void* out = nullptr;
  ElemType type = ElemType::kBFloat16;
  int64_t n = 0;
  int64_t keep_begin = 0, keep_end = 0;
  uint64_t seed = 0;
  float scale = 1.0f;
  int64_t duration_ns = 0;
  int channels = 1;
};
Status EmulatedCollective(const EmulatedCollectiveArgs& args, cudaStream_t stream);

}  // namespace shardscope::backend::cuda
