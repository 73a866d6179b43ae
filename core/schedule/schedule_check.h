// Consistency checks and per-step totals of a Schedule, independent of any timing: used by
// tests, by the simulator before it runs, and by anyone who wants closed-form figures.
//
// Contents:
//   ValidateSchedule   deps point backwards, groups/roles exist, every free matches an
//                      allocation, every transient allocation is freed by the step's end, the
//                      buffer table agrees with the effects (sites, sizes = numel × dtype size,
//                      persistent buffers = initial memory), collective specs agree with
//                      their ops' sizes
//   StepTotals         bytes per collective kind, bus bytes (nccl-tests), FLOPs, op counts
//   ComputeStepTotals  the totals of one role
//   IssueOrderPeak     peak of allocated memory if ops ran one at a time in issue order
//   FormatSchedule     one line per op (index, lane, op_id, bytes, deps, collective spec,
//                      memory) for debugging
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "core/schedule/schedule.h"
#include "core/util/status.h"

namespace shardscope {

// InvalidInput naming the op (index and op_id) and what is wrong.
Status ValidateSchedule(const Schedule& schedule);

struct StepTotals {
  std::map<OpType, int64_t> bytes;     // Σ ScheduleOp::bytes per type (nccl-tests size)
  std::map<OpType, double> bus_bytes;  // per rank on the wire: size × BusBandwidthFactor
                                       // (op_kind.h: (n−1)/n all-gather / reduce-scatter /
                                       // all-to-all, 2(n−1)/n all-reduce, p2p 1, 0 if n = 1)
  std::map<OpType, int> count;         // ops per type
  std::map<std::string, int64_t> collective_bytes_by_id_kind;  // "fwd/all_gather" → bytes
  double fwd_flops = 0;                                        // forward items (not recompute)
  double bwd_flops = 0;
  double recompute_flops = 0;
};

StepTotals ComputeStepTotals(const Schedule& schedule, int role);

// Allocated bytes per category at the highest point of the issue-order replay, and that
// total. Starts from initial_memory. (Not named MemoryPeak: that is core/trace/trace_stats.h's,
// and two classes of one name in one program let the linker keep one's inline constructor for
// both, which left a trace's peak unconstructed under clang's ASan build.)
struct IssueOrderMemory {
  int64_t total_bytes = 0;
  std::array<int64_t, kNumMemCategories> by_category{};
  std::array<int64_t, kNumMemCategories> max_by_category{};  // each category's own maximum
};
IssueOrderMemory IssueOrderPeak(const Schedule& schedule, int role);

std::string FormatSchedule(const Schedule& schedule, int role);

}  // namespace shardscope
