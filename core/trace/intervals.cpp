#include "core/trace/intervals.h"

#include <algorithm>

namespace shardscope {

std::vector<Interval> UnionOf(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
  std::vector<Interval> out;
  for (const Interval& i : intervals) {
    if (i.end_ns <= i.start_ns) continue;
    if (!out.empty() && i.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t TotalNs(const std::vector<Interval>& merged) {
  int64_t total = 0;
  for (const Interval& i : merged) total += i.end_ns - i.start_ns;
  return total;
}

int64_t IntersectNs(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].start_ns, b[j].start_ns);
    const int64_t hi = std::min(a[i].end_ns, b[j].end_ns);
    if (hi > lo) total += hi - lo;
    if (a[i].end_ns < b[j].end_ns) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

std::vector<Interval> ClipTo(const std::vector<Interval>& merged, int64_t lo, int64_t hi) {
  std::vector<Interval> out;
  auto it = std::lower_bound(merged.begin(), merged.end(), lo,
                             [](const Interval& i, int64_t v) { return i.end_ns <= v; });
  for (; it != merged.end() && it->start_ns < hi; ++it) {
    const Interval c{std::max(it->start_ns, lo), std::min(it->end_ns, hi)};
    if (c.end_ns > c.start_ns) out.push_back(c);
  }
  return out;
}

}  // namespace shardscope
