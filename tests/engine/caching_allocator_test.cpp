#include "sim/engine/caching_allocator.h"

#include <gtest/gtest.h>

#include "core/util/units.h"

namespace shardscope::sim {
namespace {

TEST(CachingAllocatorTest, RoundingAndSegmentSizesFollowTheAllocator) {
  EXPECT_EQ(RoundAllocationBytes(1), 512);
  EXPECT_EQ(RoundAllocationBytes(513), 1024);
  EXPECT_EQ(RoundAllocationBytes(kMiB), kMiB);
  EXPECT_EQ(SegmentBytes(512), 2 * kMiB);
  EXPECT_EQ(SegmentBytes(kMiB), 2 * kMiB);
  EXPECT_EQ(SegmentBytes(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(SegmentBytes(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(SegmentBytes(10 * kMiB + 1), 12 * kMiB);
}

TEST(CachingAllocatorTest, SmallRequestsShareOneSegment) {
  CachingAllocatorModel a;
  for (int i = 0; i < 4; ++i) a.Allocate(100 * 1024, 1);
  EXPECT_EQ(a.reserved_bytes(), 2 * kMiB);
  EXPECT_EQ(a.segment_count(), 1);
}

TEST(CachingAllocatorTest, FreedBlocksAreReusedOnlyBySameStreamAndIfTheyFit) {
  CachingAllocatorModel a;
  const int h = a.Allocate(100 * kMiB, 1);
  a.Free(h);
  EXPECT_EQ(a.reserved_bytes(), 100 * kMiB);  // cached, not returned
  a.Allocate(60 * kMiB, 1);                   // fits: reuses (split)
  EXPECT_EQ(a.reserved_bytes(), 100 * kMiB);
  a.Allocate(60 * kMiB, 1);  // 40 MiB left does not fit: new segment
  EXPECT_EQ(a.reserved_bytes(), 160 * kMiB);
  a.Allocate(30 * kMiB, 2);  // another stream never uses stream 1's cache
  EXPECT_EQ(a.reserved_bytes(), 190 * kMiB);
  a.Allocate(30 * kMiB, 1);  // the 40 MiB remainder of the first segment
  EXPECT_EQ(a.reserved_bytes(), 190 * kMiB);
  EXPECT_EQ(a.peak_reserved_bytes(), 190 * kMiB);
}

TEST(CachingAllocatorTest, NeighboursCoalesceOnFree) {
  CachingAllocatorModel a;
  const int x = a.Allocate(40 * kMiB, 0);
  a.Free(x);
  const int p = a.Allocate(10 * kMiB, 0);
  const int q = a.Allocate(10 * kMiB, 0);
  const int r = a.Allocate(10 * kMiB, 0);
  EXPECT_EQ(a.reserved_bytes(), 40 * kMiB);
  a.Free(p);
  a.Free(r);
  a.Free(q);  // joins both sides: one 40 MiB block again
  a.Allocate(40 * kMiB, 0);
  EXPECT_EQ(a.reserved_bytes(), 40 * kMiB);
  EXPECT_EQ(a.allocated_rounded_bytes(), 40 * kMiB);
}

TEST(CachingAllocatorTest, ReleasesCachedSegmentsBeforeReportingOom) {
  CachingAllocatorModel a(100 * kMiB);
  const int h = a.Allocate(60 * kMiB, 1);
  a.Free(h);
  EXPECT_EQ(a.capacity_hits(), 0);
  a.Allocate(60 * kMiB, 2);  // other stream: would need 120 MiB, so stream 1's cache is freed
  EXPECT_EQ(a.oom_count(), 0);
  EXPECT_EQ(a.capacity_hits(), 1);
  EXPECT_EQ(a.reserved_bytes(), 60 * kMiB);
  a.Allocate(60 * kMiB, 2);  // nothing left to release: OOM
  EXPECT_EQ(a.oom_count(), 1);
  EXPECT_EQ(a.capacity_hits(), 2);
  // Without a capacity nothing is ever hit.
  CachingAllocatorModel unlimited;
  unlimited.Allocate(int64_t{1} << 40, 0);
  EXPECT_EQ(unlimited.capacity_hits(), 0);
}

TEST(CachingAllocatorTest, OnlyWhollyFreeSegmentsAreReleased) {
  CachingAllocatorModel a(100 * kMiB);
  const int x = a.Allocate(30 * kMiB, 1);
  a.Allocate(30 * kMiB, 1);  // second segment stays in use
  const int y = a.Allocate(20 * kMiB, 1);
  a.Free(x);
  a.Free(y);
  EXPECT_EQ(a.reserved_bytes(), 80 * kMiB);
  a.Allocate(40 * kMiB, 2);  // 120 MiB > 100: the two idle segments (50 MiB) are released
  EXPECT_EQ(a.reserved_bytes(), 70 * kMiB);
  EXPECT_EQ(a.segment_count(), 2);
  EXPECT_EQ(a.oom_count(), 0);
  // A reused idle segment is no longer releasable.
  CachingAllocatorModel b(50 * kMiB);
  const int z = b.Allocate(30 * kMiB, 1);
  b.Free(z);
  b.Allocate(30 * kMiB, 1);  // reuses the cached segment
  b.Allocate(30 * kMiB, 2);  // nothing idle to release: OOM
  EXPECT_EQ(b.oom_count(), 1);
}

}  // namespace
}  // namespace shardscope::sim
