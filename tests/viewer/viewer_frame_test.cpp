// Level 1: whole ImGui frames of the viewer with no renderer (NewFrame → DrawViewerFrame →
// Render, draw data never submitted), driven through ImGuiIO like a user: the mouse wheel
// zooms at the cursor, keys pan and switch modes, the panels record where they drew.
#include <gtest/gtest.h>
#include <imgui.h>

#include <memory>
#include <string>

#include "tests/viewer/viewer_test_util.h"
#include "viewer/panels.h"
#include "viewer/viewer_state.h"

namespace shardscope::viewer {
namespace {

class FrameTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1200, 800);
    io.DeltaTime = 1.0f / 60;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    SetTraces(&s, std::make_shared<const TraceView>(MakeTraceView(testing::PredictedPair(), "")),
              std::make_shared<const TraceView>(MakeTraceView(testing::MeasuredPair(), "")));
  }
  void TearDown() override { ImGui::DestroyContext(); }
  void Frame() {
    ImGui::NewFrame();
    DrawViewerFrame(&s);
    ImGui::Render();
  }
  ViewerState s;
};

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

}  // namespace
}  // namespace shardscope::viewer
