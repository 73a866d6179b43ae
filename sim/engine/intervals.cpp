#include "sim/engine/intervals.h"

#include <algorithm>

namespace shardscope::sim {

IntervalSet UnionOf(std::vector<Interval> intervals) {
  std::erase_if(intervals, [](const Interval& i) { return i.end_ns <= i.begin_ns; });
  std::sort(intervals.begin(), intervals.end(), [](const Interval& x, const Interval& y) {
    return x.begin_ns != y.begin_ns ? x.begin_ns < y.begin_ns : x.end_ns < y.end_ns;
  });
  IntervalSet out;
  out.reserve(intervals.size());
  for (const Interval& i : intervals) {
    if (!out.empty() && i.begin_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

IntervalSet Intersect(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].begin_ns, b[j].begin_ns);
    const int64_t hi = std::min(a[i].end_ns, b[j].end_ns);
    if (lo < hi) out.push_back({lo, hi});
    // Advance whichever ends first; the other may still overlap the next one.
    if (a[i].end_ns < b[j].end_ns) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

IntervalSet Subtract(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  size_t j = 0;
  for (const Interval& x : a) {
    int64_t cursor = x.begin_ns;
    while (j < b.size() && b[j].end_ns <= cursor) ++j;
    size_t k = j;
    while (k < b.size() && b[k].begin_ns < x.end_ns) {
      if (b[k].begin_ns > cursor) out.push_back({cursor, b[k].begin_ns});
      cursor = std::max(cursor, b[k].end_ns);
      if (cursor >= x.end_ns) break;
      ++k;
    }
    if (cursor < x.end_ns) out.push_back({cursor, x.end_ns});
  }
  return out;
}

IntervalSet Unite(const IntervalSet& a, const IntervalSet& b) {
  std::vector<Interval> all;
  all.reserve(a.size() + b.size());
  all.insert(all.end(), a.begin(), a.end());
  all.insert(all.end(), b.begin(), b.end());
  return UnionOf(std::move(all));
}

int64_t MeasureNs(const IntervalSet& set) {
  int64_t total = 0;
  for (const Interval& i : set) total += i.end_ns - i.begin_ns;
  return total;
}

}  // namespace shardscope::sim
