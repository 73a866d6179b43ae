// The host device's kernels, run synchronously on the calling (lane) thread: Eigen GEMMs in
// fp32, everything else as plain loops with fp32 math over the typed buffers
// (backend/device/dtype_access.h).
//
// Contents: one function per kernel of kernel_args.h.
#pragma once

#include "backend/device/kernel_args.h"
#include "core/util/status.h"

namespace shardscope::backend::host {

Status Gemm(const GemmArgs& a);
Status AttentionForward(const AttentionArgs& a);
// The exact gradients of AttentionForward (recomputing the probabilities from lse).
Status AttentionBackward(const AttentionArgs& a);
Status RmsNorm(const NormArgs& a);
Status Eltwise(const EltwiseArgs& a);
Status Cast(const CastArgs& a);
Status FsdpCopy(const FsdpCopyArgs& a);
Status AdamW(const AdamWArgs& a);
Status Fill(const FillArgs& a);

}  // namespace shardscope::backend::host
