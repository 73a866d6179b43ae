// Replays a timed step's MemoryEffects to get each role's memory over time: allocated bytes
// per category (exactly as the schedule gives them) and a reserved estimate from a model of
// PyTorch's caching allocator (caching_allocator.h).
//
// Contents:
//   MemoryOptions   capacity (usable HBM) and whether to keep the full curve
//   MemorySample    all categories + allocated + reserved at one time
//   RoleMemory      one role's curve, peaks (time, op, breakdown), OOM, end-of-step state
//   TrackMemory     the replay
//
// Effects apply in the engine's processing order (Timeline::log), start effects when the op
// starts, end effects when it ends. `initial_memory` is live from time 0 (allocated as one
// block per category on the compute stream). An allocation with a buffer id is freed by the
// effect naming the same buffer; one without an id (-1) by a later free of the same category
// and size (last allocated first). Allocations are cached per stream = the op's lane.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/util/status.h"
#include "sim/engine/engine.h"

namespace shardscope::sim {

using CategoryBytes = std::array<int64_t, kNumMemCategories>;

struct MemoryOptions {
  int64_t capacity_bytes = 0;  // usable device memory; <= 0: unlimited
  bool keep_samples = true;    // false: peaks only (sweeps)
};

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
  int64_t host_total_bytes() const;
  CategoryBytes final_bytes{};
  int live_buffers_at_end = 0;        // allocations never freed (beyond initial_memory)

  int64_t peak_allocated_bytes = 0;
  int64_t peak_allocated_time_ns = 0;
  int peak_allocated_op = -1;          // the op whose effect reached the peak; -1: initial state
  CategoryBytes at_peak_allocated{};

  int64_t peak_reserved_bytes = 0;
  int64_t peak_reserved_time_ns = 0;
  int peak_reserved_op = -1;
  CategoryBytes at_peak_reserved{};    // allocated bytes per category when reserved peaked

  bool oom = false;                    // reserved would exceed capacity
  int64_t oom_time_ns = 0;
  int oom_op = -1;
  MemCategory oom_category = MemCategory::kTemporaries;  // the allocation that did not fit
};

// Errors (InvalidInput) name the op: a free of a buffer that is not live or of an anonymous
// allocation that never happened, a size or category mismatch, a buffer allocated twice.
Result<std::vector<RoleMemory>> TrackMemory(const Schedule& schedule, const Timeline& timeline,
                                            const MemoryOptions& options);

}  // namespace shardscope::sim
