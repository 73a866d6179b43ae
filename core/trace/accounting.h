// The time accounting of one rank's step: the one implementation behind the summary's time
// figures (formats.md §2) and `stats` (trace_stats.h). It takes the rank's work as intervals
// with kinds (work_kind.h), so two feeders share it: the simulator straight from a Schedule and
// its Timeline (core/timeline/op_accounting.h), `stats` from a trace's events; for the trace
// written from that timeline both give the same figures to the nanosecond.
//
// Contents:
//   WorkSpan        one piece of work: [start_ns, end_ns) and its WorkKind
//   StepAccount     the figures of one window (a step) of one rank
//   RankAccounting  a rank's work as one interval set per kind; Window() accounts a step
//
// Definitions (exact interval arithmetic, intervals.h): compute = union of compute work;
// host = union of host work (the GPU is idle meanwhile); comm = union of the communication
// kinds; exposed = comm − compute; overlapped = comm ∩ compute; busy = union of all GPU work
// (compute, communication, copies); exposed copies = copies − (compute ∪ comm); idle = window −
// busy, so compute + exposed + exposed copies + idle = window. Per kind: busy = union of that kind,
// exposed = that union − compute (communication kinds and copies). Per purpose (comm_purpose.h):
// the same two figures over the collectives of that purpose. ExposedNs: the part of one span
// no compute covers (an op's own exposure, for the exposed-collective lists).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "core/trace/comm_purpose.h"
#include "core/trace/intervals.h"
#include "core/trace/work_kind.h"

namespace shardscope {

struct WorkSpan {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  WorkKind kind = WorkKind::kCompute;
  CommPurpose purpose = CommPurpose::kNone;  // communication kinds only
};

struct StepAccount {
  int64_t start_ns = 0, end_ns = 0;
  int64_t step_ns = 0;  // end − start
  int64_t busy_ns = 0;
  int64_t idle_ns = 0;
  int64_t compute_ns = 0;
  int64_t host_ns = 0;
  int64_t comm_ns = 0;
  int64_t exposed_comm_ns = 0;
  int64_t overlapped_comm_ns = 0;
  int64_t exposed_copy_ns = 0;  // h2d / d2h copies while neither compute nor communication runs
  std::array<int64_t, kNumWorkKinds> busy_by_kind_ns{};
  std::array<int64_t, kNumWorkKinds> exposed_by_kind_ns{};     // 0 for compute and host
  std::array<int64_t, kNumCommPurposes> busy_by_purpose_ns{};  // kNone's entry stays 0
  std::array<int64_t, kNumCommPurposes> exposed_by_purpose_ns{};
  // overlapped / comm (0 without communication).
  double overlap_ratio() const {
    return comm_ns > 0 ? static_cast<double>(overlapped_comm_ns) / static_cast<double>(comm_ns)
                       : 0.0;
  }
};

class RankAccounting {
 public:
  explicit RankAccounting(std::span<const WorkSpan> work);
  // The figures of [start_ns, end_ns) (work outside it is cut off).
  StepAccount Window(int64_t start_ns, int64_t end_ns) const;
  // The part of [start_ns, end_ns) that no compute work covers.
  int64_t ExposedNs(int64_t start_ns, int64_t end_ns) const;

 private:
  // `set` inside the window: `set` itself when the window holds all the work (a step of a
  // simulated rank: no copies), else the clipped copy kept in `storage`.
  const IntervalSet& Clipped(const IntervalSet& set, int64_t start_ns, int64_t end_ns,
                             IntervalSet* storage) const;

  std::array<IntervalSet, kNumWorkKinds> by_kind_;
  std::array<IntervalSet, kNumCommPurposes> by_purpose_;
  const IntervalSet& compute_set() const { return by_kind_[static_cast<int>(WorkKind::kCompute)]; }

  IntervalSet comm_, busy_, compute_or_comm_;
  int64_t first_ns_ = 0, last_ns_ = 0;  // extent of all work
};

}  // namespace shardscope
