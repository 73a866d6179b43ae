#include "viewer/timeline_model.h"

#include <map>
#include <utility>

namespace shardscope::viewer {

std::vector<TimelineRow> LayoutTimeline(const TraceView* a, const TraceView* b, LaneMode mode,
                                        float row_px, float gap_px) {
  std::map<std::pair<int, int>, TimelineRow> by_key;
  const TraceView* views[2] = {a, b};
  for (int w = 0; w < 2; ++w) {
    if (!views[w]) continue;
    for (const Track& t : views[w]->tracks) {
      TimelineRow& row = by_key[{t.rank, t.lane}];
      row.rank = t.rank;
      row.lane = t.lane;
      row.track[w] = &t;
    }
  }
  std::vector<TimelineRow> rows;
  float y = 0;
  for (auto& [key, row] : by_key) {
    row.y0 = y;
    if (mode == LaneMode::kStacked) {
      row.sub_y0[0] = y;
      row.sub_y1[0] = y + row_px;
      row.sub_y0[1] = y + row_px;
      row.sub_y1[1] = y + 2 * row_px;
      y += 2 * row_px;
    } else {
      row.sub_y0[0] = y;
      row.sub_y1[0] = y + row_px;
      row.sub_y0[1] = y + row_px * 0.5f;
      row.sub_y1[1] = y + row_px;
      y += row_px;
    }
    row.y1 = y;
    y += gap_px;
    rows.push_back(row);
  }
  return rows;
}

std::optional<TimelineHit> HitTest(const TimelineRow& row, int which, const Viewport& viewport,
                                   double x_px, double merge_px) {
  const Track* track = row.track[which];
  if (!track) return std::nullopt;
  // Only the boxes around x matter: a viewport one merge width wide centred on x would change
  // the merging, so merge over the real viewport and search its boxes.
  std::vector<DrawItem> boxes;
  VisibleItems(*track, viewport, merge_px, &boxes);
  const int64_t t = viewport.XToTime(x_px);
  const int64_t slack = static_cast<int64_t>(viewport.NsPerPx() * 0.5);
  for (const DrawItem& box : boxes) {
    if (t >= box.start_ns - slack && t < box.end_ns + slack) {
      return TimelineHit{which, track->items[box.first].event, box.count};
    }
  }
  return std::nullopt;
}

}  // namespace shardscope::viewer
