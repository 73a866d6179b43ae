// The planner: planning.md §2 steps 1–10, from a model tree, a mesh context and an FSDP
// configuration to a Plan (units, ownership, meshes, reduction, order, prefetch, sharding).
//
// Contents:
//   PlanOptions         adapter choice, extra source layouts, warning thresholds
//   BuildPlan           the algorithm; errors carry planning.md's messages verbatim
//   ScenarioPlanInputs  what a scenario's plan depends on beside the tree (PlanInputsOf)
//   PlanFromInputs      BuildPlan of those inputs
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
#include "core/model/model_source.h"
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

// What a scenario's plan depends on beside the model tree: everything PlanScenario gives
// BuildPlan, so that a plan cache keyed by it (plan_cache.h) keys on all of it.
struct ScenarioPlanInputs {
  MeshLayout layout;      // ScenarioMeshLayout
  FsdpConfig fsdp;        // ScenarioFsdpConfig
  AdapterConfig adapter;  // replaces the built-in adapter when it declares anything
  int pp_virtual_stages = 1;
  auto operator<=>(const ScenarioPlanInputs&) const = default;
};
ScenarioPlanInputs PlanInputsOf(const Scenario& scenario);
// BuildPlan of those inputs.
Result<Plan> PlanFromInputs(const ModelTree& tree, const ScenarioPlanInputs& inputs);

// The scenario checked against the model (model_consistency.h), then PlanFromInputs of its
// PlanInputsOf: the scenario's mesh, fsdp section, and adapter section when it declares anything.
Result<Plan> PlanScenario(const Scenario& scenario, const ModelTree& tree);
// An error of PlanFromInputs as said of `scenario`: its file first, and the planner's
// fsdp_config.* fields by the scenario's names (fsdp.*).
Status ScenarioPlanError(const Status& error, const Scenario& scenario);

// The build options of the scenario's model: its tensor and expert parallelism.
ModelBuildOptions ScenarioModelOptions(const Scenario& scenario);
// The scenario's model built with those options (what PlanScenario plans); errors name the
// scenario.
Result<ModelTree> LoadScenarioModel(const Scenario& scenario);

}  // namespace shardscope
