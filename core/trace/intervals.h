// Exact interval arithmetic on integer-ns timelines, the one interval library of the project
// (the simulator's step accounting and `stats` both use it through core/trace/accounting.h):
// compute, exposed communication and idle time are measured as sets, never as
// "compute + comm − wall".
//
// Contents:
//   Interval                       a half-open span [start_ns, end_ns)
//   IntervalSet                    sorted, disjoint, non-adjacent, non-empty intervals
//   UnionOf                        any list of intervals → IntervalSet
//   Intersect / Subtract / Unite   set operations on two IntervalSets
//   TotalNs, IntersectNs           lengths (of a set, of the intersection of two)
//   ClipTo                         the part of a set inside [lo, hi)
#pragma once

#include <cstdint>
#include <vector>

namespace shardscope {

struct Interval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // exclusive; an interval with end_ns <= start_ns is empty
};

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
int64_t TotalNs(const IntervalSet& set);
// |a ∩ b| without building the intersection (linear merge).
int64_t IntersectNs(const IntervalSet& a, const IntervalSet& b);
// The part of `set` inside [lo, hi).
IntervalSet ClipTo(const IntervalSet& set, int64_t lo, int64_t hi);

}  // namespace shardscope
