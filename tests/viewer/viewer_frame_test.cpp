// Level 1: whole ImGui frames of the viewer with no renderer (NewFrame → DrawViewerFrame →
// Render, draw data never submitted), driven through ImGuiIO like a user: the mouse wheel
// zooms at the cursor, keys pan and switch modes, the panels record where they drew.
#include <gtest/gtest.h>
#include <imgui.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/viewer/headless_frame.h"
#include "tests/viewer/viewer_test_util.h"
#include "viewer/panels.h"
#include "viewer/viewer_state.h"

namespace shardscope::viewer {
namespace {

class FrameTest : public testing::HeadlessFrameTest {};

TEST_F(FrameTest, PanelsRecordWhereLanesAndPeakAre) {
  Frame();
  Frame();
  const Probes& p = s.probes;
  ASSERT_TRUE(p.timeline_plot.valid());
  EXPECT_FLOAT_EQ(static_cast<float>(s.viewport.width_px), p.timeline_plot.x1 - p.timeline_plot.x0);
  // Two rows (compute, all_gather), each with A above B.
  ASSERT_EQ(p.lane_rects[0].size(), 2u);
  ASSERT_EQ(p.lane_rects[1].size(), 2u);
  EXPECT_LT(p.lane_rects[0][0].y1, p.lane_rects[1][0].y1);
  EXPECT_LT(p.lane_rects[1][0].y1, p.lane_rects[0][1].y1);
  EXPECT_EQ(p.lane_row_lane[0][0], kLaneCompute);
  // The peak of A (55 bytes at 150 ns) is marked; B has no memory counter.
  ASSERT_GE(p.peak_marker_x[0], 0);
  EXPECT_NEAR(p.peak_marker_x[0], p.memory_plot.x0 + s.viewport.TimeToX(150), 1.0);
  EXPECT_LT(p.peak_marker_x[1], 0);
  EXPECT_TRUE(p.first_delta_cell.valid());
  EXPECT_EQ(p.first_delta_ns, 50);  // the top row by impact
}

// What a software renderer is handed stays small: A's memory has three samples, so however
// many pixel columns the panel spans it draws a box per run of columns and a segment per level
// stretch (a box and line points per column would be thousands of vertices).
TEST_F(FrameTest, MemoryPanelDrawsRunsNotColumns) {
  Frame();
  Frame();
  const ImDrawData* d = ImGui::GetDrawData();
  ASSERT_NE(d, nullptr);
  int memory_vertices = -1;
  for (int i = 0; i < d->CmdListsCount; ++i) {
    if (std::string(d->CmdLists[i]->_OwnerName) == "Memory") {
      memory_vertices = d->CmdLists[i]->VtxBuffer.Size;
    }
  }
  ASSERT_GE(memory_vertices, 0) << "no Memory window";
  EXPECT_GT(s.probes.memory_plot.x1 - s.probes.memory_plot.x0, 900);
  EXPECT_LT(memory_vertices, 1500);
}

TEST_F(FrameTest, WheelZoomsAtTheCursorAndKeysPan) {
  Frame();
  Frame();
  const Rect plot = s.probes.timeline_plot;
  ImGuiIO& io = ImGui::GetIO();
  const float x = plot.x0 + 200;
  io.MousePos = ImVec2(x, plot.y0 + 10);
  Frame();  // hover settles
  const int64_t under = s.viewport.XToTime(x - plot.x0);
  const int64_t span = s.viewport.span_ns;
  io.MouseWheel = 1.0f;
  Frame();
  EXPECT_LT(s.viewport.span_ns, span);
  EXPECT_NEAR(static_cast<double>(s.viewport.XToTime(x - plot.x0)), static_cast<double>(under),
              1.0);

  const int64_t start = s.viewport.start_ns;
  io.KeysDown['D'] = true;
  Frame();
  io.KeysDown['D'] = false;
  EXPECT_GT(s.viewport.start_ns, start);  // D moves later
  const int64_t span2 = s.viewport.span_ns;
  io.KeysDown['W'] = true;
  Frame();
  io.KeysDown['W'] = false;
  EXPECT_LT(s.viewport.span_ns, span2);
  io.KeysDown['M'] = true;
  Frame();
  io.KeysDown['M'] = false;
  EXPECT_EQ(s.mode, LaneMode::kOverlaid);
  Frame();
  // Overlaid: one band per row, B in A's lower half.
  ASSERT_EQ(s.probes.lane_rects[1].size(), 2u);
  EXPECT_GT(s.probes.lane_rects[1][0].y0, s.probes.lane_rects[0][0].y0);
  EXPECT_LE(s.probes.lane_rects[1][0].y1, s.probes.lane_rects[0][0].y1 + 1);
}

TEST_F(FrameTest, ClickingThePeakMarkerCentresTheTimelineOnThePeak) {
  s.viewport.Fit(0, 1000, 0);  // the peak (150 ns) is visible, left of the centre
  Frame();
  Frame();
  ASSERT_GE(s.probes.peak_marker_x[0], 0);
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = ImVec2(s.probes.peak_marker_x[0], s.probes.peak_marker_y[0]);
  Frame();
  io.MouseDown[0] = true;
  Frame();
  io.MouseDown[0] = false;
  Frame();
  EXPECT_NEAR(static_cast<double>(s.viewport.start_ns + s.viewport.span_ns / 2), 150.0, 1.0);
  EXPECT_FALSE(s.range.has_value()) << "the click went to the marker, not to a range";
}

TEST_F(FrameTest, DraggingSelectsARangeAndAClickClearsIt) {
  Frame();
  Frame();
  const Rect plot = s.probes.timeline_plot;
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = ImVec2(plot.x0 + 100, plot.y0 + 10);
  Frame();
  io.MouseDown[0] = true;
  Frame();
  io.MousePos = ImVec2(plot.x0 + 400, plot.y0 + 10);
  Frame();
  io.MouseDown[0] = false;
  Frame();
  ASSERT_TRUE(s.range.has_value());
  EXPECT_NEAR(static_cast<double>(s.range->lo_ns), static_cast<double>(s.viewport.XToTime(100)),
              2.0);
  EXPECT_NEAR(static_cast<double>(s.range->hi_ns), static_cast<double>(s.viewport.XToTime(400)),
              2.0);
  io.MouseDown[0] = true;
  Frame();
  io.MouseDown[0] = false;
  Frame();
  EXPECT_FALSE(s.range.has_value());
}

// The timeline's boxes are merged once per view: frames that change nothing reuse them, and
// each of zoom, pan, resize, lane mode, selection and a new prediction rebuilds them.
TEST_F(FrameTest, TimelineBoxesAreRebuiltOnlyWhenTheViewChanges) {
  Frame();
  Frame();
  const TimelineDrawCache& c = s.timeline_cache;
  uint64_t builds = c.builds;
  auto expect_rebuilt = [&](const char* what, bool rebuilt) {
    Frame();
    EXPECT_EQ(c.builds, builds + (rebuilt ? 1 : 0)) << what;
    builds = c.builds;
  };
  expect_rebuilt("nothing changed", false);
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = ImVec2(s.probes.timeline_plot.x0 + 50, s.probes.timeline_plot.y0 + 10);
  expect_rebuilt("hover only", false);
  s.viewport.ZoomAt(100, 0.5);
  expect_rebuilt("zoom", true);
  s.viewport.Pan(7);
  expect_rebuilt("pan", true);
  io.DisplaySize = ImVec2(1000, 800);
  expect_rebuilt("resize", true);
  expect_rebuilt("resized, still", false);
  s.mode = LaneMode::kOverlaid;
  expect_rebuilt("overlaid", true);
  const double span = static_cast<double>(s.viewport.span_ns);
  SelectRow(&s, 0);
  ASSERT_EQ(static_cast<double>(s.viewport.span_ns), span) << "the row fits: no zoom";
  expect_rebuilt("selection", true);
  EXPECT_FALSE(c.outlines.empty());
  SelectRow(&s, -1);
  expect_rebuilt("selection cleared", true);
  EXPECT_TRUE(c.outlines.empty());
  InstallPrediction(&s,
                    std::make_shared<const TraceView>(MakeTraceView(testing::PredictedPair(), "")));
  expect_rebuilt("new prediction", true);
  EXPECT_FALSE(c.ghost.empty());
}

// Each band's pixels are filled once: the background spans are exactly the gaps between boxes,
// idle within the step and "outside" beyond it.
TEST_F(FrameTest, TimelineBackgroundFillsOnlyTheGapsBetweenBoxes) {
  Frame();
  Frame();
  const TimelineDrawCache& c = s.timeline_cache;
  const float width = static_cast<float>(s.viewport.width_px);
  for (int w = 0; w < 2; ++w) {
    for (size_t r = 0; r < c.rows.size(); ++r) {
      std::vector<std::pair<float, float>> pieces;
      for (const TimelineBox& b : c.boxes[w][r]) pieces.push_back({b.x0, b.x1});
      bool any_idle = false;
      for (const TimelineSpan& g : c.background[w][r]) {
        pieces.push_back({g.x0, g.x1});
        any_idle = any_idle || g.idle;
        for (const TimelineBox& b : c.boxes[w][r]) {
          EXPECT_TRUE(g.x1 <= b.x0 || g.x0 >= b.x1) << "background under a box";
        }
      }
      EXPECT_TRUE(any_idle);
      std::sort(pieces.begin(), pieces.end());
      float covered = 0;
      for (const auto& [x0, x1] : pieces) {
        EXPECT_LE(x0, covered + 1e-3f) << "a gap left unfilled";
        covered = std::max(covered, x1);
      }
      EXPECT_NEAR(covered, width, 1e-3f);
    }
  }
}

}  // namespace
}  // namespace shardscope::viewer
