// Tensor element types that appear in model trees and mixed-precision policies.
//
// Contents:
//   DType            the element type
//   ParseDType       "bfloat16"/"bf16"/"torch.bfloat16" → DType, with a clear error otherwise
//   DTypeName        canonical name ("bfloat16")
//   DTypeBytes       bytes per element
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/status.h"

namespace shardscope {

enum class DType {
  kFloat32,
  kBFloat16,
  kFloat16,
  kFloat64,
  kFloat8E4M3,
  kFloat8E5M2,
  kInt64,
  kInt32,
  kInt8,
  kUInt8,
  kBool
};

// Accepts canonical names, the `torch.` prefix and the short forms (fp32, bf16, fp16, ...).
// `what` names the field for the error message, e.g. "fsdp.mix_precision.param_dtype".
Result<DType> ParseDType(std::string_view name, std::string_view what);

// Canonical name, as torch prints it without the `torch.` prefix.
std::string_view DTypeName(DType dtype);

// Bytes per element.
int64_t DTypeBytes(DType dtype);

// True for the floating types mixed precision may choose (float32, bfloat16, float16).
bool IsMixedPrecisionDType(DType dtype);

}  // namespace shardscope
