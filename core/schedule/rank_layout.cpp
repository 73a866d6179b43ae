#include "core/schedule/rank_layout.h"

#include <fmt/core.h>

#include <algorithm>

namespace shardscope {
namespace {

// Ranks of the group of `local` (an index into a row-major mesh of `sizes`) along the dims
// marked in `vary`, offset by `base`.
std::vector<int> RowMajorGroup(int local, const std::vector<int>& sizes,
                               const std::vector<bool>& vary, int base) {
  const int n = static_cast<int>(sizes.size());
  std::vector<int> coord(n);
  int rest = local;
  for (int d = n - 1; d >= 0; --d) {
    coord[d] = rest % sizes[d];
    rest /= sizes[d];
  }
  std::vector<int> ranks = {0};
  // Build the group by expanding one varying dim at a time, slowest first.
  for (int d = 0; d < n; ++d) {
    int stride = 1;
    for (int e = d + 1; e < n; ++e) stride *= sizes[e];
    std::vector<int> next;
    const int lo = vary[d] ? 0 : coord[d];
    const int hi = vary[d] ? sizes[d] : coord[d] + 1;
    for (int r : ranks) {
      for (int c = lo; c < hi; ++c) next.push_back(r + c * stride);
    }
    ranks = std::move(next);
  }
  for (int& r : ranks) r += base;
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

}  // namespace

std::vector<int> WorldLayout::Group(int rank, const std::vector<WorldDim>& dims) const {
  std::vector<bool> vary(5, false);
  for (WorldDim d : dims) vary[static_cast<int>(d)] = true;
  return RowMajorGroup(rank, {pp, dp_replicate, dp_shard, cp, tp}, vary, 0);
}

Result<WorldLayout> MakeWorldLayout(int world_size, int pp, int dp_replicate, int dp_shard, int cp,
                                    int tp) {
  const std::pair<const char*, int> sizes[] = {{"parallelism.pp", pp},
                                               {"parallelism.dp_replicate", dp_replicate},
                                               {"parallelism.dp_shard", dp_shard},
                                               {"parallelism.cp", cp},
                                               {"parallelism.tp", tp}};
  for (const auto& [name, v] : sizes) {
    if (v < 1) return InvalidInput(fmt::format("{}: expected a size >= 1, got {}", name, v));
  }
  if (world_size < 1) {
    return InvalidInput(fmt::format("world size: expected >= 1, got {}", world_size));
  }
  const int64_t product = int64_t{pp} * dp_replicate * dp_shard * cp * tp;
  if (product != world_size) {
    return InvalidInput(fmt::format(
        "parallelism: pp·dp_replicate·dp_shard·cp·tp = {}·{}·{}·{}·{} = {} does not equal the "
        "world size {} (cluster.nodes · cluster.gpus_per_node)",
        pp, dp_replicate, dp_shard, cp, tp, product, world_size));
  }
  WorldLayout w;
  w.pp = pp;
  w.dp_replicate = dp_replicate;
  w.dp_shard = dp_shard;
  w.cp = cp;
  w.tp = tp;
  w.world_size = world_size;
  return w;
}

Result<std::vector<int>> ExpertGroup(const WorldLayout& world, int rank, int edp_replicate,
                                     int edp_shard, int ep, const std::vector<ExpertDim>& dims) {
  const int stage = world.stage_size();
  if (int64_t{edp_replicate} * edp_shard * ep != stage) {
    return InvalidInput(fmt::format(
        "expert mesh (edp_replicate {}, edp_shard {}, ep {}) does not cover the {} ranks of a "
        "pipeline stage",
        edp_replicate, edp_shard, ep, stage));
  }
  std::vector<bool> vary(3, false);
  for (ExpertDim d : dims) vary[static_cast<int>(d)] = true;
  const int base = (rank / stage) * stage;
  return RowMajorGroup(rank - base, {edp_replicate, edp_shard, ep}, vary, base);
}

}  // namespace shardscope
