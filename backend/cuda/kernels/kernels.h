// The CUDA backend's own kernels, launched from host code: every call enqueues on `stream`
// and returns the launch's Status (a kernel's faults surface at the next synchronisation).
//
// Contents:
//   The Device's kernels (backend/device/kernel_args.h), the same math as the host device's
//   (backend/host/host_kernels.cpp) so the two agree bit for bit where that file is exact:
//     RmsNorm           y = x · rstd · weight (fp32 statistics)
//     Eltwise           scale-add, mul, SiLU, SiLU·mul
//     FsdpCopy, Cast    FSDP2's copy-in / copy-out / chunk_cat as one launch per 1024
//                       segments, with cast, scale and zero padding; a cast is one segment
//     Fill              DeterministicValue(seed, first_index + i) · scale
//     Hold              occupy `blocks` SMs for a time (emulated collectives)
//     HostGate          the stream waits until a mapped host counter reaches a ticket
//     AdamW is foreach_adamw.h, attention flash_attention.h.
//   Model kernels beyond the Device interface (bf16, fp32 math, one rounding per output):
//     RmsNormForward / RmsNormBackward       transformers' LlamaRMSNorm, with weight gradient
//     LayerNormForward / LayerNormBackward   nn.LayerNorm
//     SiluMulForward / SiluMulBackward       SwiGLU
//     GeluForward / GeluBackward             exact (erf) or tanh approximation
//     ResidualAdd, CastFloatToBf16, CastBf16ToFloat
//
// Tensors are dense row-major; `rows × cols` operands are [rows][cols]. Norm statistics and
// weight gradients are fp32, as PyTorch computes them for bf16 inputs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/device/kernel_args.h"
#include "core/util/status.h"

namespace shardscope::backend::cuda {

using bf16 = __nv_bfloat16;

// ----- The Device's kernels -----
// dtype float32, bfloat16 or float16; weight may be null.
Status RmsNorm(const NormArgs& args, cudaStream_t stream);
// Floating dtypes; y may alias x0.
Status Eltwise(const EltwiseArgs& args, cudaStream_t stream);
// Same dtype with scale 1: a bit-exact byte copy (any dtype, uint8 flat buffers included);
// otherwise both dtypes floating. Segments whose src is null zero-fill their dst.
Status FsdpCopy(const FsdpCopyArgs& args, cudaStream_t stream);
Status Cast(const CastArgs& args, cudaStream_t stream);
Status Fill(const FillArgs& args, cudaStream_t stream);
// `blocks` blocks of NCCL's thread count stay resident until `ns` passed since the kernel
// began (%globaltimer), sleeping between looks so they hold SMs without stealing issue slots.
Status Hold(const HoldArgs& args, cudaStream_t stream);
// One thread spins (sleeping between looks) until *counter >= ticket; `counter` is the
// device view of mapped pinned host memory that a host thread advances.
Status HostGate(const uint32_t* counter, uint32_t ticket, cudaStream_t stream);

// ----- Model kernels (bf16) -----
// y = weight · bf16(x · rstd), rstd = 1 / sqrt(mean(x²) + eps) per row (saved for backward).
Status RmsNormForward(const bf16* x, const bf16* weight, bf16* y, float* rstd, int64_t rows,
                      int64_t cols, float eps, cudaStream_t stream);
// dx from dy; dweight[cols] (fp32) is overwritten with Σ_rows dy · x̂.
Status RmsNormBackward(const bf16* x, const bf16* weight, const float* rstd, const bf16* dy,
                       bf16* dx, float* dweight, int64_t rows, int64_t cols, cudaStream_t stream);

// y = (x − mean) · rstd · weight + bias per row (bias may be null); mean and rstd saved.
Status LayerNormForward(const bf16* x, const bf16* weight, const bf16* bias, bf16* y, float* mean,
                        float* rstd, int64_t rows, int64_t cols, float eps, cudaStream_t stream);
// dx from dy; dweight and dbias[cols] (fp32; dbias may be null) are overwritten with Σ dy · x̂
// and Σ dy.
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

}  // namespace shardscope::backend::cuda
