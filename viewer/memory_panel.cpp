// The memory view: per trace a band with its categories stacked, the allocated and reserved
// lines, the HBM limit and a marker at the allocated peak (click: the timeline centres there).
// The x axis is the timeline's viewport; the ghost prediction's allocated line is drawn grey.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "viewer/flat_fill.h"
#include "viewer/format.h"
#include "viewer/memory_fill.h"
#include "viewer/panels.h"

namespace shardscope::viewer {
namespace {

constexpr ImU32 kBandColor = IM_COL32(30, 30, 34, 255);
constexpr ImU32 kAllocatedColor = IM_COL32(255, 255, 255, 255);
constexpr ImU32 kReservedColor = IM_COL32(255, 160, 40, 255);
constexpr ImU32 kHbmColor = IM_COL32(230, 40, 40, 255);
constexpr ImU32 kPeakColor = IM_COL32(255, 60, 200, 255);
constexpr float kPeakHitPx = 8.0f;

ImU32 CategoryColor(size_t i) {
  static const ImU32 kColors[] = {
      IM_COL32(86, 140, 220, 255),  IM_COL32(120, 190, 100, 255), IM_COL32(200, 120, 200, 255),
      IM_COL32(230, 200, 80, 255),  IM_COL32(90, 200, 200, 255),  IM_COL32(210, 110, 90, 255),
      IM_COL32(160, 160, 230, 255), IM_COL32(150, 120, 80, 255),  IM_COL32(120, 120, 120, 255)};
  return kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
}

// A line over the columns; `value(c)` < 0 skips the column.
template <typename F>
void ColumnLine(ImDrawList* dl, float x0, float y_of_zero, double px_per_byte, int columns,
                ImU32 color, F value) {
  std::vector<ImVec2> pts;
  auto flush = [&] {
    if (pts.size() >= 2) dl->AddPolyline(pts.data(), static_cast<int>(pts.size()), color, 0, 1.5f);
    pts.clear();
  };
  for (int c = 0; c < columns; ++c) {
    const int64_t v = value(c);
    if (v < 0) {
      flush();
      continue;
    }
    const ImVec2 p(x0 + c + 0.5f, y_of_zero - static_cast<float>(v * px_per_byte));
    // A level stretch is one segment, not a vertex per column.
    const size_t k = pts.size();
    if (k >= 2 && pts[k - 1].y == p.y && pts[k - 2].y == p.y) {
      pts[k - 1] = p;
    } else {
      pts.push_back(p);
    }
  }
  flush();
}

}  // namespace

void DrawMemoryPanel(ViewerState* s) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float x0 = origin.x + kLabelColumnPx;
  const float x1 = origin.x + std::max(avail.x, kLabelColumnPx + 10.0f);
  const float y1 = origin.y + std::max(avail.y, 40.0f);
  const int columns = std::max(1, static_cast<int>(x1 - x0));
  const Viewport& vp = s->viewport;
  const TraceView* views[2] = {s->a.get(), s->b.get()};
  s->probes.memory_plot = {x0, origin.y, x1, y1};
  s->probes.peak_marker_x[0] = s->probes.peak_marker_x[1] = -1;
  s->probes.peak_marker_y[0] = s->probes.peak_marker_y[1] = -1;

