#include "core/config/fsdp_config.h"

#include <fmt/format.h>

namespace shardscope {

Result<DType> ParseMixPrecisionDType(std::string_view name, std::string_view field) {
  auto bad = [&] {
    return InvalidInput(fmt::format(
        "{}: unknown mixed-precision dtype '{}' (expected bfloat16, float16, float32 or null)",
        field, name));
  };
  Result<DType> parsed = ParseDType(name, field);
  if (!parsed.ok()) return bad();
  if (!IsMixedPrecisionDType(*parsed)) return bad();
  return *parsed;
}

Status ValidateFsdpConfig(const FsdpConfig& c) {
  if (c.dp_shard_size < 1) {
    return InvalidInput(
        fmt::format("fsdp_config.dp_shard_size = {} (expected >= 1)", c.dp_shard_size));
  }
  if (c.edp_shard_size < 1) {
    return InvalidInput(
        fmt::format("fsdp_config.edp_shard_size = {} (expected >= 1)", c.edp_shard_size));
  }
  if (c.forward_prefetch_depth < 0) {
    return InvalidInput(fmt::format("fsdp_config.forward_prefetch_depth = {} (expected >= 0)",
                                    c.forward_prefetch_depth));
  }
  if (c.backward_prefetch_depth < 0) {
    return InvalidInput(fmt::format("fsdp_config.backward_prefetch_depth = {} (expected >= 0)",
                                    c.backward_prefetch_depth));
  }
  if (c.reshard_after_forward_ranks != 0) {
    const int d = c.reshard_after_forward_ranks;
    if (d < 1 || !c.reshard_after_forward || c.dp_shard_size % d != 0) {
      return InvalidInput(fmt::format(
          "fsdp_config.reshard_after_forward = {} (expected a boolean or an integer that divides "
          "the shard group size {}: FSDP2 reshards to groups of that many ranks)",
          d, c.dp_shard_size));
    }
  }
  struct Field {
    const char* name;
    const std::optional<DType>& value;
  };
  for (const Field& f : {Field{"param_dtype", c.mix_precision.param_dtype},
                         Field{"reduce_dtype", c.mix_precision.reduce_dtype},
                         Field{"output_dtype", c.mix_precision.output_dtype}}) {
    if (f.value && !IsMixedPrecisionDType(*f.value)) {
      return InvalidInput(fmt::format(
          "fsdp_config.mix_precision.{} = {} (expected bfloat16, float16, float32 or null)", f.name,
          DTypeName(*f.value)));
    }
  }
  for (const std::string& fqn : c.replicate_params) {
    if (fqn.empty()) return InvalidInput("fsdp_config.replicate_params: an entry is empty");
  }
  for (const std::string& fqn : c.ignored_params) {
    if (fqn.empty()) return InvalidInput("fsdp_config.ignored_params: an entry is empty");
  }
  return Status::Ok();
}

}  // namespace shardscope
