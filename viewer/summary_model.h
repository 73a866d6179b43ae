// The summary panel's figures for one trace, over its whole step or over a selected range.
//
// Contents:
//   SummaryFigures     step time, exposed communication, overlap, peak allocated / reserved
//   ComputeSummary     TraceView (+ range) → SummaryFigures
//   RelativeError      (b − a) / a, the panel's error column (none when only a is 0)
//
// Whole trace: the headlines of ComputeStats (worst rank's mean step). A range: the range's
// length as the step, and per rank the work inside it classified by kind (ClassifyEvent) and
// accounted by RankAccounting (exposed = communication no compute covers), the worst rank
// reported: the same rules as `stats`, cut to the range.
#pragma once

#include <cstdint>
#include <optional>

#include "viewer/trace_view.h"

namespace shardscope::viewer {

struct SummaryFigures {
  int64_t step_ns = 0;
  int64_t exposed_comm_ns = 0;
  double overlap_ratio = 0;  // hidden communication / communication (0 without communication)
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  bool has_memory = false;
};

struct TimeRange {
  int64_t lo_ns = 0, hi_ns = 0;  // relative to each trace's origin
};

SummaryFigures ComputeSummary(const TraceView& view, const std::optional<TimeRange>& range);

// (b − a) / a; 0 when a is 0.
std::optional<double> RelativeError(double a, double b);

}  // namespace shardscope::viewer
