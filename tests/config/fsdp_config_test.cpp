#include "core/config/fsdp_config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace shardscope {
namespace {

std::string ErrorOf(const FsdpConfig& c) {
  Status s = ValidateFsdpConfig(c);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
  return s.message();
}

TEST(FsdpConfigTest, DefaultsAreValidAndMatchTheSpec) {
  FsdpConfig c;
  EXPECT_TRUE(ValidateFsdpConfig(c).ok());
  EXPECT_EQ(c.dp_shard_size, 1);
  EXPECT_EQ(c.forward_prefetch_depth, 1);
  EXPECT_TRUE(c.reshard_after_forward);
  EXPECT_FALSE(c.mix_precision.param_dtype.has_value());
  EXPECT_TRUE(c.mix_precision.cast_forward_inputs);
  // comm_fusion_zero_copy null follows comm_fusion.
  EXPECT_FALSE(c.CommFusionZeroCopy());
  c.comm_fusion = true;
  EXPECT_TRUE(c.CommFusionZeroCopy());
  c.comm_fusion_zero_copy = false;
  EXPECT_FALSE(c.CommFusionZeroCopy());
}

TEST(FsdpConfigTest, ErrorsNameTheField) {
  FsdpConfig c;
  c.forward_prefetch_depth = -1;
  EXPECT_EQ(ErrorOf(c), "fsdp_config.forward_prefetch_depth = -1 (expected >= 0)");
  c = FsdpConfig();
  c.backward_prefetch_depth = -2;
  EXPECT_EQ(ErrorOf(c), "fsdp_config.backward_prefetch_depth = -2 (expected >= 0)");
  c = FsdpConfig();
  c.dp_shard_size = 0;
  EXPECT_EQ(ErrorOf(c), "fsdp_config.dp_shard_size = 0 (expected >= 1)");
  c = FsdpConfig();
  c.edp_shard_size = 0;
  EXPECT_EQ(ErrorOf(c), "fsdp_config.edp_shard_size = 0 (expected >= 1)");
  c = FsdpConfig();
  c.mix_precision.reduce_dtype = DType::kInt8;
  EXPECT_NE(ErrorOf(c).find("fsdp_config.mix_precision.reduce_dtype = int8"), std::string::npos);
  c = FsdpConfig();
  c.ignored_params = {""};
  EXPECT_NE(ErrorOf(c).find("ignored_params"), std::string::npos);
}

TEST(FsdpConfigTest, ReshardAfterForwardIntMustDivideTheShardGroup) {
  FsdpConfig c;
  c.dp_shard_size = 8;
  for (int d : {1, 2, 4, 8}) {
    c.reshard_after_forward_ranks = d;
    EXPECT_TRUE(ValidateFsdpConfig(c).ok()) << d;
  }
  for (int d : {3, 16, -1}) {
    c.reshard_after_forward_ranks = d;
    EXPECT_EQ(ErrorOf(c), fmt::format("fsdp_config.reshard_after_forward = {} (expected a boolean "
                                      "or an integer that divides the shard group size 8: FSDP2 "
                                      "reshards to groups of that many ranks)",
                                      d));
  }
}

TEST(FsdpConfigTest, MixPrecisionDTypeNames) {
  EXPECT_EQ(*ParseMixPrecisionDType("bfloat16", "f"), DType::kBFloat16);
  EXPECT_EQ(*ParseMixPrecisionDType("torch.float16", "f"), DType::kFloat16);
  EXPECT_EQ(*ParseMixPrecisionDType("fp32", "f"), DType::kFloat32);
  for (const char* bad : {"bfloat17", "float64", "int8", ""}) {
    Result<DType> r = ParseMixPrecisionDType(bad, "fsdp.mix_precision.param_dtype");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("fsdp.mix_precision.param_dtype: unknown mixed-precision "
                                        "dtype '" +
                                        std::string(bad) + "'"),
              std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace shardscope
