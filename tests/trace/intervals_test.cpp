#include "core/trace/intervals.h"

#include <gtest/gtest.h>

#include <random>

namespace shardscope {
namespace {

bool Same(const IntervalSet& a, const IntervalSet& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].start_ns != b[i].start_ns || a[i].end_ns != b[i].end_ns) return false;
  }
  return true;
}

TEST(IntervalsTest, UnionMergesOverlappingAndTouching) {
  const IntervalSet u = UnionOf({{5, 10}, {0, 3}, {3, 4}, {8, 12}, {20, 20}, {15, 16}});
  EXPECT_TRUE(Same(u, {{0, 4}, {5, 12}, {15, 16}}));
  EXPECT_EQ(TotalNs(u), 4 + 7 + 1);
}

TEST(IntervalsTest, ExposedCommunicationOnAHandMadeTimeline) {
  // compute: [0,100) [150,300); all-gather: [80,160) [290,400); reduce-scatter [350,420)
  const IntervalSet compute = UnionOf({{0, 100}, {150, 300}});
  const IntervalSet comm = UnionOf({{80, 160}, {290, 400}, {350, 420}});
  const IntervalSet exposed = Subtract(comm, compute);
  EXPECT_TRUE(Same(exposed, {{100, 150}, {300, 420}}));
  EXPECT_EQ(TotalNs(exposed), 50 + 120);
  const IntervalSet overlapped = Intersect(comm, compute);
  EXPECT_TRUE(Same(overlapped, {{80, 100}, {150, 160}, {290, 300}}));
  EXPECT_EQ(TotalNs(overlapped) + TotalNs(exposed), TotalNs(comm));
  // Idle: neither compute nor communication in [0, 500).
  const IntervalSet busy = Unite(compute, comm);
  EXPECT_EQ(500 - TotalNs(busy), 80);
}

TEST(IntervalsTest, AgreesWithAPointwiseCountOnRandomSets) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Interval> a_raw, b_raw;
    for (int k = 0; k < 8; ++k) {
      const int64_t s = rng() % 200;
      a_raw.push_back({s, s + static_cast<int64_t>(rng() % 40)});
      const int64_t t = rng() % 200;
      b_raw.push_back({t, t + static_cast<int64_t>(rng() % 40)});
    }
    const IntervalSet a = UnionOf(a_raw), b = UnionOf(b_raw);
    auto in = [](const IntervalSet& set, int64_t x) {
      for (const Interval& i : set) {
        if (x >= i.start_ns && x < i.end_ns) return true;
      }
      return false;
    };
    int64_t both = 0, only_a = 0, either = 0;
    for (int64_t x = 0; x < 260; ++x) {
      both += in(a, x) && in(b, x);
      only_a += in(a, x) && !in(b, x);
      either += in(a, x) || in(b, x);
    }
    ASSERT_EQ(TotalNs(Intersect(a, b)), both);
    ASSERT_EQ(TotalNs(Subtract(a, b)), only_a);
    ASSERT_EQ(TotalNs(Unite(a, b)), either);
  }
}

// IntersectNs walks two sets of like size together and, for a set under a sixteenth of the
// other's size, searches the long one for each short interval: both ways agree with a
// pointwise count, whichever argument is the short one.
TEST(IntervalsTest, IntersectNsAgreesWithAPointwiseCountForShortAndLongSets) {
  std::mt19937 rng(7);
  auto random_set = [&](int count, int64_t span) {
    std::vector<Interval> raw;
    for (int k = 0; k < count; ++k) {
      const int64_t s = static_cast<int64_t>(rng() % span);
      raw.push_back({s, s + 1 + static_cast<int64_t>(rng() % 12)});
    }
    return UnionOf(raw);
  };
  auto in = [](const IntervalSet& set, int64_t x) {
    for (const Interval& i : set) {
      if (x >= i.start_ns && x < i.end_ns) return true;
    }
    return false;
  };
  for (int trial = 0; trial < 100; ++trial) {
    const int64_t span = 20000;
    const IntervalSet many = random_set(800, span);
    const IntervalSet few = random_set(1 + trial % 20, span);
    ASSERT_LT(few.size() * 16, many.size());  // the search's case
    const IntervalSet like = random_set(300, span);
    int64_t few_many = 0, like_many = 0;
    for (int64_t x = 0; x < span + 20; ++x) {
      few_many += in(few, x) && in(many, x);
      like_many += in(like, x) && in(many, x);
    }
    ASSERT_EQ(IntersectNs(few, many), few_many);
    ASSERT_EQ(IntersectNs(many, few), few_many);
    ASSERT_EQ(IntersectNs(like, many), like_many);
    ASSERT_EQ(TotalNs(Intersect(few, many)), few_many);
  }
}

}  // namespace
}  // namespace shardscope
