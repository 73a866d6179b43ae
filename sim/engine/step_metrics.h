// Time accounting of one simulated rank over a step, by exact interval arithmetic
// (intervals.h): compute, communication by kind, exposed communication, overlap, idle.
//
// Contents:
//   CommKind / CommKindName   what a non-compute op is counted as
//   StepMetrics               the figures of one role
//   ComputeStepMetrics        Timeline → StepMetrics for one role
//   UnitExposure              how much of one unit's all-gathers ran while compute was idle
//   ExposedAllGathers         per unit, most exposed first
//
// Definitions: compute = union of compute and optimizer ops (any lane) that run on the GPU;
// host = union of ops with on_host (the offloaded optimizer step: the GPU is idle meanwhile). Communication = union
// of collectives and copies (copy-in counts as part of its all-gather; h2d/d2h as their own
// kinds). Exposed = communication − compute; overlapped = communication ∩ compute;
// idle = step − (compute ∪ communication). TP/CP/EP collectives issued on the compute lane
// count as communication, not compute.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/schedule/schedule.h"
#include "sim/engine/engine.h"

namespace shardscope::sim {

enum class CommKind : int { kAllGather, kReduceScatter, kAllReduce, kAllToAll, kP2P, kH2D, kD2H };
constexpr int kNumCommKinds = 7;
// "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "p2p", "h2d", "d2h".
std::string_view CommKindName(CommKind kind);
// The kind an op counts as, or -1 for compute / waits.
int CommKindOf(OpType type);

struct StepMetrics {
  int64_t step_ns = 0;        // the role's last end (step starts at 0)
  int64_t compute_ns = 0;
  int64_t host_ns = 0;        // CPU work (on_host ops); counted in idle_ns, not compute_ns
  int64_t comm_ns = 0;        // union over all kinds
  int64_t exposed_comm_ns = 0;
  int64_t overlapped_comm_ns = 0;
  int64_t idle_ns = 0;
  std::array<int64_t, kNumCommKinds> comm_by_kind_ns{};     // union per kind
  std::array<int64_t, kNumCommKinds> exposed_by_kind_ns{};  // (union per kind) − compute
  double overlap_ratio() const {
    return comm_ns > 0 ? static_cast<double>(overlapped_comm_ns) / static_cast<double>(comm_ns) : 0.0;
  }
};

StepMetrics ComputeStepMetrics(const Schedule& schedule, const Timeline& timeline, int role);

struct UnitExposure {
  std::string unit;
  int64_t all_gather_ns = 0;  // total duration of its all-gathers (and copy-ins)
  int64_t exposed_ns = 0;     // the part not hidden under compute
};

// Units of `role`, by exposed all-gather time, largest first (ties by unit name).
std::vector<UnitExposure> ExposedAllGathers(const Schedule& schedule, const Timeline& timeline,
                                            int role);

}  // namespace shardscope::sim
