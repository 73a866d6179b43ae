// Suggestions for misspelt names ("h100sxm" → "h100-sxm", "tq" → "tp"), shared by the scenario
// schema, the hardware catalog and the calibration-file key checks.
//
// Contents:
//   EditDistance   case-insensitive Levenshtein distance
//   ClosestNames   the candidates nearest to a name (at most `max_results`, close ones only)
//   DidYouMean     " (did you mean a, b?)" or "" when nothing is close
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

size_t EditDistance(std::string_view a, std::string_view b);

// Candidates within distance max(2, |name| / 3), or containing / contained in `name`
// (case-insensitive), nearest first; those that begin with `name` first of all.
std::vector<std::string> ClosestNames(std::string_view name,
                                      const std::vector<std::string>& candidates,
                                      size_t max_results = 3);

std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace shardscope
