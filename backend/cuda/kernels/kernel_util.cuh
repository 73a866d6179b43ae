// Device helpers shared by the kernels (included by .cu files only).
//
// Contents:
//   kThreads            threads per block of the elementwise and row kernels
//   GridFor             blocks for a grid-stride loop over n elements
//   WarpSum / WarpMax   butterfly reductions over a warp
//   BlockSum            sum over a block (blockDim.x a multiple of 32, ≤ 1024)
//   SS_GRID_STRIDE      a grid-stride loop over [0, n)
//   LaunchStatus        the Status of the last launch
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/cuda_check.h"

namespace shardscope::backend::cuda {

inline constexpr int kThreads = 256;

// Enough blocks to fill the GPU a few times over; the loops stride over the rest. The cap
// keeps small launches small and large ones within gridDim.x.
inline unsigned GridFor(int64_t n, int threads = kThreads) {
  int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 65535));
}

__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Every thread of the block must call it; every thread gets the sum. `scratch` holds 32
// floats of shared memory, reusable after the call returns.
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  v = WarpSum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  return WarpSum(v);
}

#define SS_GRID_STRIDE(i, n)                                                             \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

inline Status LaunchStatus(const char* kernel) {
  return CudaStatus(cudaGetLastError(), std::string("launch of ") + kernel);
}

}  // namespace shardscope::backend::cuda
