// The emulated collective of single-rank emulation (runtime.md; issue 12 deliverable 4). A
// real NCCL collective runs one block per channel of NCCL_MAX_NTHREADS-ish threads for its
// whole duration, moving the data through the SMs it holds; this kernel holds the same SMs
// for the cost model's predicted time and writes the output once, so the compute beside it
// loses those SMs and some memory bandwidth exactly as it would beside NCCL.
#include "backend/cuda/kernels/deterministic_value.h"
#include "backend/cuda/kernels/kernel_util.cuh"
#include "backend/cuda/kernels/kernels.h"

namespace shardscope::backend::cuda {
namespace {

// NCCL's Simple-protocol kernels run 512 threads per channel (NCCL_SIMPLE_MAX_NTHREADS).
constexpr int kNcclThreadsPerChannel = 512;

__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <typename T>
__global__ void EmulatedCollectiveKernel(T* __restrict__ out, int64_t n, int64_t keep_begin,
                                         int64_t keep_end, uint64_t seed, float scale,
                                         int64_t duration_ns) {
  const uint64_t start = GlobalTimerNs();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (i >= keep_begin && i < keep_end) continue;
    out[i] = FromFloat<T>(DeterministicUnit(seed, i) * scale);
  }
  // %globaltimer ticks in ns (at a microsecond-ish update rate on some parts: the hold is
  // then rounded up to the next update, well under a collective's duration).
  const uint64_t deadline = start + static_cast<uint64_t>(duration_ns);
  while (GlobalTimerNs() < deadline) __nanosleep(200);
}

}  // namespace

Status EmulatedCollective(const EmulatedCollectiveArgs& a, cudaStream_t stream) {
  if (a.n < 0 || a.duration_ns < 0 || a.channels < 1) {
    return InvalidInput("EmulatedCollective: n and duration >= 0 and channels >= 1 expected");
  }
  const unsigned blocks = static_cast<unsigned>(a.channels);
  switch (a.type) {
    case ElemType::kFloat32:
      EmulatedCollectiveKernel<<<blocks, kNcclThreadsPerChannel, 0, stream>>>(
          static_cast<float*>(a.out), a.n, a.keep_begin, a.keep_end, a.seed, a.scale,
          a.duration_ns);
      break;
    case ElemType::kBFloat16:
      EmulatedCollectiveKernel<<<blocks, kNcclThreadsPerChannel, 0, stream>>>(
          static_cast<bf16*>(a.out), a.n, a.keep_begin, a.keep_end, a.seed, a.scale,
          a.duration_ns);
      break;
    case ElemType::kByte:
      EmulatedCollectiveKernel<<<blocks, kNcclThreadsPerChannel, 0, stream>>>(
          static_cast<uint8_t*>(a.out), a.n, a.keep_begin, a.keep_end, a.seed, a.scale,
          a.duration_ns);
      break;
  }
  return LaunchStatus("EmulatedCollectiveKernel");
}

}  // namespace shardscope::backend::cuda
