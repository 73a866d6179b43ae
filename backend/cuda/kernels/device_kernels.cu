// The Device interface's norm, eltwise, fill and hold kernels (kernel_args.h), with the host
// device's math (host_kernels.cpp): the elementwise products and sums are single fp32
// operations rounded on their own (no contraction into FMA), so scale-add, mul and fills
// agree with the host bit for bit; SiLU (expf) and the norms' parallel sums agree to rounding.
#include <string>

#include "backend/cuda/kernels/kernel_util.cuh"
#include "backend/cuda/kernels/kernels.h"
#include "backend/device/deterministic.h"
#include "backend/device/dtype_access.h"

namespace shardscope::backend::cuda {
namespace {

// NCCL's Simple-protocol kernels run 512 threads per channel (NCCL_SIMPLE_MAX_NTHREADS): a
// hold block takes an SM's worth of warps and registers as one channel would.
constexpr int kHoldThreadsPerBlock = 512;

__global__ void RmsNormKernel(const void* __restrict__ x, const void* __restrict__ w,
                              void* __restrict__ y, DType dtype, int64_t cols, float eps) {
  __shared__ float scratch[32];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
  float ss = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = LoadAsFloat(x, dtype, base + c);
    ss += v * v;
  }
  ss = BlockSum(ss, scratch);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(cols) + eps);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float wv = w ? LoadAsFloat(w, dtype, c) : 1.0f;
    StoreFromFloat(y, dtype, base + c,
                   __fmul_rn(__fmul_rn(LoadAsFloat(x, dtype, base + c), inv), wv));
  }
}

__global__ void EltwiseKernel(EltwiseOp op, int64_t n, DType dtype, const void* x0, const void* x1,
                              void* y, float alpha, float beta) {
  SS_GRID_STRIDE(i, n) {
    const float x = LoadAsFloat(x0, dtype, i);
    float v = 0.0f;
    switch (op) {
      case EltwiseOp::kScaleAdd:
        v = __fadd_rn(__fmul_rn(alpha, x), __fmul_rn(beta, x1 ? LoadAsFloat(x1, dtype, i) : 1.0f));
        break;
      case EltwiseOp::kMul:
        v = __fmul_rn(x, LoadAsFloat(x1, dtype, i));
        break;
      case EltwiseOp::kSilu:
        v = x / (1.0f + expf(-x));
        break;
      case EltwiseOp::kSiluMul:
        v = __fmul_rn(x / (1.0f + expf(-x)), LoadAsFloat(x1, dtype, i));
        break;
    }
    StoreFromFloat(y, dtype, i, v);
  }
}

__global__ void FillKernel(void* dst, DType dtype, int64_t n, uint64_t seed, int64_t first,
                           float scale) {
  SS_GRID_STRIDE(i, n) {
    StoreFromFloat(dst, dtype, i, DeterministicValue(seed, first + i) * scale);
  }
}

__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// %globaltimer counts ns (updated every ~µs on some parts: the hold then ends at the next
// update, far below a collective's duration).
__global__ void HoldKernel(int64_t ns) {
  const uint64_t deadline = GlobalTimerNs() + static_cast<uint64_t>(ns);
  while (GlobalTimerNs() < deadline) __nanosleep(256);
}

// The counter lives in host memory written by a host thread: volatile loads go to memory
// every time (relaxed at system scope on sm_70+).
__global__ void HostGateKernel(const volatile uint32_t* counter, uint32_t ticket) {
  while (*counter < ticket) __nanosleep(1000);
}

Status Need(bool ok, const char* kernel, const char* what) {
  if (ok) return Status::Ok();
  return InvalidInput(std::string(kernel) + " kernel: " + what);
}

}  // namespace

Status RmsNorm(const NormArgs& a, cudaStream_t stream) {
  SS_RETURN_IF_ERROR(Need(a.x && a.y && a.rows >= 0 && a.cols > 0 && a.rows <= 0x7fffffff,
                          "rms_norm", "x, y, cols > 0 and rows below 2^31"));
  SS_RETURN_IF_ERROR(Need(IsFloatingDType(a.dtype), "rms_norm", "a floating dtype"));
  if (a.rows == 0) return Status::Ok();
  RmsNormKernel<<<static_cast<unsigned>(a.rows), kThreads, 0, stream>>>(a.x, a.weight, a.y, a.dtype,
                                                                        a.cols, a.eps);
  return LaunchStatus("RmsNormKernel");
}

Status Eltwise(const EltwiseArgs& a, cudaStream_t stream) {
  SS_RETURN_IF_ERROR(Need(a.x0 && a.y, "eltwise", "x0 and y buffers"));
  const bool binary = a.op == EltwiseOp::kMul || a.op == EltwiseOp::kSiluMul;
  SS_RETURN_IF_ERROR(Need(!binary || a.x1, "eltwise", "x1 for a binary op"));
  SS_RETURN_IF_ERROR(Need(IsFloatingDType(a.dtype), "eltwise", "a floating dtype"));
  if (a.elements <= 0) return Status::Ok();
  EltwiseKernel<<<GridFor(a.elements), kThreads, 0, stream>>>(a.op, a.elements, a.dtype, a.x0, a.x1,
                                                              a.y, a.alpha, a.beta);
  return LaunchStatus("EltwiseKernel");
}

Status Fill(const FillArgs& a, cudaStream_t stream) {
  SS_RETURN_IF_ERROR(Need(a.dst != nullptr || a.elements == 0, "fill", "a dst buffer"));
  if (a.elements <= 0) return Status::Ok();
  FillKernel<<<GridFor(a.elements), kThreads, 0, stream>>>(a.dst, a.dtype, a.elements, a.seed,
                                                           a.first_index, a.scale);
  return LaunchStatus("FillKernel");
}

Status Hold(const HoldArgs& a, cudaStream_t stream) {
  SS_RETURN_IF_ERROR(Need(a.ns >= 0 && a.blocks >= 1, "hold", "ns >= 0 and blocks >= 1"));
  if (a.ns == 0) return Status::Ok();
  HoldKernel<<<static_cast<unsigned>(a.blocks), kHoldThreadsPerBlock, 0, stream>>>(a.ns);
  return LaunchStatus("HoldKernel");
}

Status HostGate(const uint32_t* counter, uint32_t ticket, cudaStream_t stream) {
  HostGateKernel<<<1, 1, 0, stream>>>(counter, ticket);
  return LaunchStatus("HostGateKernel");
}

}  // namespace shardscope::backend::cuda