  int bands = 0;
  int64_t scale = 1;
  for (const TraceView* v : views) {
    if (!v || v->memory.empty()) continue;
    ++bands;
    scale =
        std::max({scale, v->memory.hbm_bytes, v->memory.peak_allocated, v->memory.peak_reserved});
  }
  if (bands == 0) {
    ImGui::TextDisabled("No memory counters in %s.",
                        views[0] && views[1] ? "either trace" : "the trace");
    return;
  }
  scale = static_cast<int64_t>(static_cast<double>(scale) * 1.05);
  const float band_h = (y1 - origin.y) / bands;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool hovered = ImGui::IsWindowHovered() && mouse.x >= x0 && mouse.x < x1 &&
                       mouse.y >= origin.y && mouse.y < y1;
  bool clicked_peak = false;
  int band = 0;
  for (int w = 0; w < 2; ++w) {
    const TraceView* v = views[w];
    if (!v || v->memory.empty()) continue;
    const MemoryModel& m = v->memory;
    const float by0 = origin.y + band * band_h + 2, by1 = origin.y + (band + 1) * band_h - 2;
    ++band;
    const double px_per_byte = (by1 - by0) / static_cast<double>(scale);
    dl->AddText(ImVec2(origin.x + 4, by0), IM_COL32(220, 220, 220, 255), v->label.c_str());
    dl->AddText(ImVec2(origin.x + 4, by0 + 16), IM_COL32(160, 160, 160, 255),
                fmt::format("peak {}", FormatBytes(m.peak_allocated)).c_str());
    // Legend: one line per category.
    for (size_t c = 0; c < m.categories.size() && by0 + 34 + 14 * c < by1; ++c) {
      const float ly = by0 + 34 + 14.0f * c;
      dl->AddRectFilled(ImVec2(origin.x + 6, ly + 3), ImVec2(origin.x + 14, ly + 11),
                        CategoryColor(c));
      dl->AddText(ImVec2(origin.x + 18, ly), IM_COL32(180, 180, 180, 255), m.categories[c].c_str());
    }
    const std::vector<MemoryColumn> cols = DownsampleMemory(m, vp.start_ns, vp.end_ns(), columns);
    // Each pixel of the band filled once, wide rectangles where the columns agree
    // (memory_fill.h); all opaque: a flat section.
    {
      FlatFillSection flat(dl);
      for (const MemoryFillRect& r : MemoryFill(m, cols, x0, x1, by0, by1, px_per_byte)) {
        dl->AddRectFilled(ImVec2(r.x0, r.y0), ImVec2(r.x1, r.y1),
                          r.layer == kMemoryBandLayer ? kBandColor : CategoryColor(r.layer));
      }
    }
    ColumnLine(dl, x0, by1, px_per_byte, columns, kAllocatedColor,
               [&](int c) { return cols[c].sample < 0 ? -1 : cols[c].allocated; });
    if (m.has_reserved) {
      ColumnLine(dl, x0, by1, px_per_byte, columns, kReservedColor,
                 [&](int c) { return cols[c].sample < 0 ? -1 : cols[c].reserved; });
    }
    if (w == 0 && s->ghost && !s->ghost->memory.empty()) {
      const std::vector<MemoryColumn> g =
          DownsampleMemory(s->ghost->memory, vp.start_ns, vp.end_ns(), columns);
      ColumnLine(dl, x0, by1, px_per_byte, columns, IM_COL32(160, 160, 160, 200),
                 [&](int c) { return g[c].sample < 0 ? -1 : g[c].allocated; });
    }
    if (m.hbm_bytes > 0) {
      const float hy = by1 - static_cast<float>(m.hbm_bytes * px_per_byte);
      for (float x = x0; x < x1; x += 12)
        dl->AddLine(ImVec2(x, hy), ImVec2(std::min(x + 7, x1), hy), kHbmColor, 1.5f);
      dl->AddText(ImVec2(x1 - 130, hy + 1), kHbmColor,
                  fmt::format("HBM {}", FormatBytes(m.hbm_bytes)).c_str());
    }
    // The peak marker.
    const float px = x0 + static_cast<float>(vp.TimeToX(m.peak_allocated_ns));
    const float py = by1 - static_cast<float>(m.peak_allocated * px_per_byte);
    if (px >= x0 && px <= x1) {
      dl->AddTriangleFilled(ImVec2(px, py - 1), ImVec2(px - 6, py - 11), ImVec2(px + 6, py - 11),
                            kPeakColor);
      dl->AddCircleFilled(ImVec2(px, py), 3.0f, kPeakColor);
      s->probes.peak_marker_x[w] = px;
      s->probes.peak_marker_y[w] = py - 6;
      const bool near = hovered && std::abs(mouse.x - px) < kPeakHitPx && mouse.y > py - 14 &&
                        mouse.y < py + kPeakHitPx;
      if (near) {
        ImGui::SetTooltip("%s peak: %s allocated at %s (click: show in the timeline)",
                          v->label.c_str(), FormatBytes(m.peak_allocated).c_str(),
                          FormatDuration(m.peak_allocated_ns).c_str());
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
          s->viewport.CenterOn(m.peak_allocated_ns);
          clicked_peak = true;
        }
      }
    }
  }
  DrawRangeOverlay(*s, dl, x0, origin.y, y1);
  ImGui::Dummy(ImVec2(avail.x, y1 - origin.y));
  if (!clicked_peak) HandlePlotInput(s, x0, hovered, 1);
}

}  // namespace shardscope::viewer
