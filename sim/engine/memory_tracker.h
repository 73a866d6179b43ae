// Replays a timed step's MemoryEffects to get each role's memory over time: allocated bytes
// per category (exactly as the schedule gives them) and a reserved estimate from a model of
// PyTorch's caching allocator (caching_allocator.h).
//
// Contents:
//   MemoryOptions   capacity (usable HBM) and whether to keep the full curve
//   TrackMemory     the replay → one RoleMemory per role (core/timeline/memory_series.h:
//                   samples of all categories + allocated + reserved, peaks overall and per
//                   step phase (core/timeline/step_phase.h), OOM, end state)
//   AllocatorCall(s)  one role's calls on its allocator model, in the replay's order, as
//                   TrackMemory records them on request: all the reserve depends on
//   ReplayAllocatorCalls  those calls again, on a fresh allocator model → the reserve
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

// One call on a role's caching allocator model. The reserve is a function of these calls alone
// (their sizes, streams and order; not of categories or times), which is what lets the
// steady-state fast path build a long step's calls from two short runs' (reserve_splice.h).
struct AllocatorCall {
  int64_t bytes = 0;   // > 0: allocates that many bytes; < 0: frees an allocation of -bytes
  int32_t stream = 0;  // an allocation's stream (its op's lane)
  int32_t alloc = -1;  // a free: which allocation, by its index among the role's allocations
};
using AllocatorCalls = std::vector<AllocatorCall>;

// Errors (InvalidInput) name the op: a free of a buffer that is not live or of an anonymous
// allocation that never happened, a size or category mismatch, a buffer allocated twice.
// With `calls`, also each role's allocator calls (one list per role; the allocations of
// `initial_memory` are not among them: ReplayAllocatorCalls makes those as the replay does).
Result<std::vector<RoleMemory>> TrackMemory(const Schedule& schedule, const Timeline& timeline,
                                            const MemoryOptions& options,
                                            std::vector<AllocatorCalls>* calls = nullptr);

// What a role's allocator model does with `calls` after the allocations of `initial` (its
// initial memory), with TrackMemory's capacity and settings: the same reserve as the replay
// that recorded them (tests/engine/reserve_splice_test.cpp).
struct ReplayedReserve {
  int64_t peak_reserved_bytes = 0;
  int capacity_hits = 0;  // new segments that met the capacity
  int oom_count = 0;
};
ReplayedReserve ReplayAllocatorCalls(const AllocatorCalls& calls, const CategoryBytes& initial,
                                     const MemoryOptions& options);

}  // namespace shardscope::sim
