// A plain tiled GEMM for what cuBLASLt declines: the same contract as LtGemm::Run (row-major
// operands, optional transposes, alpha / beta, bias, strided batches), fp32 accumulation over
// any floating operand types. Correct at any shape and pitch; not fast.
//
// Contents:
//   FallbackGemm   enqueues the GEMM on `stream`
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cuda/gemm/lt_gemm.h"
#include "core/util/status.h"

namespace shardscope::backend::cuda {

Status FallbackGemm(const LtGemmArgs& args, cudaStream_t stream);

}  // namespace shardscope::backend::cuda
