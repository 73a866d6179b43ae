// One role's device memory over a step, by category (runtime.md): what the simulator's memory
// tracker predicts and what a backend records, in the form a trace's `memory` counters and
// markers are made from (make_trace.h).
//
// Contents:
//   CategoryBytes   bytes per MemCategory
//   MemorySample    all categories + allocated + reserved at one time
//   RoleMemory      one role's curve, peaks (time, op, breakdown; per step phase too), OOM,
//                   end-of-step state
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/timeline/step_phase.h"

namespace shardscope {

using CategoryBytes = std::array<int64_t, kNumMemCategories>;

struct MemorySample {
  int64_t time_ns = 0;
  CategoryBytes category_bytes{};
  int64_t allocated_bytes = 0;
  int64_t reserved_bytes = 0;
};

struct RoleMemory {
  std::vector<MemorySample> samples;  // one per time at which something changed
  CategoryBytes initial_bytes{};
  // Pinned host memory (Schedule::initial_host_memory: offloaded params, grads, optimizer
  // state). Static over the step: the device-side copies are tracked in the categories above.
  CategoryBytes host_bytes{};
  int64_t host_total_bytes() const {
    int64_t total = 0;
    for (int64_t b : host_bytes) total += b;
    return total;
  }
  CategoryBytes final_bytes{};
  int live_buffers_at_end = 0;  // allocations never freed (beyond initial_memory)

  int64_t peak_allocated_bytes = 0;
  int64_t peak_allocated_time_ns = 0;
  int peak_allocated_op = -1;  // the op whose effect reached the peak; -1: initial state
  CategoryBytes at_peak_allocated{};
  // Each category's own maximum over the step (often reached away from the allocated peak:
  // unsharded parameters in the forward, activations at the loss).
  CategoryBytes max_bytes{};
  // The allocated peak of each phase (StepPhaseOf the op applying an effect), by StepPhase.
  std::array<PhasePeak, kNumStepPhases> phase_peaks{};

  int64_t peak_reserved_bytes = 0;
  int64_t peak_reserved_time_ns = 0;
  int peak_reserved_op = -1;
  CategoryBytes at_peak_reserved{};  // allocated bytes per category when reserved peaked

  bool oom = false;  // reserved would exceed capacity
  int64_t oom_time_ns = 0;
  int oom_op = -1;
  MemCategory oom_category = MemCategory::kTemporaries;  // the allocation that did not fit
  // New segments that met the capacity (the allocator model's free-and-retry, OOM or not).
  int capacity_hits = 0;
};

}  // namespace shardscope
