// One frame of the viewer: the windows at fixed places for the display size (timeline across
// the top, memory below it on the same time axis, then the table, summary and tuning panels),
// the keys that act on the whole view, and the kind colours.
#include <algorithm>
#include <cmath>

#include "viewer/panels.h"

namespace shardscope::viewer {

ImU32 KindColor(ItemKind kind, bool merged) {
  ImU32 c = IM_COL32(128, 128, 128, 255);
  switch (kind) {
    case ItemKind::kCompute:
      c = IM_COL32(70, 130, 220, 255);
      break;
    case ItemKind::kAllGather:
      c = IM_COL32(60, 190, 90, 255);
      break;
    case ItemKind::kReduceScatter:
      c = IM_COL32(235, 140, 40, 255);
      break;
    case ItemKind::kAllReduce:
      c = IM_COL32(200, 70, 200, 255);
      break;
    case ItemKind::kP2P:
      c = IM_COL32(40, 200, 200, 255);
      break;
    case ItemKind::kCopy:
      c = IM_COL32(190, 190, 100, 255);
      break;
    case ItemKind::kCount:
      break;
  }
  if (!merged) return c;
  // Merged runs: the same hue, darker, so density shows without hiding the kind.
  const ImVec4 f = ImGui::ColorConvertU32ToFloat4(c);
  return ImGui::ColorConvertFloat4ToU32(ImVec4(f.x * 0.7f, f.y * 0.7f, f.z * 0.7f, 1.0f));
}

namespace {

// W/S zoom at the cursor (the view's centre when the cursor is off the plots), A/D pan,
// M switches stacked/overlaid, Escape clears the range and the selection.
void HandleKeys(ViewerState* s) {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;
  Viewport& vp = s->viewport;
  const double x = s->cursor_x_px >= 0 ? s->cursor_x_px : vp.width_px / 2;
  const double per_frame = std::clamp(static_cast<double>(io.DeltaTime) * 60.0, 0.1, 4.0);
  if (ImGui::IsKeyDown('W')) vp.ZoomAt(x, std::pow(0.92, per_frame));
  if (ImGui::IsKeyDown('S')) vp.ZoomAt(x, std::pow(1.0 / 0.92, per_frame));
  if (ImGui::IsKeyDown('A')) vp.Pan(0.04 * vp.width_px * per_frame);
  if (ImGui::IsKeyDown('D')) vp.Pan(-0.04 * vp.width_px * per_frame);
  if (ImGui::IsKeyPressed('M', false)) {
    s->mode = s->mode == LaneMode::kStacked ? LaneMode::kOverlaid : LaneMode::kStacked;
  }
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) {
    ClearRange(s);
    SelectRow(s, -1);
  }
}

void Place(const char* name, float x, float y, float w, float h) {
  ImGui::SetNextWindowPos(ImVec2(x, y));
  ImGui::SetNextWindowSize(ImVec2(w, h));
  ImGui::Begin(name, nullptr,
               ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus);
}

}  // namespace

void DrawViewerFrame(ViewerState* s) {
  StepTuning(s);
  s->cursor_x_px = -1;
  const ImVec2 size = ImGui::GetIO().DisplaySize;
  const float w = size.x, h = size.y;
  // The timeline takes what its rows need, between a fifth and 44% of the height; the memory
  // view gets the rest of the upper two thirds.
  const ImGuiStyle& style = ImGui::GetStyle();
  const float chrome = ImGui::GetFrameHeight() + 2 * style.WindowPadding.y + 8;
  const float timeline_h =
      std::floor(std::clamp(TimelineContentHeight(s) + chrome, h * 0.2f, h * 0.44f));
  const float memory_h = std::floor(h * 0.68f) - timeline_h;
  const float bottom_y = timeline_h + memory_h;
  const float bottom_h = h - bottom_y;
  const float tuning_w = s->tuner ? std::floor(w * 0.22f) : 0.0f;
  const float summary_w = std::floor(w * 0.24f);
  const float table_w = w - tuning_w - summary_w;

  Place("Timeline", 0, 0, w, timeline_h);
  DrawTimelinePanel(s);
  ImGui::End();
  Place("Memory", 0, timeline_h, w, memory_h);
  DrawMemoryPanel(s);
  ImGui::End();
  Place("Comparison", 0, bottom_y, table_w, bottom_h);
  DrawComparePanel(s);
  ImGui::End();
  Place("Summary", table_w, bottom_y, summary_w, bottom_h);
  DrawSummaryPanel(s);
  ImGui::End();
  if (s->tuner) {
    Place("Tuning", table_w + summary_w, bottom_y, tuning_w, bottom_h);
    DrawTuningPanel(s);
    ImGui::End();
  }
  HandleKeys(s);
}

}  // namespace shardscope::viewer
