// The `--vary path=v1,v2,…` axes of a sweep: one small parser for lists and integer ranges.
//
// Contents:
//   VaryAxis        one scenario path and the values it takes (JSON text, as --set takes them)
//   ParseVary       "parallelism.tp=1,2,4,8" / "cluster.nodes=1..64:x2" → VaryAxis
//   CombinationCount  product of the axes' sizes (bounded: kMaxCombinations)
//   CombinationSets the `path=value` overrides of combination i (mixed radix, last axis fastest)
//
// Items are comma-separated (commas inside [...], {...} or "..." belong to the item). An item
// that starts with a digit (or '-' and a digit) and holds ".." is an integer range:
//   a..b      a, a+1, …, b          a..b:+k   a, a+k, … up to b
//   a..b:xk   a, a·k, a·k², … up to b (a >= 1, k >= 2)
// A value given twice in one axis is an error. Anything else is a value as `--set` takes it
// (JSON if it parses, else a string), so
// `training.activation_checkpoint=none,full,selective_op:2` and paths with ".." are values.
// Errors name the flag and the bad token: "--vary cluster.nodes=1..64:x1: range '1..64:x1':
// the factor after 'x' must be an integer >= 2".
//
// Example:
//   SS_ASSIGN_OR_RETURN(VaryAxis tp, ParseVary("parallelism.tp=1,2,4,8"));
//   SS_ASSIGN_OR_RETURN(VaryAxis n, ParseVary("cluster.nodes=1..64:x2"));  // 1,2,4,…,64
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace shardscope::sim {

// Bounds that keep a typo ("1..1000000") from asking for a week of simulation.
inline constexpr int64_t kMaxAxisValues = 4096;
inline constexpr int64_t kMaxCombinations = 1'000'000;

struct VaryAxis {
  std::string flag;  // the flag's text, for messages ("cluster.nodes=1..64:x2")
  std::string path;  // scenario key path
  std::vector<std::string> values;
};

Result<VaryAxis> ParseVary(std::string_view text);

// InvalidInput naming --vary when the product exceeds kMaxCombinations or two axes have one
// path (the second would overwrite the first in every combination).
Result<int64_t> CombinationCount(const std::vector<VaryAxis>& axes);

// "path=value" for each axis, in axis order. `index` < CombinationCount(axes).
std::vector<std::string> CombinationSets(const std::vector<VaryAxis>& axes, int64_t index);

}  // namespace shardscope::sim
