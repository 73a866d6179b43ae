// The timeline's boxes at one view, kept between frames: the rows, per row and trace the boxes
// in plot pixels (items narrower than the merge width folded), the idle gaps between them, the
// ghost strips and the selection outlines. Rebuilt only when what they depend on changes (the
// traces, zoom, pan, plot width, lane mode, selected row); any other frame only emits them, so
// holding still or hovering costs no merging however many events the traces hold.
//
// Contents:
//   TimelineBox          one box, pixels from the plot's left, with the items it stands for
//   TimelineSpan         a background stretch (idle within the step, or outside it)
//   TimelineOutline      a selected event's outline on one row and trace
//   TimelineDrawKey      what the boxes depend on
//   TimelineDrawCache    the boxes of the last key, and how many times they were built
//   UpdateTimelineCache  rebuilds when the key differs; true when it rebuilt
#pragma once

#include <cstdint>
#include <vector>

#include "viewer/timeline_model.h"
#include "viewer/trace_view.h"
#include "viewer/viewport.h"

namespace shardscope::viewer {

struct ViewerState;

struct TimelineBox {
  float x0 = 0, x1 = 0;  // pixels from the plot's left, within [0, width]; at least 1 px wide
  uint32_t first = 0;    // index into the track's items of the first item
  uint32_t count = 1;    // items folded into the box (> 1: merged)
  ItemKind kind = ItemKind::kCompute;
};

struct TimelineSpan {
  float x0 = 0, x1 = 0;
  bool idle = true;  // false: before the step start or after the trace's end
};

struct TimelineOutline {
  int row = 0, trace = 0;  // index into TimelineDrawCache::rows; 0 = A, 1 = B
  float x0 = 0, x1 = 0;    // may reach past the plot (the clip rectangle cuts it)
};

struct TimelineDrawKey {
  const TraceView* views[3] = {nullptr, nullptr, nullptr};  // A, B, ghost
  uint64_t traces_generation = 0;
  int64_t start_ns = 0, span_ns = 0;
  double width_px = 0;
  LaneMode mode = LaneMode::kStacked;
  int selected_row = -1;
  float row_px = 0, gap_px = 0;
  double merge_px = 0;

  bool operator==(const TimelineDrawKey&) const = default;
};

struct TimelineDrawCache {
  TimelineDrawKey key;
  bool built = false;
  uint64_t builds = 0;  // how many times it was rebuilt (the tests watch it)
  std::vector<TimelineRow> rows;
  // Per row and trace: the boxes left to right, and the background where no box is (only the
  // band that fills it: both in stacked mode, A's in overlaid mode).
  std::vector<std::vector<TimelineBox>> boxes[2];
  std::vector<std::vector<TimelineSpan>> background[2];
  std::vector<std::vector<TimelineBox>> ghost;  // per row: the previous prediction's boxes
  std::vector<TimelineOutline> outlines;
};

// Brings `cache` up to date with `s` at the given geometry; true when it rebuilt.
bool UpdateTimelineCache(const ViewerState& s, float row_px, float gap_px, double merge_px,
                         TimelineDrawCache* cache);

}  // namespace shardscope::viewer
