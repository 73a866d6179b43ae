// What a track shows at one zoom: its visible items, with runs of items narrower than the merge
// width folded into one box (Tracy's approach), so a frame costs O(pixels · log items) however
// many events the track holds.
//
// Contents:
//   DrawItem        one box to draw: a single item or a merged run
//   VisibleItems    Track × Viewport → DrawItems, left to right
#pragma once

#include <cstdint>
#include <vector>

#include "viewer/trace_view.h"
#include "viewer/viewport.h"

namespace shardscope::viewer {

struct DrawItem {
  int64_t start_ns = 0, end_ns = 0;
  uint32_t first = 0;                  // index into Track::items of the first item
  uint32_t count = 1;                  // items folded into the box (> 1: merged)
  ItemKind kind = ItemKind::kCompute;  // the first item's
};

// Items overlapping the viewport, left to right. An item at least `merge_px` wide is its own
// box; consecutive narrower items whose gaps are under `merge_px` fold into one box, which can
// extend up to `merge_px` beyond the last folded end. Replaces `out`.
void VisibleItems(const Track& track, const Viewport& viewport, double merge_px,
                  std::vector<DrawItem>* out);

}  // namespace shardscope::viewer
