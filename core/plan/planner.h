// The planner: planning.md §2 steps 1–10, from a model tree, a mesh context and an FSDP
// configuration to a Plan (units, ownership, meshes, reduction, order, prefetch, sharding).
//
// Contents:
//   PlanOptions         adapter choice, extra source layouts, warning thresholds
//   BuildPlan           the algorithm; errors carry planning.md's messages verbatim
//   PlanScenario        BuildPlan with the scenario's mesh, fsdp section and adapter
//   kSmallUnitBytes     default threshold of the `small_unit` warning
//
// Example:
//   SS_ASSIGN_OR_RETURN(MeshContext mesh, BuildMeshContext(layout));
//   SS_ASSIGN_OR_RETURN(Plan plan, BuildPlan(tree, mesh, fsdp_config));
//   for (const UnitPlan& u : plan.units) Use(u.fqn, u.sharded_bytes());
//
// Warnings (Plan::warnings, codes are stable): tp_all_replicated, tied_across_units,
// empty_unit, small_unit, prefetch_parent_unsharded, mostly_padding.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/config/fsdp_config.h"
#include "core/config/scenario.h"
#include "core/mesh/mesh_context.h"
#include "core/model/tree.h"
#include "core/plan/adapter.h"
#include "core/plan/plan.h"
#include "core/util/status.h"

namespace shardscope {

// A unit whose parameters (unsharded, own dtype) are below this is dominated by the
// all-gather's fixed latency: ~20-50 µs per NCCL collective, while 1 MiB moves in ~3 µs at
// NVLink speeds and ~20 µs over 400 Gb/s InfiniBand, so below 1 MiB latency dominates.
inline constexpr int64_t kSmallUnitBytes = int64_t{1} << 20;

struct PlanOptions {
  // The adapter to apply; null: look the tree's identity up in BuiltinAdapters() when
  // `use_builtin_adapters`, else none.
  const AdapterSpec* adapter = nullptr;
  bool use_builtin_adapters = true;
  // Source layouts by parameter FQN (any alias); they replace the tree's layout entries.
  std::map<std::string, SourceLayout> source_layouts;
  int64_t small_unit_bytes = kSmallUnitBytes;
  // Model chunks per pipeline stage (parallelism.pp_virtual_stages); with mesh pp > 1 the plan
  // holds pp · pp_virtual_stages chunk roots.
  int pp_virtual_stages = 1;
};

Result<Plan> BuildPlan(const ModelTree& tree, const MeshContext& mesh, const FsdpConfig& config,
                       const PlanOptions& options = {});

// The scenario's mesh (ScenarioMeshLayout), fsdp section, and its adapter section when it
// declares anything (it then replaces the built-in adapter).
Result<Plan> PlanScenario(const Scenario& scenario, const ModelTree& tree);

}  // namespace shardscope
