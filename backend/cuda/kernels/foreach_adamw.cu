// The foreach AdamW kernel: blockIdx.y picks the tensor, the x blocks stride over it.
#include <algorithm>
#include <cmath>

#include "backend/cuda/kernels/foreach_adamw.h"
#include "backend/cuda/kernels/kernel_util.cuh"
#include "backend/device/dtype_access.h"

namespace shardscope::backend::cuda {
namespace {

constexpr int kMaxTensorsPerLaunch = 512;
constexpr int64_t kMaxBlocksPerLaunch = 8192;

struct TensorTable {
  AdamWTensor t[kMaxTensorsPerLaunch];
};

// The step's scalars, computed on the host exactly as the host device computes them.
struct Scalars {
  float decay, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, step_size;
  DType param_dtype, grad_dtype, state_dtype;
};
static_assert(sizeof(TensorTable) + sizeof(Scalars) < 32000,
              "kernel parameters are limited to 32764 bytes");

__global__ void AdamWKernel(const __grid_constant__ TensorTable table, const Scalars s) {
  const AdamWTensor t = table.t[blockIdx.y];
  SS_GRID_STRIDE(i, t.elements) {
    const float g = LoadAsFloat(t.grad, s.grad_dtype, i);
    float p = __fmul_rn(LoadAsFloat(t.param, s.param_dtype, i), s.decay);
    float m = LoadAsFloat(t.exp_avg, s.state_dtype, i);
    float v = LoadAsFloat(t.exp_avg_sq, s.state_dtype, i);
    m = __fadd_rn(m, __fmul_rn(s.one_minus_beta1, __fsub_rn(g, m)));  // lerp(m, g, 1 − β1)
    v = __fadd_rn(__fmul_rn(v, s.beta2), __fmul_rn(__fmul_rn(s.one_minus_beta2, g), g));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), s.bc2_sqrt), s.eps);
    p = __fsub_rn(p, __fmul_rn(s.step_size, __fdiv_rn(m, denom)));
    StoreFromFloat(t.param, s.param_dtype, i, p);
    StoreFromFloat(t.exp_avg, s.state_dtype, i, m);
    StoreFromFloat(t.exp_avg_sq, s.state_dtype, i, v);
  }
}

}  // namespace

Status AdamW(const AdamWArgs& a, cudaStream_t stream) {
  if (a.step < 1) return InvalidInput("adamw kernel: step counts from 1");
  for (DType d : {a.param_dtype, a.grad_dtype, a.state_dtype}) {
    if (!IsFloatingDType(d)) return InvalidInput("adamw kernel: floating dtypes only");
  }
  for (const AdamWTensor& t : a.tensors) {
    if (!t.param || !t.grad || !t.exp_avg || !t.exp_avg_sq) {
      return InvalidInput("adamw kernel: param, grad, exp_avg and exp_avg_sq for every tensor");
    }
  }
  // As host_kernels.cpp: bias corrections in double (PyTorch's Python floats), fp32 scalars.
  const double bc1 = 1.0 - std::pow(static_cast<double>(a.beta1), static_cast<double>(a.step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(a.beta2), static_cast<double>(a.step));
  Scalars s;
  s.step_size = static_cast<float>(a.lr / bc1);
  s.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  s.decay = 1.0f - a.lr * a.weight_decay;
  s.one_minus_beta1 = 1.0f - a.beta1;
  s.beta2 = a.beta2;
  s.one_minus_beta2 = 1.0f - a.beta2;
  s.eps = a.eps;
  s.param_dtype = a.param_dtype;
  s.grad_dtype = a.grad_dtype;
  s.state_dtype = a.state_dtype;
  for (size_t first = 0; first < a.tensors.size(); first += kMaxTensorsPerLaunch) {
    const size_t n = std::min<size_t>(kMaxTensorsPerLaunch, a.tensors.size() - first);
    TensorTable table;
    int64_t longest = 0;
    for (size_t i = 0; i < n; ++i) {
      table.t[i] = a.tensors[first + i];
      longest = std::max(longest, table.t[i].elements);
    }
    if (longest == 0) continue;
    const int64_t per_tensor =
        std::clamp<int64_t>((longest + kThreads - 1) / kThreads, 1,
                            std::max<int64_t>(1, kMaxBlocksPerLaunch / static_cast<int64_t>(n)));
    dim3 grid(static_cast<unsigned>(per_tensor), static_cast<unsigned>(n));
    AdamWKernel<<<grid, kThreads, 0, stream>>>(table, s);
    SS_RETURN_IF_ERROR(LaunchStatus("AdamWKernel"));
  }
  return Status::Ok();
}

}  // namespace shardscope::backend::cuda
