// The timeline: a row per (rank, lane), A above B (or overlaid), boxes coloured by kind,
// sub-pixel items merged, the previous prediction as a ghost strip, the selected table row
// outlined, a tooltip with both traces' durations.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "viewer/flat_fill.h"
#include "viewer/format.h"
#include "viewer/merge.h"
#include "viewer/panels.h"

namespace shardscope::viewer {
namespace {

constexpr float kRowPx = 18.0f;
constexpr float kGapPx = 4.0f;
constexpr float kRulerPx = 22.0f;
constexpr double kMergePx = 1.0;
constexpr ImU32 kIdleColor = IM_COL32(48, 48, 54, 255);
constexpr ImU32 kOutsideColor = IM_COL32(30, 30, 34, 255);
constexpr ImU32 kGhostColor = IM_COL32(235, 235, 235, 150);
constexpr ImU32 kSelectColor = IM_COL32(255, 230, 0, 255);

// A "nice" tick step (1, 2, 5 × 10^k ns) giving at least `min_px` between ticks.
int64_t TickStep(const Viewport& vp, double min_px) {
  const double want = vp.NsPerPx() * min_px;
  int64_t step = 1;
  while (static_cast<double>(step) < want) {
    if (static_cast<double>(step * 2) >= want) return step * 2;
    if (static_cast<double>(step * 5) >= want) return step * 5;
    step *= 10;
  }
  return step;
}

void DrawRuler(const Viewport& vp, ImDrawList* dl, float x0, float y0, float x1) {
  {
    FlatFillSection flat(dl);
    dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y0 + kRulerPx), IM_COL32(38, 38, 44, 255));
  }
  const int64_t step = TickStep(vp, 90);
  int64_t t = (vp.start_ns / step) * step;
  if (t < vp.start_ns) t += step;
  for (; t < vp.end_ns(); t += step) {
    const float x = x0 + static_cast<float>(vp.TimeToX(t));
    dl->AddLine(ImVec2(x, y0 + kRulerPx - 6), ImVec2(x, y0 + kRulerPx),
                IM_COL32(200, 200, 200, 255));
    const std::string label = FormatDuration(t);
    dl->AddText(ImVec2(x + 3, y0 + 3), IM_COL32(210, 210, 210, 255), label.c_str());
  }
}

void Tooltip(const ViewerState& s, int which, uint32_t event, uint32_t merged) {
  const TraceView& v = which == 0 ? *s.a : *s.b;
  const WorkEvent& e = v.trace.events[event];
  ImGui::BeginTooltip();
  if (merged > 1) ImGui::Text("%u items merged here (zoom in); first:", merged);
  ImGui::TextUnformatted(std::string(v.trace.Str(e.name)).c_str());
  const std::string op_id(v.trace.Str(e.op_id));
  ImGui::Text("op_id  %s", op_id.empty() ? "(none)" : op_id.c_str());
  ImGui::Text("%s, rank %d, %s lane", std::string(ItemKindName(KindOf(v.trace, e))).c_str(), e.rank,
              std::string(TraceLaneName(e.lane)).c_str());
  ImGui::Text("start  %s after step start", FormatDuration(e.start_ns - v.origin_ns).c_str());
  ImGui::Text("%-10s %s", v.label.c_str(), FormatDuration(e.dur_ns).c_str());
  const int row = op_id.empty() ? -1 : FindRow(s, which, e.rank, e.op_id);
  if (row >= 0) {
    const CompareRow& r = s.rows[row];
    const int other = 1 - which;
    const TraceView* ov = other == 0 ? s.a.get() : s.b.get();
    const int64_t dur_other = other == 0 ? r.dur_a_ns : r.dur_b_ns;
    const int n_other = other == 0 ? r.count_a : r.count_b;
    const int n_this = which == 0 ? r.count_a : r.count_b;
    if (ov && dur_other >= 0) {
      ImGui::Text("%-10s %s%s", ov->label.c_str(), FormatDuration(dur_other).c_str(),
                  n_other > 1 ? fmt::format("  (sum of {} events)", n_other).c_str() : "");
      if (n_this > 1) {
        ImGui::Text("this op in %s: %s over %d events", v.label.c_str(),
                    FormatDuration(which == 0 ? r.dur_a_ns : r.dur_b_ns).c_str(), n_this);
      }
    } else if (ov) {
      ImGui::Text("not in %s", ov->label.c_str());
    }
  }
  if (e.bytes > 0) ImGui::Text("bytes  %s", FormatBytes(e.bytes).c_str());
  if (e.busbw_gbps > 0) ImGui::Text("bus bandwidth  %.1f GB/s", e.busbw_gbps);
  ImGui::EndTooltip();
}

}  // namespace

