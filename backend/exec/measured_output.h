// A measured step as the outputs `simulate` writes for a predicted one: the formats.md §2
// summary (sim::SummarizeStep: the code whose figures `stats` recomputes from the trace) and
// the §3 trace (core/timeline MakeTrace, kind "measured"), never a second writer of either.
//
// Contents:
//   MeasuredContext     what the run knows besides the step: scenario, pricing, device, world
//   MeasuredOutput      summary (struct and JSON) + trace
//   MakeMeasuredOutput  StepRun + its schedule → MeasuredOutput
//   SteadyStepNs        the median step time of a run's steps after the first
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "backend/device/device.h"
#include "backend/exec/executor.h"
#include "core/schedule/schedule.h"
#include "core/trace/trace.h"
#include "sim/engine/simulator.h"

namespace shardscope::backend {

struct MeasuredContext {
  std::string tool_version;  // "shardscope 0.1.0"
  nlohmann::json scenario;   // resolved scenario
  std::string scenario_gpu;  // the catalog GPU the plan was made for
  int gpus_per_node = 8;
  const sim::ScenarioPricing* pricing = nullptr;  // step context (FLOPs, peak, usable memory)
  DeviceDescription device;
  int world_size = 1;
  int rank = 0;
  std::string communicators;                    // CommFactory::name()
  std::map<std::string, std::string> versions;  // device's and communicators' versions
  // The run's id, the same in every rank's trace (CommFactory::CheckSameInputs); "" writes none.
  std::string run_id;
};

struct MeasuredOutput {
  sim::Summary summary;
  nlohmann::json summary_json;  // SummaryToJson + "kind": "measured" and the run's figures
  Trace trace;
};

Result<MeasuredOutput> MakeMeasuredOutput(const Schedule& schedule, const StepRun& run,
                                          const MeasuredContext& ctx);

// The median of the steps' times after the first (the first warms caches and the allocator;
// the only one when a single step ran; the upper middle of an even count): one step of a
// shared machine can take twice another, so a figure to calibrate on is a median of several.
int64_t SteadyStepNs(const StepRun& run);

}  // namespace shardscope::backend
