// What the simulator adds to the step accounting (core/trace/accounting.h, fed from the
// timeline by core/timeline/op_accounting.h): the per-unit all-gather exposure behind the
// summary's "exposed most" warning.
//
// Contents:
//   UnitExposure        how much of one unit's all-gathers ran while compute was idle
//   ExposedAllGathers   per unit, most exposed first
//
// Compute is what the accounting calls compute (WorkKindOf: GPU work that is not a collective,
// copy or host work); an all-gather counts with its copy-in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/timeline/timeline.h"

namespace shardscope::sim {

struct UnitExposure {
  std::string unit;
  int64_t all_gather_ns = 0;  // total duration of its all-gathers (and copy-ins)
  int64_t exposed_ns = 0;     // the part not hidden under compute
};

// Units of `role`, by exposed all-gather time, largest first (ties by unit name).
std::vector<UnitExposure> ExposedAllGathers(const Schedule& schedule, const Timeline& timeline,
                                            int role);

}  // namespace shardscope::sim
