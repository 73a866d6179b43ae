// Everything the panels read and change between frames, with the operations that keep its
// parts consistent (new traces, a new prediction, a selected row, a selected range).
//
// Contents:
//   Probes          screen rectangles the draw code records, for the screenshot tests
//   RowIndex        (rank, op_id) → comparison row
//   ViewerState     traces, viewport, lane mode, range, comparison rows, selection, tuning
//   SetTraces       installs A (predicted) and B (measured) and fits the viewport
//   InstallPrediction  a new prediction becomes A, the previous one the ghost
//   SetRange / ClearRange   the range every panel is limited to
//   SortRows        reorders the table, keeping the selection
//   SelectRow       highlights a row's operation and brings it into view
//   FindRow         the comparison row of one trace's operation
//   VisibleRowIndices  the comparison rows inside the range
//   StepTuning      once per frame: takes a finished prediction from the tuner
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/flat_index.h"
#include "viewer/compare_model.h"
#include "viewer/summary_model.h"
#include "viewer/timeline_cache.h"
#include "viewer/timeline_model.h"
#include "viewer/trace_view.h"
#include "viewer/tuner.h"
#include "viewer/viewport.h"

namespace shardscope::viewer {

struct Rect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool valid() const { return x1 > x0 && y1 > y0; }
};

// Where things were drawn in the last frame (screen pixels, origin top-left).
struct Probes {
  Rect timeline_plot;                 // the timeline's plot area
  std::vector<Rect> lane_rects[2];    // per trace, per timeline row: the sub-band drawn
  std::vector<int> lane_row_lane[2];  // the lane id of each recorded sub-band
  Rect memory_plot;
  float peak_marker_x[2] = {-1, -1};  // per trace; -1 when not drawn
  float peak_marker_y[2] = {-1, -1};
  Rect first_delta_cell;       // the delta cell of the first visible table row
  int64_t first_delta_ns = 0;  // that row's delta
};

// (rank, op_id StrId) → comparison row, in a FlatIndex: a pair of million-event traces has a
// quarter of a million rows, indexed again at every new prediction.
class RowIndex {
 public:
  // Empties the index, sized for `rows` entries.
  void Reset(size_t rows);
  // Sets the row of (rank, op_id); a second call for one key replaces the first.
  void Set(int rank, StrId op_id, int row);
  // The row of (rank, op_id), or -1.
  int Find(int rank, StrId op_id) const;

 private:
  FlatIndex index_;
};

struct ViewerState {
  std::shared_ptr<const TraceView> a, b;   // A: predicted, B: measured (either may be null)
  std::shared_ptr<const TraceView> ghost;  // the prediction before the last tuning change
  uint64_t traces_generation = 0;          // counts SetTraces and InstallPrediction calls
  Viewport viewport;
  LaneMode mode = LaneMode::kStacked;
  std::optional<TimeRange> range;
  std::optional<int64_t> drag_anchor_ns;  // a range selection in progress
  int drag_plot = -1;                     // the plot that started it (0 timeline, 1 memory)
  double cursor_x_px = -1;                // the cursor over a plot this frame (-1: none)

  std::vector<CompareRow> rows;
  CompareColumn sort_column = CompareColumn::kImpact;
  bool sort_descending = true;
  int selected_row = -1;                     // index into rows
  std::vector<uint32_t> selected_events[2];  // the selected row's events in A and in B
  RowIndex row_of[2];                        // per trace: (rank, op_id StrId) → row
  SummaryFigures summary[2];

  // Tuning (with --scenario).
  std::unique_ptr<Tuner> tuner;
  TuningKnobs knobs;
  std::string tuning_error;        // the last request's message; empty when it succeeded
  uint64_t tuning_generation = 0;  // of the prediction shown
  double tuning_seconds = 0;
  std::string save_path = "tuned_scenario.json";
  std::string save_message;

  bool headless = false;
  Probes probes;
  TimelineDrawCache timeline_cache;  // the timeline's boxes at the last view
};

// The row of trace `which`'s op `op_id` (an id of that trace's strings, or the text) on
// `rank`, or -1.
int FindRow(const ViewerState& s, int which, int rank, StrId op_id);
int FindRow(const ViewerState& s, int which, int rank, std::string_view op_id);

void SetTraces(ViewerState* s, std::shared_ptr<const TraceView> a,
               std::shared_ptr<const TraceView> b);
void InstallPrediction(ViewerState* s, std::shared_ptr<const TraceView> prediction);
void SetRange(ViewerState* s, TimeRange range);
void ClearRange(ViewerState* s);
void SelectRow(ViewerState* s, int row);
// Reorders the comparison rows; the selected operation stays selected.
void SortRows(ViewerState* s, CompareColumn column, bool descending);
std::vector<int> VisibleRowIndices(const ViewerState& s);
// True when a new prediction (or error) arrived.
bool StepTuning(ViewerState* s);

}  // namespace shardscope::viewer
