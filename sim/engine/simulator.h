// From a scenario (or an already built schedule) to a predicted step: the pipeline the
// `simulate` command, sweeps and benchmarks share.
//
// Contents:
//   StepContext                 what the summary needs beside the schedule and the cost model
//   Simulation                  every intermediate product of one prediction
//   SimulateSchedule            Schedule + CostModel → timed step, memory, accounting, summary
//   SimulationTrace             the predicted trace of a Simulation (core/timeline/make_trace.h)
//   SimulateScenario            scenario → model → plan → schedule → cost model → SimulateSchedule
//                               (or, unless exact, its steady-state extrapolation)
//   ScenarioPricing, PriceScenario   the cost model and step context a scenario is priced with
//                               (shared with the backend's `run`, which times a measured step)
//   SummarizeStep               the summary of a Simulation's timeline and memory (measured or
//                               predicted alike)
//   DefaultScenarioJson         the built-in default job (Llama 3 8B on 8 H100 SXM, FSDP2)
//   DefaultScenarioDocument     the same, with the source name and base directory to parse it
//
// Example:
//   SS_ASSIGN_OR_RETURN(Scenario sc, LoadScenario("job.json"));
//   SS_ASSIGN_OR_RETURN(Simulation sim, SimulateScenario(sc, {}));
//   Use(sim.summary.step_time_s, sim.summary.peak_memory_reserved_gib);
//
// The summary's time figures are the reported role's StepAccount (core/trace/accounting.h, fed
// from the timeline): the figures `stats` computes from SimulationTrace's output for that rank.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/scenario.h"
#include "core/model/model_cache.h"
#include "core/plan/plan_cache.h"
#include "core/schedule/schedule.h"
#include "core/schedule/schedule_builder.h"
#include "core/schedule/step_basis.h"
#include "core/trace/accounting.h"
#include "core/trace/trace.h"
#include "core/util/status.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/durations.h"
#include "sim/engine/engine.h"
#include "sim/engine/memory_floor.h"
#include "sim/engine/memory_tracker.h"
#include "sim/engine/model_flops.h"
#include "sim/engine/schedule_memo.h"
#include "sim/engine/steady_state.h"
#include "sim/engine/step_metrics.h"
#include "sim/engine/summary.h"

