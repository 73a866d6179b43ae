// The FSDP2 configuration of planning.md §1.3 (the reference YAML key `fsdp_config`).
//
// Contents:
//   MixPrecisionConfig   param / reduce / output dtypes (null = unset), cast_forward_inputs
//   FsdpConfig           every field of §1.3 with its default
//   ValidateFsdpConfig   sizes >= 1, depths >= 0, mixed-precision dtypes in the allowed set,
//                        an int reshard_after_forward dividing dp_shard_size
//   ParseMixPrecisionDType  "bfloat16" | "float16" | "float32" (+ torch./short forms) or error
//
// Example:
//   FsdpConfig c;  c.dp_shard_size = 8;  c.forward_prefetch_depth = 2;
//   SS_RETURN_IF_ERROR(ValidateFsdpConfig(c));
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/dtype.h"
#include "core/util/status.h"

namespace shardscope {

struct MixPrecisionConfig {
  std::optional<DType> param_dtype;
  std::optional<DType> reduce_dtype;
  std::optional<DType> output_dtype;
  bool cast_forward_inputs = true;
  auto operator<=>(const MixPrecisionConfig&) const = default;
};

struct FsdpConfig {
  int dp_shard_size = 1;
  int edp_shard_size = 1;
  std::vector<std::string> replicate_params;  // FQNs kept whole, managed by their unit
  MixPrecisionConfig mix_precision;
  bool enable_offload = false;
  // FSDP2's `reshard_after_forward: bool | int`. An int d (reshard_after_forward_ranks > 0,
  // with reshard_after_forward true) keeps a 1/d slice of each unit's parameters after forward
  // and all-gathers them over d ranks in backward; d must divide the shard group size. FSDP2
  // treats d == 1 as false and d == shard size as true (the planner does the same, per unit).
  bool reshard_after_forward = true;
  int reshard_after_forward_ranks = 0;  // 0: the boolean form
  bool reshard_after_backward = true;
  bool requires_grad_sync = true;
  int forward_prefetch_depth = 1;
  int backward_prefetch_depth = 1;
  bool comm_fusion = false;
  std::optional<bool> comm_fusion_zero_copy;  // null: same as comm_fusion
  bool fp32_main_params = false;
  std::vector<std::string> ignored_params;  // FQNs FSDP leaves alone

  // comm_fusion_zero_copy with its null default resolved.
  bool CommFusionZeroCopy() const { return comm_fusion_zero_copy.value_or(comm_fusion); }
  // Every field, so that a field added later is part of a plan cache's key (plan_cache.h).
  auto operator<=>(const FsdpConfig&) const = default;
};

// Errors name the field: "fsdp_config.forward_prefetch_depth = -1 (expected >= 0)". Checks
// sizes >= 1, depths >= 0, mixed-precision dtypes in {float32, bfloat16, float16}, an int
// reshard_after_forward >= 1 that divides dp_shard_size (expert units' edp_shard_size is the
// planner's check), and non-empty FQNs in replicate_params / ignored_params.
Status ValidateFsdpConfig(const FsdpConfig& config);

// A mixed-precision dtype name: bfloat16, float16, float32 (torch. prefix and bf16/fp16/fp32
// accepted). `field` names the field in the error.
Result<DType> ParseMixPrecisionDType(std::string_view name, std::string_view field);

}  // namespace shardscope
