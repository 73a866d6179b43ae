// The mesh context of planning.md §1.2: sizes in, derived sizes and the three meshes out.
//
// Contents:
//   MeshLayout         world size + tp, cp, pp, ep, dp_shard, edp_shard, loss_parallel
//   MeshContext        derived dp, dp_replicate, edp, edp_replicate and the meshes of one stage
//   BuildMeshContext   checks every division and builds the meshes
//   IsFsdpDimName      dim names reserved for FSDP / PP (a source layout may not use them)
//
// Example:
//   MeshLayout l; l.world_size = 16; l.tp = 2; l.dp_shard = 4;
//   SS_ASSIGN_OR_RETURN(MeshContext m, BuildMeshContext(l));
//   m.dp_replicate;   // 2: HSDP over (fsdp_replicate=2, fsdp_shard=4, tp=2)
#pragma once

#include <compare>
#include <optional>
#include <string_view>

#include "core/mesh/device_mesh.h"
#include "core/util/status.h"

namespace shardscope {

struct MeshLayout {
  int world_size = 1;
  int tp = 1;
  int cp = 1;
  int pp = 1;
  int ep = 1;
  int dp_shard = 1;   // FSDP shard dim, CP already folded in (fsdp_config.dp_shard_size)
  int edp_shard = 1;  // expert shard dim (fsdp_config.edp_shard_size)
  bool loss_parallel = false;
  auto operator<=>(const MeshLayout&) const = default;
};

struct MeshContext {
  MeshLayout layout;
  int dp = 1;             // W / (tp·cp·pp)
  int dp_replicate = 1;   // dp·cp / dp_shard
  int edp = 0;            // dp·cp·tp / ep when ep > 1, else 0
  int edp_replicate = 0;  // edp / edp_shard when ep > 1, else 0
  int stage_size = 1;     // ranks per pipeline stage, W / pp

  DeviceMesh world;                  // (dp, cp, tp)
  DeviceMesh fsdp;                   // (fsdp_replicate, fsdp_shard, tp)
  std::optional<DeviceMesh> expert;  // (edp_replicate, edp_shard, ep) or (edp_shard, ep)

  bool hsdp() const { return dp_replicate > 1; }
  bool has_expert_mesh() const { return expert.has_value(); }
};

// Builds the meshes over the ranks of pipeline stage `stage` (contiguous, row-major). Each
// error names the sizes involved, e.g. "world size 12 is not divisible by tp·cp·pp = 8".
Result<MeshContext> BuildMeshContext(const MeshLayout& layout, int stage = 0);

// True for dp dp_replicate dp_shard cp pp fsdp_replicate fsdp_shard edp edp_replicate edp_shard.
bool IsFsdpDimName(std::string_view name);

}  // namespace shardscope
