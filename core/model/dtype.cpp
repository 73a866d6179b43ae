#include "core/model/dtype.h"

#include <array>
#include <utility>

namespace shardscope {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  int64_t bytes;
};

constexpr std::array<DTypeInfo, 11> kDTypes = {{
    {DType::kFloat32, "float32", 4},
    {DType::kBFloat16, "bfloat16", 2},
    {DType::kFloat16, "float16", 2},
    {DType::kFloat64, "float64", 8},
    {DType::kFloat8E4M3, "float8_e4m3fn", 1},
    {DType::kFloat8E5M2, "float8_e5m2", 1},
    {DType::kInt64, "int64", 8},
    {DType::kInt32, "int32", 4},
    {DType::kInt8, "int8", 1},
    {DType::kUInt8, "uint8", 1},
    {DType::kBool, "bool", 1},
}};

constexpr std::array<std::pair<std::string_view, DType>, 8> kAliases = {{
    {"fp32", DType::kFloat32},
    {"float", DType::kFloat32},
    {"bf16", DType::kBFloat16},
    {"fp16", DType::kFloat16},
    {"half", DType::kFloat16},
    {"fp64", DType::kFloat64},
    {"double", DType::kFloat64},
    {"long", DType::kInt64},
}};

}  // namespace

Result<DType> ParseDType(std::string_view name, std::string_view what) {
  std::string_view n = name;
  if (n.substr(0, 6) == "torch.") n.remove_prefix(6);
  for (const auto& info : kDTypes) {
    if (info.name == n) return info.dtype;
  }
  for (const auto& [alias, dtype] : kAliases) {
    if (alias == n) return dtype;
  }
  return InvalidInput(std::string(what) + ": unknown dtype '" + std::string(name) +
                      "' (expected one of float32, bfloat16, float16, float64, float8_e4m3fn, "
                      "float8_e5m2, int64, int32, int8, uint8, bool)");
}

std::string_view DTypeName(DType dtype) {
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return info.name;
  }
  return "unknown";
}

int64_t DTypeBytes(DType dtype) {
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return info.bytes;
  }
  return 0;
}

bool IsMixedPrecisionDType(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kBFloat16 || dtype == DType::kFloat16;
}

}  // namespace shardscope
