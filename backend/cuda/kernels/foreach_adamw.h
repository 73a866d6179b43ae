// Foreach AdamW on the GPU: one launch updates up to 512 tensors (the tensor table travels in
// the kernel's parameters), each element by AdamWElement (adamw_math.h), so the result equals
// PyTorch's _multi_tensor_adamw and the host reference bit for bit.
//
// Contents:
//   AdamWTensor     one parameter's fp32 shard, its gradient (fp32 or bf16) and two moments
//   ForeachAdamW    the step over a list of tensors
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "backend/cuda/kernels/adamw_math.h"
#include "backend/cuda/kernels/kernels.h"
#include "core/util/status.h"

namespace shardscope::backend::cuda {

struct AdamWTensor {
  float* param = nullptr;
  const void* grad = nullptr;  // grad_type elements
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  int64_t numel = 0;
};

// grad_type: kFloat32 or kBFloat16 (upcast per element, as torch's opmath does).
Status ForeachAdamW(std::span<const AdamWTensor> tensors, ElemType grad_type,
                    const AdamWHyper& hyper, cudaStream_t stream);

}  // namespace shardscope::backend::cuda
