// The viewer's panels, one file each, drawn with Dear ImGui over a ViewerState. Each Draw*
// call fills the current ImGui window; DrawViewerFrame places the windows and calls them all.
//
// Contents:
//   KindColor            an item kind's colour (shared by the timeline, legend and table)
//   DeltaColor           the comparison table's delta cell colour
//   DrawTimelinePanel    rows per rank and lane, zoom/pan/range selection, hover
//   (timeline_panel.cpp) DrawMemoryPanel      stacked categories, allocated / reserved, HBM limit,
//   peaks (memory_panel.cpp) DrawComparePanel     op_id join table, sortable, row selection
//   (compare_panel.cpp) DrawSummaryPanel     headline figures of both traces and their errors
//   (summary_panel.cpp) DrawTuningPanel      the knobs, re-simulation status, save button
//   (tuning_panel.cpp) DrawViewerFrame      one frame: every window at its place for the display
//   size (frame.cpp)
//
// Input (timeline and memory plots): wheel or W/S zooms at the cursor, A/D pans, right-drag
// pans, left-drag selects a range (a click clears it), M toggles stacked/overlaid lanes.
#pragma once

#include <imgui.h>

#include "viewer/trace_view.h"
#include "viewer/viewer_state.h"

namespace shardscope::viewer {

ImU32 KindColor(ItemKind kind, bool merged = false);
// The comparison table's delta cell colour: red when B took longer, green when shorter.
ImU32 DeltaColor(double delta_pct);

// Width of the label column left of the timeline and memory plots, so their x axes align.
inline constexpr float kLabelColumnPx = 150.0f;

void DrawTimelinePanel(ViewerState* s);
// Pixels the timeline's ruler and rows take (the frame gives spare height to the other panels);
// brings the timeline's cached boxes up to date.
float TimelineContentHeight(ViewerState* s);
void DrawMemoryPanel(ViewerState* s);
void DrawComparePanel(ViewerState* s);
void DrawSummaryPanel(ViewerState* s);
void DrawTuningPanel(ViewerState* s);
void DrawViewerFrame(ViewerState* s);

// Shared by the timeline (plot 0) and memory (plot 1) plots: wheel zoom, drags, range.
void HandlePlotInput(ViewerState* s, float plot_x0, bool hovered, int plot);
// The range shading and the step-start line over a plot.
void DrawRangeOverlay(const ViewerState& s, ImDrawList* dl, float x0, float y0, float y1);

}  // namespace shardscope::viewer
