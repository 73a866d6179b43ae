#include "core/mesh/mesh_context.h"

#include <fmt/format.h>

#include <array>

namespace shardscope {

bool IsFsdpDimName(std::string_view name) {
  static constexpr std::array<std::string_view, 10> kNames = {
      "dp",         "dp_replicate", "dp_shard",      "cp",       "pp", "fsdp_replicate",
      "fsdp_shard", "edp",          "edp_replicate", "edp_shard"};
  for (std::string_view n : kNames) {
    if (n == name) return true;
  }
  return false;
}

Result<MeshContext> BuildMeshContext(const MeshLayout& l, int stage) {
  struct Named {
    const char* name;
    int value;
  };
  for (const Named& n :
       {Named{"world size", l.world_size}, Named{"tp", l.tp}, Named{"cp", l.cp}, Named{"pp", l.pp},
        Named{"ep", l.ep}, Named{"dp_shard", l.dp_shard}, Named{"edp_shard", l.edp_shard}}) {
    if (n.value < 1) {
      return InvalidInput(fmt::format("mesh: {} = {} (expected >= 1)", n.name, n.value));
    }
  }
  MeshContext m;
  m.layout = l;
  const int64_t tp_cp_pp = int64_t{l.tp} * l.cp * l.pp;
  if (l.world_size % tp_cp_pp != 0) {
    return InvalidInput(
        fmt::format("mesh: world size {} is not divisible by tp·cp·pp = {}·{}·{} = {}",
                    l.world_size, l.tp, l.cp, l.pp, tp_cp_pp));
  }
  m.dp = static_cast<int>(l.world_size / tp_cp_pp);
  const int dp_cp = m.dp * l.cp;
  if (dp_cp % l.dp_shard != 0) {
    return InvalidInput(fmt::format(
        "mesh: dp·cp = {}·{} = {} is not divisible by dp_shard = {} (dp_replicate = dp·cp / "
        "dp_shard must be a whole number)",
        m.dp, l.cp, dp_cp, l.dp_shard));
  }
  m.dp_replicate = dp_cp / l.dp_shard;
  m.stage_size = l.world_size / l.pp;
  if (stage < 0 || stage >= l.pp) {
    return InvalidInput(fmt::format("mesh: stage {} outside 0..{}", stage, l.pp - 1));
  }
  const int first = stage * m.stage_size;
  SS_ASSIGN_OR_RETURN(m.world, DeviceMesh::Create({"dp", "cp", "tp"}, {m.dp, l.cp, l.tp}, first));
  SS_ASSIGN_OR_RETURN(m.fsdp, DeviceMesh::Create({"fsdp_replicate", "fsdp_shard", "tp"},
                                                 {m.dp_replicate, l.dp_shard, l.tp}, first));
  if (l.ep > 1) {
    const int dp_cp_tp = dp_cp * l.tp;
    if (dp_cp_tp % l.ep != 0) {
      return InvalidInput(fmt::format(
          "mesh: dp·cp·tp = {}·{}·{} = {} is not divisible by ep = {} (edp = dp·cp·tp / ep)", m.dp,
          l.cp, l.tp, dp_cp_tp, l.ep));
    }
    m.edp = dp_cp_tp / l.ep;
    if (m.edp % l.edp_shard != 0) {
      return InvalidInput(fmt::format(
          "mesh: edp = {} is not divisible by edp_shard = {} (edp_replicate = edp / edp_shard)",
          m.edp, l.edp_shard));
    }
    m.edp_replicate = m.edp / l.edp_shard;
    if (m.edp_replicate == 1) {
      SS_ASSIGN_OR_RETURN(DeviceMesh e,
                          DeviceMesh::Create({"edp_shard", "ep"}, {l.edp_shard, l.ep}, first));
      m.expert = std::move(e);
    } else {
      SS_ASSIGN_OR_RETURN(DeviceMesh e,
                          DeviceMesh::Create({"edp_replicate", "edp_shard", "ep"},
                                             {m.edp_replicate, l.edp_shard, l.ep}, first));
      m.expert = std::move(e);
    }
  }
  return m;
}

}  // namespace shardscope
