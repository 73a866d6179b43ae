// Foreach AdamW on the GPU: one launch updates up to 512 tensors (the tensor table travels in
// the kernel's parameters), each element by the update of kernel_args.h's AdamWArgs in the
// host device's operation order (backend/host/host_kernels.cpp AdamW): the scalars computed
// on the host as it does, every fp32 operation rounded on its own (no FMA contraction), so
// the GPU's step equals the host reference bit for bit and `run --check` can compare them.
//
// Contents:
//   AdamW   the step over args.tensors (param / state dtypes float32, bfloat16 or float16)
#pragma once

#include <cuda_runtime_api.h>

#include "backend/device/kernel_args.h"
#include "core/util/status.h"

namespace shardscope::backend::cuda {

Status AdamW(const AdamWArgs& args, cudaStream_t stream);

}  // namespace shardscope::backend::cuda