void DrawRangeOverlay(const ViewerState& s, ImDrawList* dl, float x0, float y0, float y1) {
  const Viewport& vp = s.viewport;
  const float x1 = x0 + static_cast<float>(vp.width_px);
  auto clamp_x = [&](int64_t t) {
    return std::clamp(x0 + static_cast<float>(vp.TimeToX(t)), x0, x1);
  };
  const float zero = x0 + static_cast<float>(vp.TimeToX(0));
  if (zero >= x0 && zero <= x1)
    dl->AddLine(ImVec2(zero, y0), ImVec2(zero, y1), IM_COL32(120, 200, 255, 200));
  std::optional<TimeRange> r = s.range;
  if (s.drag_anchor_ns) {
    const int64_t now = vp.XToTime(ImGui::GetIO().MousePos.x - x0);
    r = TimeRange{std::min(*s.drag_anchor_ns, now), std::max(*s.drag_anchor_ns, now)};
  }
  if (!r) return;
  const float rx0 = clamp_x(r->lo_ns), rx1 = clamp_x(r->hi_ns);
  dl->AddRectFilled(ImVec2(x0, y0), ImVec2(rx0, y1), IM_COL32(0, 0, 0, 110));
  dl->AddRectFilled(ImVec2(rx1, y0), ImVec2(x1, y1), IM_COL32(0, 0, 0, 110));
  dl->AddRect(ImVec2(rx0, y0), ImVec2(rx1, y1), IM_COL32(255, 255, 255, 160));
}

void HandlePlotInput(ViewerState* s, float plot_x0, bool hovered, int plot) {
  ImGuiIO& io = ImGui::GetIO();
  Viewport& vp = s->viewport;
  const double mx = io.MousePos.x - plot_x0;
  if (hovered) {
    s->cursor_x_px = mx;
    if (io.MouseWheel != 0) vp.ZoomAt(mx, std::pow(0.8, io.MouseWheel));
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
      s->drag_anchor_ns = vp.XToTime(mx);
      s->drag_plot = plot;
    }
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Right, 0.0f)) vp.Pan(io.MouseDelta.x);
  }
  if (s->drag_anchor_ns && s->drag_plot == plot && ImGui::IsMouseReleased(ImGuiMouseButton_Left)) {
    const int64_t end = vp.XToTime(mx);
    const double dx = std::abs(vp.TimeToX(end) - vp.TimeToX(*s->drag_anchor_ns));
    if (dx < 3.0) {
      ClearRange(s);
    } else {
      SetRange(s, TimeRange{std::min(*s->drag_anchor_ns, end), std::max(*s->drag_anchor_ns, end)});
    }
    s->drag_anchor_ns.reset();
    s->drag_plot = -1;
  }
}

float TimelineContentHeight(ViewerState* s) {
  UpdateTimelineCache(*s, kRowPx, kGapPx, kMergePx, &s->timeline_cache);
  const std::vector<TimelineRow>& rows = s->timeline_cache.rows;
  return kRulerPx + (rows.empty() ? 0.0f : rows.back().y1) + kGapPx;
}

