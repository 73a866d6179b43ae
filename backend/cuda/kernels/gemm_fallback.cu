// 32×32 output tiles per block of 32×8 threads (4 outputs each), k in steps of 32 through
// shared memory; operands read through LoadAs so any floating dtype and either layout works.
#include <algorithm>

#include "backend/cuda/kernels/gemm_fallback.h"
#include "backend/cuda/kernels/kernel_util.cuh"
#include "backend/device/dtype_access.h"

namespace shardscope::backend::cuda {
namespace {

constexpr int kTile = 32;
constexpr int kRowsPerThread = 4;  // blockDim = (32, 8)

struct FallbackParams {
  const void* a;
  const void* b;
  void* c;
  const void* bias;
  int64_t m, n, k;
  bool trans_a, trans_b;
  DType ab, out;
  float alpha, beta;
  int64_t stride_a, stride_b, stride_c;
};

__global__ void FallbackGemmKernel(const FallbackParams p) {
  __shared__ float sa[kTile][kTile + 1];  // A tile [row][k]
  __shared__ float sb[kTile][kTile + 1];  // B tile [k][col]
  const int64_t batch = blockIdx.z;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t a_base = batch * p.stride_a, b_base = batch * p.stride_b;
  float acc[kRowsPerThread] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t k0 = 0; k0 < p.k; k0 += kTile) {
    for (int i = ty; i < kTile; i += blockDim.y) {
      // A(row, kk): stored [m][k], or [k][m] with trans_a.
      const int64_t row = row0 + i, kk = k0 + tx;
      float va = 0.0f;
      if (row < p.m && kk < p.k) {
        va = LoadAsFloat(p.a, p.ab, a_base + (p.trans_a ? kk * p.m + row : row * p.k + kk));
      }
      sa[i][tx] = va;
      // B(kb, col): stored [k][n], or [n][k] with trans_b.
      const int64_t kb = k0 + i, col = col0 + tx;
      float vb = 0.0f;
      if (kb < p.k && col < p.n) {
        vb = LoadAsFloat(p.b, p.ab, b_base + (p.trans_b ? col * p.k + kb : kb * p.n + col));
      }
      sb[i][tx] = vb;
    }
    __syncthreads();
    for (int kk = 0; kk < kTile; ++kk) {
      const float bv = sb[kk][tx];
      for (int r = 0; r < kRowsPerThread; ++r) acc[r] += sa[ty + r * 8][kk] * bv;
    }
    __syncthreads();
  }
  const int64_t col = col0 + tx;
  if (col >= p.n) return;
  for (int r = 0; r < kRowsPerThread; ++r) {
    const int64_t row = row0 + ty + r * 8;
    if (row >= p.m) continue;
    const int64_t i = batch * p.stride_c + row * p.n + col;
    float v = p.alpha * acc[r];
    if (p.beta != 0.0f) v += p.beta * LoadAsFloat(p.c, p.out, i);
    if (p.bias) v += LoadAsFloat(p.bias, p.out, col);
    StoreFromFloat(p.c, p.out, i, v);
  }
}

}  // namespace

Status FallbackGemm(const LtGemmArgs& g, cudaStream_t stream) {
  if (!IsFloatingDType(g.ab_dtype) || !IsFloatingDType(g.out_dtype)) {
    return InvalidInput("fallback GEMM: floating operand and output types only");
  }
  const int64_t tiles_m = (g.m + kTile - 1) / kTile, tiles_n = (g.n + kTile - 1) / kTile;
  if (tiles_m > 65535 || g.batch > 65535 || tiles_n > 0x7fffffff) {
    return InvalidInput("fallback GEMM: m / 32 and batch at most 65535");
  }
  FallbackParams p{g.a,
                   g.b,
                   g.c,
                   g.bias,
                   g.m,
                   g.n,
                   g.k,
                   g.trans_a,
                   g.trans_b,
                   g.ab_dtype,
                   g.out_dtype,
                   g.alpha,
                   g.beta,
                   g.batch > 1 ? g.stride_a : 0,
                   g.batch > 1 ? g.stride_b : 0,
                   g.batch > 1 ? g.stride_c : 0};
  dim3 grid(static_cast<unsigned>(tiles_n), static_cast<unsigned>(tiles_m),
            static_cast<unsigned>(g.batch));
  FallbackGemmKernel<<<grid, dim3(kTile, kTile / kRowsPerThread), 0, stream>>>(p);
  return LaunchStatus("FallbackGemmKernel");
}

}  // namespace shardscope::backend::cuda
