// `shardscope plan [SCENARIO] [--json FILE] [--set path=value ...]`: plans the FSDP units of a
// scenario (planning.md) and prints the units table; --json writes formats.md §1b.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/plan/plan_json.h"
#include "core/plan/planner.h"
#include "core/util/count_text.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/output_files.h"
#include "sim/cost/calibration.h"
#include "sim/cost/cost_params.h"
#include "sim/hardware/hardware.h"
#include "tools/shardscope/command.h"
#include "tools/shardscope/scenario_files.h"

namespace shardscope::cli {
namespace {

struct PlanArgs {
  std::string scenario;
  std::string json;
  std::vector<std::string> sets;
};

// plan refuses what simulate would: a GPU the catalog lacks, more GPUs per node than its node
// has, a cost model file that does not load or apply. The same calls as SimulateScenario.
Status CheckClusterAsSimulateDoes(const Scenario& sc) {
  Result<Hardware> hw = LookupHardware(sc.cluster.gpu, sc.cluster.gpus_per_node, sc.cluster.nodes);
  if (!hw.ok()) return hw.status().WithContext(sc.source + ": cluster.gpu");
  if (sc.cluster.cost_model.empty()) return Status::Ok();
  SS_ASSIGN_OR_RETURN(Calibration cal, LoadCalibration(sc.cluster.cost_model));
  Hardware hw_copy = *hw;
  CostParams params = DefaultCostParams(hw_copy);
  return ApplyCalibration(cal, &hw_copy, &params);
}

Status RunPlan(const PlanArgs& args) {
  if (!args.json.empty()) SS_RETURN_IF_ERROR(CheckOutputPath("--json", args.json));
  SS_ASSIGN_OR_RETURN(Scenario scenario,
                      LoadScenarioOrDefault(args.scenario, args.sets, "planning"));
  SS_RETURN_IF_ERROR(
      CheckDistinctFiles({{"--json", args.json}}, ScenarioFiles(scenario, args.scenario)));
  SS_RETURN_IF_ERROR(CheckClusterAsSimulateDoes(scenario));
  SS_ASSIGN_OR_RETURN(ModelTree tree, LoadScenarioModel(scenario));
  SS_ASSIGN_OR_RETURN(const Plan plan, PlanScenario(scenario, tree));
  const PlanMeshInfo& m = plan.mesh;
  // The scenario's dp_shard excludes cp; the plan's (planning.md's) is the FSDP shard group,
  // with cp folded in: printed as the scenario has it, so that the sizes multiply to the world.
  fmt::print(
      "{}: {} GPUs ({} × {} {}), tp={} cp={} pp={} ep={}, dp_replicate={} "
      "dp_shard={}{}{}{}\n",
      scenario.source, m.world_size, CountOf(scenario.cluster.nodes, "node"),
      scenario.cluster.gpus_per_node, scenario.cluster.gpu, m.tp, m.cp, m.pp, m.ep, m.dp_replicate,
      m.dp_shard / m.cp,
      m.cp > 1 ? fmt::format(" (FSDP shards over dp_shard·cp = {} ranks)", m.dp_shard) : "",
      m.edp > 0 ? fmt::format(", edp_replicate={} edp_shard={}", m.edp_replicate, m.edp_shard) : "",
      plan.adapter.empty() ? "" : ", " + plan.adapter);
  fmt::print("{}", FormatPlanTable(plan));
  if (!args.json.empty()) {
    SS_RETURN_IF_ERROR(WriteFileAtomic(args.json, DumpJson(PlanToJson(plan), 1) + "\n"));
    fmt::print("plan written to {}\n", args.json);
  }
  return Status::Ok();
}

}  // namespace

void RegisterPlanCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand(
      "plan", "plan the FSDP units of a scenario: units, meshes, reduction, prefetch, sharding");
  sub->add_option("scenario", args->scenario, kScenarioOrDefaultHelp);
  sub->add_option("--json", args->json, "write the plan (shardscope-plan/1 JSON) here")
      ->check(NonEmptyText());
  sub->add_option("--set", args->sets, "override a scenario field, path=value (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  registry.Add(sub, [args] { return RunPlan(*args); });
}

}  // namespace shardscope::cli
