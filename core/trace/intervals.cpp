#include "core/trace/intervals.h"

#include <algorithm>

namespace shardscope {

IntervalSet UnionOf(std::vector<Interval> intervals) {
  std::erase_if(intervals, [](const Interval& i) { return i.end_ns <= i.start_ns; });
  const auto before = [](const Interval& x, const Interval& y) {
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns < y.end_ns;
  };
  // One lane's work comes in issue order, already sorted: the check is cheaper than a sort.
  if (!std::is_sorted(intervals.begin(), intervals.end(), before)) {
    std::sort(intervals.begin(), intervals.end(), before);
  }
  // Merged in place: a run of overlapping intervals collapses onto its first, and the write
  // position never passes the read position.
  size_t n = 0;
  for (const Interval& i : intervals) {
    if (n > 0 && i.start_ns <= intervals[n - 1].end_ns) {
      intervals[n - 1].end_ns = std::max(intervals[n - 1].end_ns, i.end_ns);
    } else {
      intervals[n++] = i;
    }
  }
  intervals.resize(n);
  return intervals;
}

IntervalSet Intersect(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].start_ns, b[j].start_ns);
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
    int64_t cursor = x.start_ns;
    while (j < b.size() && b[j].end_ns <= cursor) ++j;
    size_t k = j;
    while (k < b.size() && b[k].start_ns < x.end_ns) {
      if (b[k].start_ns > cursor) out.push_back({cursor, b[k].start_ns});
      cursor = std::max(cursor, b[k].end_ns);
      if (cursor >= x.end_ns) break;
      ++k;
    }
    if (cursor < x.end_ns) out.push_back({cursor, x.end_ns});
  }
  return out;
}

IntervalSet Unite(const IntervalSet& a, const IntervalSet& b) {
  // Both are sorted: merge them without re-sorting.
  IntervalSet out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const bool take_a = j >= b.size() || (i < a.size() && a[i].start_ns <= b[j].start_ns);
    const Interval& next = take_a ? a[i++] : b[j++];
    if (!out.empty() && next.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, next.end_ns);
    } else {
      out.push_back(next);
    }
  }
  return out;
}

int64_t TotalNs(const IntervalSet& set) {
  int64_t total = 0;
  for (const Interval& i : set) total += i.end_ns - i.start_ns;
  return total;
}

int64_t IntersectNs(const IntervalSet& a, const IntervalSet& b) {
  const IntervalSet& few = a.size() <= b.size() ? a : b;
  const IntervalSet& many = a.size() <= b.size() ? b : a;
  int64_t total = 0;
  // A short set against a long one (one kind of collective against a step's compute): each of
  // its intervals finds its first overlap by binary search instead of the walk stepping
  // through every interval of the long set in between.
  if (few.size() * 16 < many.size()) {
    auto from = many.begin();
    for (const Interval& x : few) {
      from = std::upper_bound(from, many.end(), x.start_ns,
                              [](int64_t t, const Interval& i) { return t < i.end_ns; });
      for (auto it = from; it != many.end() && it->start_ns < x.end_ns; ++it)
        total += std::min(x.end_ns, it->end_ns) - std::max(x.start_ns, it->start_ns);
    }
    return total;
  }
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

IntervalSet ClipTo(const IntervalSet& set, int64_t lo, int64_t hi) {
  IntervalSet out;
  auto it = std::lower_bound(set.begin(), set.end(), lo,
                             [](const Interval& i, int64_t v) { return i.end_ns <= v; });
  for (; it != set.end() && it->start_ns < hi; ++it) {
    const Interval c{std::max(it->start_ns, lo), std::min(it->end_ns, hi)};
    if (c.end_ns > c.start_ns) out.push_back(c);
  }
  return out;
}

}  // namespace shardscope
