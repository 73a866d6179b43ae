// Schedules shared by predictions whose scenarios differ only in what the cost model prices.
//
// The plan and the schedule are functions of the model, the mesh and the training and FSDP
// settings; nothing in core/plan or core/schedule reads the hardware catalog or a calibration.
// So scenarios that differ only in `cluster.gpu` or `cluster.cost_model` (a sweep or a plan
// search comparing GPUs) have one plan and one schedule per simulated run, and one memory floor
// each; only pricing, the engine, the replay and the summary differ. A memo keeps them for the
// next prediction of such a scenario (SimulateOptions::schedules), which copies what it needs
// instead of planning and building again (the last of them takes it: HandOverNext). The figures
// are the same as without it: the copy is the schedule that a build would give
// (tests/engine/schedule_memo_test.cpp).
//
// One memo holds one key's plan and runs at a time (Bind drops another key's); it is not
// thread-safe: a sweep gives each group of variants its own (sim/explore/sweep.cpp).
//
// Example:
//   ScheduleMemo memo;
//   SimulateOptions options;
//   options.schedules = &memo;
//   for (const Scenario& gpu_variant : variants) Use(SimulateScenario(gpu_variant, options));
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/scenario.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "sim/engine/memory_floor.h"

namespace shardscope::sim {

class ScheduleMemo {
 public:
  // A run's schedule and, once asked for, its memory floor.
  struct Run {
    Schedule schedule;
    bool taken = false;  // the schedule was handed over (HandOverNext)
    std::optional<MemoryFloor> floor;
  };
  // The run of the scenario's own micro-batches; any other run is its micro-batch count
  // (steady_state.h, WithMicroBatches).
  static constexpr int kWholeStep = -1;

  // What the plan and schedules of `scenario` depend on: its resolved form (every field, with
  // defaults and derived values) less the fields only the cost model reads (`cluster.gpu`,
  // `cluster.cost_model`).
  static std::string KeyOf(const Scenario& scenario);
  // Whether an override ("cluster.gpu=h200") sets one of those fields: variants whose overrides
  // differ only in such ones may share a memo (sweeps, recommend).
  static bool PricesOnly(std::string_view override_text);
  // What a variant's schedules depend on, read off its overrides: all of them but the PricesOnly
  // ones, in order, one per line. Variants with equal keys may share a memo (a sweep's groups,
  // recommend's order).
  static std::string OverridesKey(const std::vector<std::string>& overrides);

  // Makes `key` current: what was kept for another key is dropped.
  void Bind(const std::string& key);

  // The plan kept for the current key, or null.
  const std::shared_ptr<const Plan>& plan() const { return plan_; }
  void KeepPlan(std::shared_ptr<const Plan> plan);

  // The run kept for the current key, or nullptr. After HandOverNext its schedule may have been
  // taken (Use): the floor stays.
  Run* Find(int run);
  Run& Keep(int run, Schedule schedule);
  // The schedule kept for `run`, for a prediction to consume: a copy, or after HandOverNext the
  // kept schedule itself (no longer kept; a later Use of `run` gets nullopt). nullopt: none kept.
  std::optional<Schedule> Use(int run);
  // From now on predictions take the kept schedules instead of copying them: called before a
  // sweep group's last variant, it saves one copy per run and group. A prediction after the
  // one that took a run builds it again.
  void HandOverNext() { hand_over_ = true; }

  // Plans and schedules kept since construction (each was built once): what tests count.
  int64_t plans_kept() const { return plans_kept_; }
  int64_t runs_kept() const { return runs_kept_; }

 private:
  std::string key_;
  bool bound_ = false;
  bool hand_over_ = false;
  std::shared_ptr<const Plan> plan_;
  std::map<int, Run> runs_;
  int64_t plans_kept_ = 0;
  int64_t runs_kept_ = 0;
};

}  // namespace shardscope::sim
