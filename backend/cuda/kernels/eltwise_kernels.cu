// The bf16 model kernels that are elementwise: SwiGLU, GELU, residual add, casts. Math in
// fp32, one rounding to bf16 per output, as PyTorch's bf16 elementwise kernels do.
#include "backend/cuda/kernels/kernel_util.cuh"
#include "backend/cuda/kernels/kernels.h"

namespace shardscope::backend::cuda {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluTanhCoeff = 0.044715f;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;

__device__ __forceinline__ float Sigmoid(float x) { return 1.0f / (1.0f + __expf(-x)); }

__global__ void SiluMulForwardKernel(const bf16* __restrict__ gate, const bf16* __restrict__ up,
                                     bf16* __restrict__ out, int64_t n) {
  SS_GRID_STRIDE(i, n) {
    const float g = __bfloat162float(gate[i]);
    out[i] = __float2bfloat16(g * Sigmoid(g) * __bfloat162float(up[i]));
  }
}

// d silu(g) / dg = s · (1 + g · (1 − s)), s = sigmoid(g).
__global__ void SiluMulBackwardKernel(const bf16* __restrict__ gate, const bf16* __restrict__ up,
                                      const bf16* __restrict__ dout, bf16* __restrict__ dgate,
                                      bf16* __restrict__ dup, int64_t n) {
  SS_GRID_STRIDE(i, n) {
    const float g = __bfloat162float(gate[i]);
    const float u = __bfloat162float(up[i]);
    const float d = __bfloat162float(dout[i]);
    const float s = Sigmoid(g);
    dgate[i] = __float2bfloat16(d * u * s * (1.0f + g * (1.0f - s)));
    dup[i] = __float2bfloat16(d * g * s);
  }
}

__device__ __forceinline__ float Gelu(float x, GeluKind kind) {
  if (kind == GeluKind::kTanh) {
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kGeluTanhCoeff * x * x * x)));
  }
  return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
}

__device__ __forceinline__ float GeluGrad(float x, GeluKind kind) {
  if (kind == GeluKind::kTanh) {
    const float inner = kSqrt2OverPi * (x + kGeluTanhCoeff * x * x * x);
    const float t = tanhf(inner);
    const float dinner = kSqrt2OverPi * (1.0f + 3.0f * kGeluTanhCoeff * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner;
  }
  return 0.5f * (1.0f + erff(x * kInvSqrt2)) + x * kInvSqrt2Pi * __expf(-0.5f * x * x);
}

__global__ void GeluForwardKernel(const bf16* __restrict__ x, bf16* __restrict__ y, int64_t n,
                                  GeluKind kind) {
  SS_GRID_STRIDE(i, n) { y[i] = __float2bfloat16(Gelu(__bfloat162float(x[i]), kind)); }
}

__global__ void GeluBackwardKernel(const bf16* __restrict__ x, const bf16* __restrict__ dy,
                                   bf16* __restrict__ dx, int64_t n, GeluKind kind) {
  SS_GRID_STRIDE(i, n) {
    dx[i] = __float2bfloat16(__bfloat162float(dy[i]) * GeluGrad(__bfloat162float(x[i]), kind));
  }
}

__global__ void ResidualAddKernel(const bf16* __restrict__ a, const bf16* __restrict__ b,
                                  bf16* __restrict__ out, int64_t n) {
  SS_GRID_STRIDE(i, n) {
    out[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
  }
}

__global__ void CastFloatToBf16Kernel(const float* __restrict__ x, bf16* __restrict__ y,
                                      int64_t n) {
  SS_GRID_STRIDE(i, n) { y[i] = __float2bfloat16_rn(x[i]); }
}

__global__ void CastBf16ToFloatKernel(const bf16* __restrict__ x, float* __restrict__ y,
                                      int64_t n) {
  SS_GRID_STRIDE(i, n) { y[i] = __bfloat162float(x[i]); }
}

}  // namespace

Status SiluMulForward(const bf16* gate, const bf16* up, bf16* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return Status::Ok();
  SiluMulForwardKernel<<<GridFor(n), kThreads, 0, stream>>>(gate, up, out, n);
  return LaunchStatus("SiluMulForwardKernel");
}

Status SiluMulBackward(const bf16* gate, const bf16* up, const bf16* dout, bf16* dgate, bf16* dup,
                       int64_t n, cudaStream_t stream) {
  if (n <= 0) return Status::Ok();
  SiluMulBackwardKernel<<<GridFor(n), kThreads, 0, stream>>>(gate, up, dout, dgate, dup, n);
  return LaunchStatus("SiluMulBackwardKernel");
}

Status GeluForward(const bf16* x, bf16* y, int64_t n, GeluKind kind, cudaStream_t stream) {
  if (n <= 0) return Status::Ok();
  GeluForwardKernel<<<GridFor(n), kThreads, 0, stream>>>(x, y, n, kind);
  return LaunchStatus("GeluForwardKernel");
}

Status GeluBackward(const bf16* x, const bf16* dy, bf16* dx, int64_t n, GeluKind kind,
                    cudaStream_t stream) {
  if (n <= 0) return Status::Ok();
  GeluBackwardKernel<<<GridFor(n), kThreads, 0, stream>>>(x, dy, dx, n, kind);
  return LaunchStatus("GeluBackwardKernel");
}

Status ResidualAdd(const bf16* a, const bf16* b, bf16* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return Status::Ok();
  ResidualAddKernel<<<GridFor(n), kThreads, 0, stream>>>(a, b, out, n);
  return LaunchStatus("ResidualAddKernel");
}

Status CastFloatToBf16(const float* x, bf16* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return Status::Ok();
  CastFloatToBf16Kernel<<<GridFor(n), kThreads, 0, stream>>>(x, y, n);
  return LaunchStatus("CastFloatToBf16Kernel");
}

Status CastBf16ToFloat(const bf16* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return Status::Ok();
  CastBf16ToFloatKernel<<<GridFor(n), kThreads, 0, stream>>>(x, y, n);
  return LaunchStatus("CastBf16ToFloatKernel");
}

}  // namespace shardscope::backend::cuda
