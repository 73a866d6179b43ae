// Exact interval arithmetic on integer-nanosecond timelines, used to split a step into
// compute, exposed communication and idle time (never "compute + comm - wall").
//
// Contents:
//   Interval      a half-open span [begin_ns, end_ns)
//   IntervalSet   sorted, disjoint, non-empty intervals
//   UnionOf       normalises any list of intervals into an IntervalSet
//   Intersect / Subtract / Unite   set operations on two IntervalSets
//   MeasureNs     total length of a set
#pragma once

#include <cstdint>
#include <vector>

namespace shardscope::sim {

struct Interval {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;  // exclusive; an interval with end_ns <= begin_ns is empty
};

// Sorted by begin_ns, pairwise disjoint and non-adjacent, every interval non-empty.
using IntervalSet = std::vector<Interval>;

// Sorts and merges `intervals` (overlapping or touching ones become one); drops empty ones.
IntervalSet UnionOf(std::vector<Interval> intervals);
// Points in both a and b.
IntervalSet Intersect(const IntervalSet& a, const IntervalSet& b);
// Points in a but not in b.
IntervalSet Subtract(const IntervalSet& a, const IntervalSet& b);
// Points in a or b.
IntervalSet Unite(const IntervalSet& a, const IntervalSet& b);
// Sum of the lengths.
int64_t MeasureNs(const IntervalSet& set);

}  // namespace shardscope::sim
