// Replays a timed step's MemoryEffects to get each role's memory over time: allocated bytes
// per category (exactly as the schedule gives them) and a reserved estimate from a model of
// PyTorch's caching allocator (caching_allocator.h).
//
// Contents:
//   MemoryOptions   capacity (usable HBM) and whether to keep the full curve
//   TrackMemory     the replay → one RoleMemory per role (core/timeline/memory_series.h:
//                   samples of all categories + allocated + reserved, peaks overall and per
//                   step phase (core/timeline/step_phase.h), OOM, end state)
//
// Effects apply in the engine's processing order (Timeline::log), start effects when the op
// starts, end effects when it ends. `initial_memory` is live from time 0 (allocated as one
// block per category on the compute stream). An allocation with a buffer id is freed by the
// effect naming the same buffer; one without an id (-1) by a later free of the same category
// and size (last allocated first). Allocations are cached per stream = the op's lane.
#pragma once

#include <cstdint>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/timeline/memory_series.h"
#include "core/util/status.h"
#include "sim/engine/caching_allocator.h"
#include "sim/engine/engine.h"

namespace shardscope::sim {

struct MemoryOptions {
  int64_t capacity_bytes = 0;  // usable device memory; <= 0: unlimited
  bool keep_samples = true;    // false: peaks only (sweeps)
  // Threads the replay may use: roles replay apart (each has its own allocator), so a
  // pipeline's stages split over them. The same figures for any count.
  int threads = 1;
  AllocatorConfig allocator = {};  // PYTORCH_CUDA_ALLOC_CONF (expandable segments)
};

// Errors (InvalidInput) name the op: a free of a buffer that is not live or of an anonymous
// allocation that never happened, a size or category mismatch, a buffer allocated twice.
Result<std::vector<RoleMemory>> TrackMemory(const Schedule& schedule, const Timeline& timeline,
                                            const MemoryOptions& options);

}  // namespace shardscope::sim
