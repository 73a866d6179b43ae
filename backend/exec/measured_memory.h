// The measured memory series of one executed step: the schedule's memory effects as the
// executor applied them, each with the allocator's reserved bytes right after it, placed at
// the measured start / end time of its op. Allocated bytes are the effects' (exactly the
// schedule's sizes); reserved bytes are the device allocator's.
//
// Contents:
//   MemoryLogEntry     one applied effect
//   BuildRoleMemory    log + timeline + initial state → RoleMemory (core/timeline/memory_series.h)
#pragma once

#include <cstdint>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/timeline/memory_series.h"
#include "core/timeline/timeline.h"

namespace shardscope::backend {

struct MemoryLogEntry {
  int op = -1;
  bool at_start = true;
  MemCategory category = MemCategory::kTemporaries;
  int64_t delta = 0;           // bytes: > 0 allocated, < 0 freed
  int64_t reserved_after = 0;  // the allocator's reserved bytes once it applied
  bool failed = false;         // the allocation that ran out of memory
};

// `initial` / `host` are the role's Schedule::initial_memory / initial_host_memory;
// `initial_reserved` what the allocator reserved before the step's first effect.
RoleMemory BuildRoleMemory(const std::vector<MemoryLogEntry>& log, const Timeline& timeline,
                           const CategoryBytes& initial, const CategoryBytes& host,
                           int64_t initial_reserved, int live_buffers_at_end);

}  // namespace shardscope::backend
