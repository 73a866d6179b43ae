#include "backend/check/reduction_rule.h"

#include <fmt/core.h>

namespace shardscope::backend {

Status CheckReducible(DType dtype, CollectiveReduce reduce) {
  if (dtype != DType::kFloat32 && dtype != DType::kBFloat16) {
    return InvalidInput(
        fmt::format("reduce dtype {}: the MPI communicator reduces float32 and bfloat16 (set "
                    "fsdp.mix_precision.reduce_dtype to one of them)",
                    DTypeName(dtype)));
  }
  if (reduce != CollectiveReduce::kSum && reduce != CollectiveReduce::kAvg) {
    return InvalidInput(
        fmt::format("reduce op {}: expected sum or avg", CollectiveReduceName(reduce)));
  }
  return Status::Ok();
}

ReductionRule::ReductionRule(DType dtype, CollectiveReduce reduce, double pre_scale,
                             double post_scale, int group_size)
    : dtype_(dtype) {
  // Each factor rounded to the dtype on its own, as NCCL stores a pre-multiplier (and its
  // ncclAvg's 1/N) in the data type.
  double scale = 1.0;
  if (pre_scale != 1.0) scale *= RoundTo(dtype_, pre_scale);
  if (reduce == CollectiveReduce::kAvg && group_size > 1) {
    scale = RoundTo(dtype_, scale * RoundTo(dtype_, 1.0 / group_size));
  }
  scaled_ = scale != 1.0;
  scale_ = static_cast<float>(scale);
  if (post_scale != 1.0) {
    divided_ = true;
    post_divisor_ = static_cast<float>(1.0 / post_scale);
  }
}

}  // namespace shardscope::backend
