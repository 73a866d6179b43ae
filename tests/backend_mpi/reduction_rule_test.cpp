// The reduction rule the MPI communicator and `run --check` share (backend/check/
// reduction_rule.h), on values whose rounding is worked out by hand.
#include "backend/check/reduction_rule.h"

#include <gtest/gtest.h>

namespace shardscope::backend {
namespace {

CollectiveSpec Spec(DType dtype, CollectiveReduce reduce, double pre = 1.0, double post = 1.0) {
  CollectiveSpec s;
  s.dtype = dtype;
  s.reduce = reduce;
  s.pre_scale = pre;
  s.post_scale = post;
  return s;
}

TEST(ReductionRule, Bf16SumIsRoundedOnceToNearestEven) {
  const ReductionRule rule(Spec(DType::kBFloat16, CollectiveReduce::kSum), 4);
  // bfloat16 keeps 7 fraction bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 (even: 1).
  EXPECT_EQ(rule.Output(1.0 + 0x1p-8), 1.0f);
  // 1 + 3·2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: the even one is 1 + 2^-6.
  EXPECT_EQ(rule.Output(1.0 + 3 * 0x1p-8), 1.0f + 0x1p-6f);
  // A plain sum leaves the inputs alone.
  EXPECT_EQ(rule.Input(0.75f), 0.75f);
}

TEST(ReductionRule, AvgIsAPreMultipliedSumWithOneOverNInTheDtype) {
  const ReductionRule rule(Spec(DType::kFloat32, CollectiveReduce::kAvg), 3);
  // round_f32(1/3) = 0.3333333432674408; 3 × that = 1.0000000298..., which rounds to 1.
  EXPECT_EQ(rule.Input(3.0f), 1.0f);
  EXPECT_EQ(rule.Input(6.0f), 2.0f);
  // On bfloat16, 1/3 itself is rounded to bfloat16 first (0.333984375).
  const ReductionRule bf(Spec(DType::kBFloat16, CollectiveReduce::kAvg), 3);
  EXPECT_EQ(bf.Input(1.0f), 0.333984375f);
}

TEST(ReductionRule, AvgOverOneRankIsASum) {
  const ReductionRule rule(Spec(DType::kFloat32, CollectiveReduce::kAvg), 1);
  EXPECT_EQ(rule.Input(0.1f), 0.1f);
  EXPECT_EQ(rule.Output(0.1f), 0.1f);
}

TEST(ReductionRule, PreScaleMultipliesAndPostScaleDivides) {
  const ReductionRule rule(Spec(DType::kFloat32, CollectiveReduce::kSum, 0.25, 0.5), 2);
  EXPECT_EQ(rule.Input(2.0f), 0.5f);
  EXPECT_EQ(rule.Output(3.0), 1.5f);  // 3 / (1 / 0.5)
  // post_scale 1/3 divides by 3, as FSDP2's div_ by its post-divide factor does.
  const ReductionRule third(Spec(DType::kFloat32, CollectiveReduce::kSum, 1.0, 1.0 / 3), 2);
  EXPECT_EQ(third.Output(3.0), 1.0f);
  EXPECT_EQ(third.Output(1.0), 1.0f / 3.0f);
}

TEST(ReductionRule, RefusesWhatItDoesNotCover) {
  const Status fp16 = CheckReducible(DType::kFloat16, CollectiveReduce::kSum);
  EXPECT_EQ(fp16.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(fp16.message().find("float16"), std::string::npos) << fp16.message();
  EXPECT_EQ(CheckReducible(DType::kFloat32, CollectiveReduce::kNone).code(),
            ErrorCode::kInvalidInput);
  EXPECT_TRUE(CheckReducible(DType::kBFloat16, CollectiveReduce::kAvg).ok());
}

}  // namespace
}  // namespace shardscope::backend
