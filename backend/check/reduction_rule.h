// The arithmetic of one reducing collective (reduce-scatter, all-reduce), element by element:
// what the MPI communicator computes and what `run --check` recomputes as the reference, so
// the two can only agree when the collective moved the right data (one definition of the
// rule, used by both: backend/comm/mpi_communicator.cpp and backend/check/).
//
// Contents:
//   RoundTo                a value rounded to a reduce dtype (float32 or bfloat16)
//   ReductionRule          CollectiveSpec + group size → pre-scaling, sum, post-scaling
//   CheckReducible         the dtypes / ops the rule covers (InvalidInput otherwise)
//
// The rule, per element, for group size N and reduce dtype d (values held as float):
//   1. input:  x' = round_d(x · s), s = round_d(pre_scale) and, for ncclAvg, also round_d(1/N):
//      NCCL runs ncclAvg on floating types as a pre-multiplied sum with scalar 1/N held in the
//      data type, and ncclRedOpCreatePreMulSum (FSDP2's gradient_scaling_factor) likewise;
//   2. sum:    S = round_d(Σ_r x'_r), the exact sum rounded once. The MPI communicator gets it
//      by summing in float64, which carries 29 more bits than float32 and 45 more than
//      bfloat16: the sum of a group's values is exact there unless they span about that many
//      binades, so the order MPI reduces in cannot change the result. NCCL's ring rounds to d
//      after every hop instead, so NCCL and this rule can differ in d's last bit for N > 2;
//   3. output: round_d(S / round_f32(1 / post_scale)) when post_scale != 1: FSDP2 divides its
//      output by the post-divide factor (a Python float, an fp32 opmath scalar), it does not
//      multiply by the reciprocal.
#pragma once

#include <cstdint>

#include "backend/device/deterministic.h"  // the bfloat16 rounding every device uses
#include "core/model/dtype.h"
#include "core/schedule/schedule.h"
#include "core/util/status.h"

namespace shardscope::backend {

// `x` rounded to `dtype` (float32 or bfloat16), held as float.
inline float RoundTo(DType dtype, double x) {
  const float f = static_cast<float>(x);
  return dtype == DType::kBFloat16 ? Bf16BitsToFloat(FloatToBf16Bits(f)) : f;
}

// The rule supports float32 and bfloat16 data with sum / avg (none is not a reduction).
Status CheckReducible(DType dtype, CollectiveReduce reduce);

class ReductionRule {
 public:
  ReductionRule(DType dtype, CollectiveReduce reduce, double pre_scale, double post_scale,
                int group_size);
  ReductionRule(const CollectiveSpec& spec, int group_size)
      : ReductionRule(spec.dtype, spec.reduce, spec.pre_scale, spec.post_scale, group_size) {}

  // Step 1: one rank's input element (a value of the dtype) as it enters the sum.
  float Input(float x) const { return scaled_ ? RoundTo(dtype_, double{x} * scale_) : x; }
  // Steps 2-3: the exact sum of every rank's Input() → the collective's output element.
  float Output(double exact_sum) const {
    const float s = RoundTo(dtype_, exact_sum);
    return divided_ ? RoundTo(dtype_, double{s} / post_divisor_) : s;
  }
  DType dtype() const { return dtype_; }

 private:
  DType dtype_;
  bool scaled_ = false;
  float scale_ = 1.0f;  // in the dtype, as NCCL holds the pre-multiplier
  bool divided_ = false;
  float post_divisor_ = 1.0f;
};

}  // namespace shardscope::backend
