// Exact interval arithmetic on integer-ns timelines: union, intersection, clipping. Used for
// busy / idle / exposed-communication accounting (never "compute + comm − wall").
//
// Contents:
//   Interval            [start_ns, end_ns)
//   UnionOf             sorts and merges overlapping or touching intervals
//   TotalNs             length of a merged set
//   IntersectNs         length of the intersection of two merged sets
//   ClipTo              the part of a merged set inside [lo, hi)
#pragma once

#include <cstdint>
#include <vector>

namespace shardscope {

struct Interval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// Sorted, disjoint intervals covering exactly the input; empty intervals are dropped.
std::vector<Interval> UnionOf(std::vector<Interval> intervals);
// Sum of lengths of merged (disjoint) intervals.
int64_t TotalNs(const std::vector<Interval>& merged);
// Length of A ∩ B for merged A and B (linear merge).
int64_t IntersectNs(const std::vector<Interval>& a, const std::vector<Interval>& b);
// Merged intervals cut to [lo, hi).
std::vector<Interval> ClipTo(const std::vector<Interval>& merged, int64_t lo, int64_t hi);

}  // namespace shardscope