void DrawTimelinePanel(ViewerState* s) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float x0 = origin.x + kLabelColumnPx;
  const float x1 = origin.x + std::max(avail.x, kLabelColumnPx + 10.0f);
  s->viewport.width_px = std::max(1.0f, x1 - x0);
  const Viewport& vp = s->viewport;

  // Legend and mode in the label column's ruler slot.
  dl->AddText(ImVec2(origin.x + 4, origin.y + 3), IM_COL32(200, 200, 200, 255),
              s->mode == LaneMode::kStacked ? "stacked (M)" : "overlaid (M)");
  DrawRuler(vp, dl, x0, origin.y, x1);
  ImGui::Dummy(ImVec2(avail.x, kRulerPx));

  ImGui::BeginChild("timeline_rows", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollWithMouse);
  ImDrawList* cdl = ImGui::GetWindowDrawList();
  const ImVec2 base = ImGui::GetCursorScreenPos();
  const ImVec2 clip_min = ImGui::GetWindowPos();
  const ImVec2 clip_max(clip_min.x + ImGui::GetWindowWidth(),
                        clip_min.y + ImGui::GetWindowHeight());
  UpdateTimelineCache(*s, kRowPx, kGapPx, kMergePx, &s->timeline_cache);
  const TimelineDrawCache& cache = s->timeline_cache;
  const std::vector<TimelineRow>& rows = cache.rows;
  const TraceView* views[2] = {s->a.get(), s->b.get()};
  s->probes.timeline_plot = {x0, clip_min.y, x1, clip_max.y};
  for (auto& v : s->probes.lane_rects) v.clear();
  for (auto& v : s->probes.lane_row_lane) v.clear();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool plot_hovered = ImGui::IsWindowHovered() && mouse.x >= x0 && mouse.x < x1;
  std::optional<TimelineHit> hit;

  cdl->PushClipRect(clip_min, clip_max, true);
  auto visible = [&](const TimelineRow& row) {
    return base.y + row.y1 >= clip_min.y && base.y + row.y0 <= clip_max.y;
  };
  auto band = [&](const TimelineRow& row, int w) {
    return std::pair(base.y + row.sub_y0[w] + 1, base.y + row.sub_y1[w] - 1);
  };
  // The bands' opaque fills first, in one flat section: every box and idle stretch of every
  // row, each pixel once; what is blended (labels, outlines, ghost) goes over them after.
  {
    FlatFillSection flat(cdl);
    for (size_t r = 0; r < rows.size(); ++r) {
      if (!visible(rows[r])) continue;
      for (int w = 0; w < 2; ++w) {
        if (!views[w]) continue;
        const auto [sy0, sy1] = band(rows[r], w);
        for (const TimelineSpan& g : cache.background[w][r]) {
          cdl->AddRectFilled(ImVec2(x0 + g.x0, sy0), ImVec2(x0 + g.x1, sy1),
                             g.idle ? kIdleColor : kOutsideColor);
        }
        for (const TimelineBox& box : cache.boxes[w][r]) {
          cdl->AddRectFilled(ImVec2(x0 + box.x0, sy0), ImVec2(x0 + box.x1, sy1),
                             KindColor(box.kind, box.count > 1));
        }
      }
    }
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    const TimelineRow& row = rows[r];
    if (!visible(row)) continue;
    const float ry0 = base.y + row.y0;
    const std::string label = fmt::format("rank {} {}", row.rank, TraceLaneName(row.lane));
    cdl->AddText(ImVec2(origin.x + 4, ry0 + 1), IM_COL32(220, 220, 220, 255), label.c_str());
    for (int w = 0; w < 2; ++w) {
      if (!views[w]) continue;
      const auto [sy0, sy1] = band(row, w);
      if (s->mode == LaneMode::kStacked && w == 1) {
        cdl->AddText(ImVec2(origin.x + 14, sy0), IM_COL32(150, 150, 150, 255),
                     views[1]->trace.metadata.kind.c_str());
      }
      s->probes.lane_rects[w].push_back({x0, sy0, x1, sy1});
      s->probes.lane_row_lane[w].push_back(row.lane);
      for (const TimelineBox& box : cache.boxes[w][r]) {
        const float bx0 = x0 + box.x0, bx1 = x0 + box.x1;
        if (s->mode == LaneMode::kOverlaid && w == 1) {
          cdl->AddRect(ImVec2(bx0, sy0), ImVec2(bx1, sy1), IM_COL32(255, 255, 255, 200));
        }
        if (box.count == 1 && bx1 - bx0 > 60) {
          const WorkEvent& e = views[w]->trace.events[row.track[w]->items[box.first].event];
          const std::string_view name =
              views[w]->trace.Str(e.op_id != kEmptyStr ? e.op_id : e.name);
          const ImVec4 clip(bx0 + 2, sy0, bx1 - 2, sy1);
          cdl->AddText(nullptr, 0.0f, ImVec2(bx0 + 3, sy0 + 1), IM_COL32(15, 15, 15, 255),
                       name.data(), name.data() + name.size(), 0.0f, &clip);
        }
      }
      if (plot_hovered && mouse.y >= sy0 && mouse.y < sy1 && !hit) {
        hit = HitTest(row, w, vp, mouse.x - x0, kMergePx);
      }
    }
    // The previous prediction: a strip along the top of A's band.
    const float gy0 = base.y + row.sub_y0[0] + 1;
    for (const TimelineBox& box : cache.ghost[r]) {
      cdl->AddRectFilled(ImVec2(x0 + box.x0, gy0), ImVec2(x0 + box.x1, gy0 + 3), kGhostColor);
    }
  }
  // The selected comparison row, outlined in both traces.
  for (const TimelineOutline& o : cache.outlines) {
    const TimelineRow& row = rows[o.row];
    cdl->AddRect(ImVec2(x0 + o.x0 - 1, base.y + row.sub_y0[o.trace]),
                 ImVec2(x0 + o.x1 + 1, base.y + row.sub_y1[o.trace]), kSelectColor, 0.0f, 0, 2.0f);
  }
  DrawRangeOverlay(*s, cdl, x0, clip_min.y, clip_max.y);
  cdl->PopClipRect();
  const float total = rows.empty() ? 0.0f : rows.back().y1;
  ImGui::Dummy(ImVec2(avail.x, total + kGapPx));
  HandlePlotInput(s, x0, plot_hovered, 0);
  if (hit && !s->drag_anchor_ns) Tooltip(*s, hit->trace, hit->event, hit->merged);
  ImGui::EndChild();
}

}  // namespace shardscope::viewer
