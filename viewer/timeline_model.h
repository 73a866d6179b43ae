// The timeline's geometry without any drawing: which rows exist, where each trace's items of a
// row go vertically, and which item a pixel falls on. The draw code and the tests share it.
//
// Contents:
//   LaneMode          the two traces stacked per lane, or overlaid in one row
//   TimelineRow       one (rank, lane): the band and each trace's sub-band (pixels from the top)
//   LayoutTimeline    TraceView × TraceView → rows
//   TimelineHit       the item a point falls on
//   HitTest           row × trace × viewport × x → the item (merged boxes answer their first)
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "viewer/merge.h"
#include "viewer/trace_view.h"
#include "viewer/viewport.h"

namespace shardscope::viewer {

enum class LaneMode { kStacked, kOverlaid };

struct TimelineRow {
  int rank = 0, lane = 0;
  const Track* track[2] = {nullptr, nullptr};    // per trace (A, B); null when absent
  float y0 = 0, y1 = 0;                          // the whole band
  float sub_y0[2] = {0, 0}, sub_y1[2] = {0, 0};  // where each trace's boxes go
};

// Rows by (rank, lane) over both traces. Stacked: A above B, `row_px` each; overlaid: one
// `row_px` band with A full height and B in its lower half. Either trace may be null.
std::vector<TimelineRow> LayoutTimeline(const TraceView* a, const TraceView* b, LaneMode mode,
                                        float row_px, float gap_px);

struct TimelineHit {
  int trace = 0;        // 0 = A, 1 = B
  uint32_t event = 0;   // index into that Trace::events
  uint32_t merged = 1;  // items of the box under the point
};

// The item of `row`'s trace `which` at x (pixels from the plot's left), merging at `merge_px`.
std::optional<TimelineHit> HitTest(const TimelineRow& row, int which, const Viewport& viewport,
                                   double x_px, double merge_px);

}  // namespace shardscope::viewer
