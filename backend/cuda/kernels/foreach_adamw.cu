// The foreach AdamW kernel: blockIdx.y picks the tensor, the x blocks stride over it.
#include <algorithm>

#include "backend/cuda/kernels/foreach_adamw.h"
#include "backend/cuda/kernels/kernel_util.cuh"

namespace shardscope::backend::cuda {
namespace {

constexpr int kMaxTensorsPerLaunch = 512;
constexpr int64_t kMaxBlocksPerLaunch = 8192;

struct TensorTable {
  AdamWTensor t[kMaxTensorsPerLaunch];
};
static_assert(sizeof(TensorTable) + sizeof(AdamWScalars) < 32000,
              "kernel parameters are limited to 32764 bytes");

template <typename G>
__global__ void ForeachAdamWKernel(const __grid_constant__ TensorTable table,
                                   const AdamWScalars s) {
  const AdamWTensor t = table.t[blockIdx.y];
  const G* grad = static_cast<const G*>(t.grad);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < t.numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float g;
    if constexpr (std::is_same_v<G, bf16>) {
      g = __bfloat162float(grad[i]);
    } else {
      g = grad[i];
    }
    float p = t.param[i], m = t.exp_avg[i], v = t.exp_avg_sq[i];
    AdamWElement(p, g, m, v, s);
    t.param[i] = p;
    t.exp_avg[i] = m;
    t.exp_avg_sq[i] = v;
  }
}

}  // namespace

Status ForeachAdamW(std::span<const AdamWTensor> tensors, ElemType grad_type,
                    const AdamWHyper& hyper, cudaStream_t stream) {
  if (grad_type == ElemType::kByte) return InvalidInput("ForeachAdamW: fp32 or bf16 gradients");
  if (hyper.step < 1) return InvalidInput("ForeachAdamW: step count >= 1 expected");
  const AdamWScalars s = AdamWScalarsFor(hyper);
  for (size_t first = 0; first < tensors.size(); first += kMaxTensorsPerLaunch) {
    const size_t n = std::min<size_t>(kMaxTensorsPerLaunch, tensors.size() - first);
    TensorTable table;
    int64_t longest = 0;
    for (size_t i = 0; i < n; ++i) {
      table.t[i] = tensors[first + i];
      longest = std::max(longest, table.t[i].numel);
    }
    if (longest == 0) continue;
    const int64_t per_tensor =
        std::clamp<int64_t>((longest + kThreads - 1) / kThreads, 1,
                            std::max<int64_t>(1, kMaxBlocksPerLaunch / static_cast<int64_t>(n)));
    dim3 grid(static_cast<unsigned>(per_tensor), static_cast<unsigned>(n));
    if (grad_type == ElemType::kBFloat16) {
      ForeachAdamWKernel<bf16><<<grid, kThreads, 0, stream>>>(table, s);
    } else {
      ForeachAdamWKernel<float><<<grid, kThreads, 0, stream>>>(table, s);
    }
    SS_RETURN_IF_ERROR(LaunchStatus("ForeachAdamWKernel"));
  }
  return Status::Ok();
}

}  // namespace shardscope::backend::cuda