namespace shardscope::sim {

struct StepContext {
  int gpus_per_node = 8;
  int64_t usable_bytes = 0;  // memory the job can reserve; <= 0: unlimited
  int64_t hbm_bytes = 0;     // the GPU's total, for the summary
  // The caching allocator's settings: the scenario's training.expandable_segments, with the
  // GPU's address range (its memory × 9/8, as PyTorch reserves for each segment).
  AllocatorConfig allocator;
  double peak_flops = 0;            // dense bf16 peak, for MFU
  ModelFlops model_flops;           // for TFLOP/s and MFU
  nlohmann::json scenario;          // resolved scenario, copied into the summary
  bool keep_memory_samples = true;  // false: peaks only (sweeps, benchmarks)
  // true: only what a sweep ranks on (SimulateOptions::figures_only).
  bool figures_only = false;
  // Threads one simulation may use: 1 runs it on the calling thread alone (sweeps, which run
  // variants in parallel); more run the memory replay beside the accounting and split its
  // roles (SimulateSchedule). The figures do not depend on it.
  int threads = 1;
  // true: the Simulation keeps each role's allocator calls (the steady-state fast path's short
  // runs, which splice them: reserve_splice.h).
  bool keep_allocator_calls = false;
};

struct Simulation {
  Schedule schedule;
  OpPrices prices;
  OverlapModel overlap;
  Timeline timeline;
  std::vector<RoleMemory> memory;  // per role
  // Per role, with StepContext::keep_allocator_calls: the calls its memory replay made on its
  // allocator model.
  std::vector<AllocatorCalls> allocator_calls;
  // Per role: the step accounting of its timeline, filled for the reported role alone (the
  // others are left empty): the summary describes that role, and accounting every role of a
  // TP 8 x PP 8 step took 6% of its prediction's instructions. AccountRoles gives the others.
  std::vector<StepAccount> role_metrics;
  int reported_role = 0;  // the slowest role, which the summary describes
  Summary summary;
  std::string gpu_name;  // catalog name, for traces
  std::string gpu_description;
  int nodes = 1;
  // Set when the summary was extrapolated from two shorter runs (steady_state.h): the schedule,
  // timeline and memory are then those of the run with steady_state->b micro-batches.
  std::optional<SteadyStateRuns> steady_state;
  // Set when SimulateOptions::stop_when_not_fitting stopped the run: the schedule alone holds
  // more than the capacity (memory_floor.h). Only the schedule and the summary's fit, role,
  // capacity and tokens are then filled; prices, timeline and memory are empty.
  std::optional<MemoryFloor> floor_over_capacity;
};

// Prices, runs and measures `schedule`. Errors name the op (bad schedule, deadlock).
Result<Simulation> SimulateSchedule(Schedule schedule, const CostModel& cost,
                                    const StepContext& ctx);

struct SimulateOptions {
  bool keep_memory_samples = true;
  // false: a job with many micro-batches may be extrapolated from its steady state
  // (steady_state.h; sweeps and plan search). true: always the whole step (traces).
  bool exact = true;
  // true: a job whose schedule alone proves that it does not fit (memory_floor.h) is neither
  // priced nor run (Simulation::floor_over_capacity): sweeps and plan search rank only what
  // fits. false: every job is simulated to the end (simulate, traces, the fit advice).
  bool stop_when_not_fitting = false;
  // true: the summary holds only what a sweep ranks on (sim/explore): the step's time figures
  // and rates, exposed communication, compute, idle, the memory figures and the fit; its
  // communication breakdowns by purpose and collective, timing warnings, overlap stretch and
  // compute by kind stay empty. Every figure it does hold is the same as without it. false: the
  // whole summary (simulate, traces, the fit advice).
  bool figures_only = false;
  // StepContext::threads for this prediction; 0: the hardware's threads, at most 4 (past that
  // a step's independent parts run out). Sweeps, which run variants in parallel, set 1.
  int threads = 0;
  // Where the model comes from when set: trees shared by the predictions of one sweep (not
  // owned). Unset: the scenario's model is loaded for this prediction alone.
  ModelTreeCache* trees = nullptr;
  // When set: the plan and schedules are taken from the memo when it holds them for a scenario
  // that differs from this one only in what the cost model prices (cluster.gpu,
  // cluster.cost_model), and kept there otherwise (schedule_memo.h; not owned). The figures
  // are the same either way.
  ScheduleMemo* schedules = nullptr;
  // When set: plans shared by the predictions of one sweep (core/plan/plan_cache.h; not owned),
  // keyed by the model tree and what the plan reads of the scenario; used with `trees` only
  // (a tree loaded for one prediction is never asked for again). Unset: planned here.
  PlanCache* plans = nullptr;
  // When set: step bases shared by the predictions of one sweep (core/schedule/step_basis.h; not
  // owned), keyed by the tree, the plan and the micro-batch's shape; used with `trees` only.
  // Unset: each schedule makes its own. The schedules are the same either way.
  StepBasisCache* bases = nullptr;
};

Result<Simulation> SimulateScenario(const Scenario& scenario, const SimulateOptions& options = {});

struct ScenarioPricing {
  std::unique_ptr<CostModel> cost;
  StepContext ctx;
};
// Catalog hardware, calibration and the cuDNN attention figures of `scenario`, and the step
// context of its model `tree`: what SimulateScenario prices with.
Result<ScenarioPricing> PriceScenario(const Scenario& scenario, const ModelTree& tree,
                                      const SimulateOptions& options = {});

// The formats.md §2 summary of `sim` (its timeline, memory and role_metrics filled; prices
// give the overlap stretch when present) for the slowest role.
Summary SummarizeStep(const Simulation& sim, const StepContext& ctx);

// MakeTrace of the simulation, kind "predicted", with the summary, scenario, device and the
// overlap model in its metadata. `tool_version` goes into metadata ("shardscope 0.1.0").
Trace SimulationTrace(const Simulation& sim, const std::string& tool_version);

// The built-in default scenario file (formats.md §1), which `simulate`, `plan` and `sweep` run
// when given none: Llama 3 8B on one node of 8 H100 SXM, FSDP2 over all 8, and torchtitan's
// llama3_8b.toml training settings. kDefaultScenarioSource is its source (the name messages
// and outputs give it), kDefaultScenarioWhat what the commands say they run.
nlohmann::json DefaultScenarioJson();
inline constexpr std::string_view kDefaultScenarioSource = "<built-in default>";
// The built-in default as ParseScenario reads it: its document, the source name messages give
// it, and the directory its relative paths resolve from (the working directory). The one place
// the commands that fall back to it (`simulate`, `plan`, `sweep`) get it from.
struct ScenarioDocument {
  nlohmann::json doc;
  std::string source;
  std::string base_dir;
};
ScenarioDocument DefaultScenarioDocument();
inline constexpr std::string_view kDefaultScenarioWhat =
    "the built-in default (Llama 3 8B on 8 H100 SXM, FSDP2, bf16 params / fp32 reduce, "
    "local_batch 1, seq 8192, selective_op:2 as torchtitan's llama3_8b.toml)";

}  // namespace shardscope::sim
