// Where every global rank sits on the world mesh, and the ranks of each process group a
// simulated rank belongs to. The cost model decides intra- or inter-node links from these
// ranks (node = rank / gpus_per_node), so the order matters.
//
// Order (row-major, last dim fastest): world = (pp, dp_replicate, dp_shard, cp, tp), the
// torchtitan order. Consequences: tp groups are consecutive ranks (inside a node), a stage is
// a contiguous block of W/pp ranks, and the dense FSDP shard group (dp_shard × cp, planning.md
// §1.2 folds cp into the shard dim) strides by tp. The expert mesh (edp_replicate, edp_shard,
// ep) lies row-major over one stage's ranks, so ep groups are consecutive ranks.
//
// Contents:
//   WorldLayout        the five sizes, checked against the world size
//   MakeWorldLayout    validates sizes (errors name the field)
//   WorldLayout::Group ranks of `rank`'s group along a set of world dims
//   ExpertGroup        ranks of `rank`'s group along expert-mesh dims
#pragma once

#include <string>
#include <vector>

#include "core/util/status.h"

namespace shardscope {

enum class WorldDim : int { kPp = 0, kDpReplicate = 1, kDpShard = 2, kCp = 3, kTp = 4 };

struct WorldLayout {
  int pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1;
  int world_size = 1;
  int stage_size() const { return world_size / pp; }
  // Ranks of the group of `rank` along `dims` (all other world coordinates fixed), ascending.
  std::vector<int> Group(int rank, const std::vector<WorldDim>& dims) const;
};

// Checks every size ≥ 1 and that their product equals world_size.
Result<WorldLayout> MakeWorldLayout(int world_size, int pp, int dp_replicate, int dp_shard, int cp,
                                    int tp);

enum class ExpertDim : int { kEdpReplicate = 0, kEdpShard = 1, kEp = 2 };

// Ranks of `rank`'s group along `dims` of the expert mesh (edp_replicate, edp_shard, ep) laid
// row-major over the stage of `rank`. edp_replicate·edp_shard·ep must equal the stage size.
Result<std::vector<int>> ExpertGroup(const WorldLayout& world, int rank, int edp_replicate,
                                     int edp_shard, int ep, const std::vector<ExpertDim>& dims);

}  // namespace shardscope
