#include "viewer/merge.h"

#include <algorithm>
#include <cmath>

namespace shardscope::viewer {

void VisibleItems(const Track& track, const Viewport& viewport, double merge_px,
                  std::vector<DrawItem>* out) {
  out->clear();
  const std::vector<LaneItem>& items = track.items;
  const std::vector<int64_t>& max_end = track.max_end;
  const int64_t view_lo = viewport.start_ns, view_hi = viewport.end_ns();
  // Items starting at or after the right edge are never drawn nor folded into a run.
  const size_t n = static_cast<size_t>(
      std::partition_point(items.begin(), items.end(),
                           [view_hi](const LaneItem& it) { return it.start_ns < view_hi; }) -
      items.begin());
  const int64_t merge_ns =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(merge_px * viewport.NsPerPx())));
  // First index whose prefix max end reaches t: every item before it ends before t. Galloping
  // from `from`: a run grows by about a pixel's worth of items per step, so the answer is near
  // and a full binary search over the track (17 steps at 100k items) would mostly be wasted.
  auto first_reaching = [&](size_t from, int64_t t) {
    size_t lo = from, step = 1;
    while (lo + step < n && max_end[lo + step - 1] < t) {
      lo += step;
      step *= 2;
    }
    const size_t hi = std::min(n, lo + step);
    return static_cast<size_t>(std::lower_bound(max_end.begin() + lo, max_end.begin() + hi, t) -
                               max_end.begin());
  };
  size_t i = first_reaching(0, view_lo + 1);
  while (i < n) {
    const LaneItem& it = items[i];
    if (it.end_ns <= view_lo) {  // hidden behind an earlier long item's prefix max
      ++i;
      continue;
    }
    if (it.end_ns - it.start_ns >= merge_ns) {
      out->push_back({it.start_ns, it.end_ns, static_cast<uint32_t>(i), 1, it.kind});
      ++i;
      continue;
    }
    DrawItem run{it.start_ns, it.end_ns, static_cast<uint32_t>(i), 1, it.kind};
    size_t j = i + 1;
    for (;;) {
      const int64_t next_ns = run.end_ns + merge_ns;
      // Items j..k-1 all end before next_ns: within a merge width of the run.
      const size_t k = first_reaching(j, next_ns);
      if (k > j) {
        run.end_ns = std::max(run.end_ns, std::min(max_end[k - 1], next_ns));
        run.count += static_cast<uint32_t>(k - j);
        j = k;
      }
      // The next item ends later; fold it when it is narrow and starts within the gap.
      if (j < n && items[j].end_ns - items[j].start_ns < merge_ns && items[j].start_ns < next_ns) {
        run.end_ns = std::max(run.end_ns, items[j].end_ns);
        ++run.count;
        ++j;
        continue;
      }
      break;
    }
    out->push_back(run);
    i = j;
  }
}

}  // namespace shardscope::viewer
