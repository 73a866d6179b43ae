#include "viewer/timeline_cache.h"

#include <algorithm>

#include "viewer/merge.h"
#include "viewer/viewer_state.h"

namespace shardscope::viewer {
namespace {

// The boxes in pixels, clamped to the plot, at least a pixel wide.
void ToPixels(const std::vector<DrawItem>& items, const Viewport& vp,
              std::vector<TimelineBox>* out) {
  const float width = static_cast<float>(vp.width_px);
  out->clear();
  out->reserve(items.size());
  for (const DrawItem& it : items) {
    const float x0 = std::max(0.0f, static_cast<float>(vp.TimeToX(it.start_ns)));
    const float x1 =
        std::min(width, std::max(x0 + 1.0f, static_cast<float>(vp.TimeToX(it.end_ns))));
    out->push_back({x0, x1, it.first, it.count, it.kind});
  }
}

// What the boxes leave uncovered of [0, width), split at the trace's step start and end: each
// pixel of the band is filled once (a software renderer pays per pixel filled).
void Background(const std::vector<TimelineBox>& boxes, float width, float step_x0, float step_x1,
                std::vector<TimelineSpan>* out) {
  out->clear();
  step_x0 = std::clamp(step_x0, 0.0f, width);
  step_x1 = std::clamp(step_x1, step_x0, width);
  auto gap = [&](float g0, float g1) {
    const float cuts[4] = {g0, std::clamp(step_x0, g0, g1), std::clamp(step_x1, g0, g1), g1};
    for (int k = 0; k < 3; ++k) {
      if (cuts[k + 1] > cuts[k]) out->push_back({cuts[k], cuts[k + 1], k == 1});
    }
  };
  float covered = 0;
  for (const TimelineBox& b : boxes) {  // left to right by x0
    if (b.x0 > covered) gap(covered, b.x0);
    covered = std::max(covered, b.x1);
  }
  if (width > covered) gap(covered, width);
}

}  // namespace

bool UpdateTimelineCache(const ViewerState& s, float row_px, float gap_px, double merge_px,
                         TimelineDrawCache* cache) {
  const Viewport& vp = s.viewport;
  TimelineDrawKey key;
  key.views[0] = s.a.get();
  key.views[1] = s.b.get();
  key.views[2] = s.ghost.get();
  key.traces_generation = s.traces_generation;
  key.start_ns = vp.start_ns;
  key.span_ns = vp.span_ns;
  key.width_px = vp.width_px;
  key.mode = s.mode;
  key.selected_row = s.selected_row;
  key.row_px = row_px;
  key.gap_px = gap_px;
  key.merge_px = merge_px;
  if (cache->built && cache->key == key) return false;
  cache->key = key;
  cache->built = true;
  ++cache->builds;

  const TraceView* views[2] = {s.a.get(), s.b.get()};
  cache->rows = LayoutTimeline(views[0], views[1], s.mode, row_px, gap_px);
  const size_t n = cache->rows.size();
  for (int w = 0; w < 2; ++w) {
    cache->boxes[w].assign(n, {});
    cache->background[w].assign(n, {});
  }
  cache->ghost.assign(n, {});
  cache->outlines.clear();
  const float width = static_cast<float>(vp.width_px);
  std::vector<DrawItem> items;
  for (size_t r = 0; r < n; ++r) {
    const TimelineRow& row = cache->rows[r];
    for (int w = 0; w < 2; ++w) {
      if (!views[w]) continue;
      if (row.track[w]) {
        VisibleItems(*row.track[w], vp, merge_px, &items);
        ToPixels(items, vp, &cache->boxes[w][r]);
      }
      // Overlaid, B's boxes lie over A's band, which has the background.
      if (s.mode == LaneMode::kStacked || w == 0) {
        Background(cache->boxes[w][r], width, static_cast<float>(vp.TimeToX(0)),
                   static_cast<float>(vp.TimeToX(views[w]->end_ns)), &cache->background[w][r]);
      }
    }
    if (s.ghost && views[0]) {
      if (const Track* gt = s.ghost->FindTrack(row.rank, row.lane)) {
        VisibleItems(*gt, vp, merge_px, &items);
        ToPixels(items, vp, &cache->ghost[r]);
      }
    }
  }
  if (s.selected_row >= 0 && s.selected_row < static_cast<int>(s.rows.size())) {
    const CompareRow& sel = s.rows[s.selected_row];
    for (size_t r = 0; r < n; ++r) {
      const TimelineRow& row = cache->rows[r];
      if (row.rank != sel.rank) continue;
      for (int w = 0; w < 2; ++w) {
        if (!views[w]) continue;
        for (uint32_t ev : s.selected_events[w]) {
          const WorkEvent& e = views[w]->trace.events[ev];
          if (e.lane != row.lane) continue;
          const int64_t st = e.start_ns - views[w]->origin_ns;
          const float x0 = static_cast<float>(vp.TimeToX(st));
          const float x1 = std::max(x0 + 2.0f, static_cast<float>(vp.TimeToX(st + e.dur_ns)));
          if (x1 < 0 || x0 > width) continue;
          cache->outlines.push_back({static_cast<int>(r), w, x0, x1});
        }
      }
    }
  }
  return true;
}

}  // namespace shardscope::viewer
