#include "sim/engine/caching_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

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

// ----- Expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) -----

CachingAllocatorModel Expandable(int64_t capacity = 0) {
  return CachingAllocatorModel(capacity, AllocatorConfig{true, 0});
}

TEST(ExpandableSegmentsTest, MapWholeUnitsOfOneSegmentPerStreamAndPool) {
  CachingAllocatorModel a = Expandable();
  a.Allocate(100 * 1024, 1);
  EXPECT_EQ(a.reserved_bytes(), 2 * kMiB);  // small pool: 2 MiB units
  a.Allocate(30 * kMiB, 1);
  EXPECT_EQ(a.reserved_bytes(), 42 * kMiB);  // large pool: 20 MiB units, two of them
  a.Allocate(5 * kMiB, 1);                   // the 10 MiB left after the 30 MiB block
  EXPECT_EQ(a.reserved_bytes(), 42 * kMiB);
  EXPECT_EQ(a.segment_count(), 2);
  a.Allocate(5 * kMiB, 2);  // another stream: its own segment
  EXPECT_EQ(a.reserved_bytes(), 62 * kMiB);
  EXPECT_EQ(a.segment_count(), 3);
}

TEST(ExpandableSegmentsTest, GrowthJoinsTheFreeBlockAtTheEnd) {
  CachingAllocatorModel a = Expandable();
  a.Allocate(30 * kMiB, 0);                // maps 40 MiB, 10 MiB free at the end
  const int y = a.Allocate(15 * kMiB, 0);  // 5 MiB more: one unit, joined to the 10 MiB
  EXPECT_EQ(a.reserved_bytes(), 60 * kMiB);
  EXPECT_EQ(a.offset_of(y), 30 * kMiB);
  EXPECT_EQ(a.segment_of(y), 0);
  // Without expandable segments the same two requests take segments of their own size.
  CachingAllocatorModel b;
  b.Allocate(30 * kMiB, 0);
  b.Allocate(15 * kMiB, 0);
  EXPECT_EQ(b.reserved_bytes(), 46 * kMiB);
  EXPECT_EQ(b.segment_count(), 2);
}

TEST(ExpandableSegmentsTest, BestFitKeepsTheBlockBeforeUnmappedSpaceForLast) {
  CachingAllocatorModel a = Expandable();
  const int x = a.Allocate(20 * kMiB, 0);  // [x 20]
  a.Allocate(8 * kMiB, 0);                 // [x 20][8][12 free | unmapped]
  a.Free(x);                               // free: 20 MiB at 0, 12 MiB before the unmapped end
  const int z = a.Allocate(10 * kMiB, 0);  // the smallest fit is the 12 MiB; the 20 MiB is taken
  EXPECT_EQ(a.offset_of(z), 0);
  EXPECT_EQ(a.reserved_bytes(), 40 * kMiB);
  const int w = a.Allocate(12 * kMiB, 0);  // nothing else fits: the end block
  EXPECT_EQ(a.offset_of(w), 28 * kMiB);
  EXPECT_EQ(a.reserved_bytes(), 40 * kMiB);
}

// Equal sizes are ordered by address, as PyTorch's free blocks are: the walk past the block
// before unmapped space then reaches the next block up (a sequence a randomized comparison with
// a pointer-based re-implementation of CUDACachingAllocator.cpp found, where ordering by block
// id took the block before the hole).
TEST(ExpandableSegmentsTest, TiesOfSizeGoByAddress) {
  CachingAllocatorModel a = Expandable();
  a.Allocate(40 * kMiB, 0);
  a.Allocate(3 * kMiB, 0);
  a.Allocate(7 * kMiB, 0);
  const int h4 = a.Allocate(40 * kMiB, 0);
  const int h2 = a.Allocate(60 * kMiB, 0);
  a.ReleaseCached();
  a.Free(h2);
  a.ReleaseCached();
  a.ReleaseCached();
  a.Allocate(40 * kMiB, 0);
  a.Free(h4);
  a.ReleaseCached();
  // Free now: 10 MiB at 50 before a 20 MiB hole, 10 MiB at 80 before an allocated block, 10 MiB
  // at 130 before the unmapped end.
  const int h = a.Allocate(6 * kMiB, 0);
  EXPECT_EQ(a.offset_of(h), 80 * kMiB);
  EXPECT_EQ(a.CheckConsistency(), "");
}

TEST(ExpandableSegmentsTest, OneMappingCrossesHolesAndFreeBlocks) {
  CachingAllocatorModel a = Expandable();
  int h[5];
  for (int& x : h) x = a.Allocate(20 * kMiB, 0);  // 0-100 MiB, whole units
  a.Free(h[1]);
  a.Free(h[3]);
  a.ReleaseCached();  // holes at 20-40 and 60-80
  EXPECT_EQ(a.reserved_bytes(), 60 * kMiB);
  a.Free(h[2]);  // 40-60 free and mapped, between the holes
  // 55 MiB: the first hole, the free block and one unit of the second hole.
  const int big = a.Allocate(55 * kMiB, 0);
  EXPECT_EQ(a.offset_of(big), 20 * kMiB);
  EXPECT_EQ(a.reserved_bytes(), 100 * kMiB);
  EXPECT_EQ(a.CheckConsistency(), "");
}

TEST(ExpandableSegmentsTest, LargeBlocksSplitDownTo512Bytes) {
  CachingAllocatorModel a = Expandable();
  a.Allocate(19 * kMiB + 512 * 1024, 0);  // 512 KiB left in the unit: split off
  EXPECT_EQ(a.allocated_rounded_bytes(), 19 * kMiB + 512 * 1024);
  CachingAllocatorModel b;
  b.Allocate(19 * kMiB + 512 * 1024, 0);  // a 20 MiB segment, 512 KiB <= 1 MiB: not split
  EXPECT_EQ(b.allocated_rounded_bytes(), 20 * kMiB);
}

TEST(ExpandableSegmentsTest, CapacityUnmapsFreeUnitsOfEveryStreamThenRetries) {
  CachingAllocatorModel a = Expandable(100 * kMiB);
  const int x = a.Allocate(60 * kMiB, 1);
  a.Free(x);
  EXPECT_EQ(a.reserved_bytes(), 60 * kMiB);  // cached, still mapped
  a.Allocate(60 * kMiB, 2);  // 120 MiB > 100: stream 1's free units are unmapped first
  EXPECT_EQ(a.capacity_hits(), 1);
  EXPECT_EQ(a.oom_count(), 0);
  EXPECT_EQ(a.reserved_bytes(), 60 * kMiB);
  EXPECT_EQ(a.segment_count(), 1);  // nothing of stream 1's segment stayed mapped
  a.Allocate(60 * kMiB, 2);         // nothing free to unmap: OOM
  EXPECT_EQ(a.oom_count(), 1);
}

TEST(ExpandableSegmentsTest, EmptyCacheLeavesHolesThatAreMappedFirst) {
  CachingAllocatorModel a = Expandable();
  a.Allocate(20 * kMiB, 0);
  const int y = a.Allocate(20 * kMiB, 0);
  a.Allocate(30 * kMiB, 0);  // [20][y 20][30][10 free]
  EXPECT_EQ(a.reserved_bytes(), 80 * kMiB);
  a.Free(y);
  a.ReleaseCached();  // whole units of free blocks: y's 20 MiB, none of the 10 MiB at 70
  EXPECT_EQ(a.reserved_bytes(), 60 * kMiB);
  const int z = a.Allocate(20 * kMiB, 0);  // the lowest unmapped range that holds it: y's
  EXPECT_EQ(a.offset_of(z), 20 * kMiB);
  EXPECT_EQ(a.reserved_bytes(), 80 * kMiB);
  // A free block that holds no whole unit keeps its memory.
  const int small = a.Allocate(5 * kMiB, 0);  // from the 10 MiB at 70
  a.Free(small);
  a.ReleaseCached();
  EXPECT_EQ(a.reserved_bytes(), 80 * kMiB);
}

// Random requests on three streams, frees in random order and empty_cache now and then, with
// and without expandable segments and a capacity: after every step the model's bookkeeping
// holds (CheckConsistency) and no two live blocks overlap.
TEST(CachingAllocatorTest, RandomSequencesKeepTheBookkeeping) {
  for (const bool expandable : {false, true}) {
    for (const int64_t capacity : {int64_t{0}, 600 * kMiB}) {
      CachingAllocatorModel a(capacity, AllocatorConfig{expandable, 2 * kGiB});
      std::mt19937_64 rng(expandable * 2 + (capacity > 0));
      std::vector<int> live;
      for (int step = 0; step < 4000; ++step) {
        const uint64_t r = rng() % 100;
        if (r < 55 || live.empty()) {
          // Log-uniform sizes from 100 B to 64 MiB: both pools, splits and unit boundaries.
          const double exponent = 2 + static_cast<double>(rng() % 10000) / 10000 * 5.8;
          const int64_t bytes = static_cast<int64_t>(std::pow(10.0, exponent));
          const int h = a.Allocate(bytes, static_cast<int>(rng() % 3));
          ASSERT_GE(h, 0);
          live.push_back(h);
        } else if (r < 98) {
          const size_t i = rng() % live.size();
          a.Free(live[i]);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          a.ReleaseCached();
        }
        const std::string wrong = a.CheckConsistency();
        ASSERT_EQ(wrong, "") << "expandable " << expandable << ", capacity " << capacity
                             << ", step " << step;
        if (step % 97 == 0) {
          std::vector<std::tuple<int, int64_t, int64_t>> spans;
          for (int h : live) spans.emplace_back(a.segment_of(h), a.offset_of(h), a.block_bytes(h));
          std::sort(spans.begin(), spans.end());
          for (size_t i = 1; i < spans.size(); ++i) {
            if (std::get<0>(spans[i]) != std::get<0>(spans[i - 1])) continue;
            ASSERT_LE(std::get<1>(spans[i - 1]) + std::get<2>(spans[i - 1]), std::get<1>(spans[i]))
                << "live blocks overlap at step " << step;
          }
        }
      }
      EXPECT_GE(a.peak_reserved_bytes(), a.reserved_bytes());
      if (capacity > 0) {
        EXPECT_GT(a.capacity_hits(), 0) << "the capacity was never met";
      }
    }
  }
}

// Records what the model asks of a device.
struct RecordingBacking : SegmentBacking {
  bool Reserve(int, int64_t) override { return true; }
  void Release(int) override {}
  bool ReserveAddressSpace(int segment, int64_t bytes) override {
    ranges.push_back({segment, bytes});
    return true;
  }
  bool Map(int segment, int64_t offset, int64_t bytes) override {
    if (mapped + bytes > limit) return false;
    mapped += bytes;
    maps.push_back({segment, offset, bytes});
    return true;
  }
  void Unmap(int, int64_t, int64_t bytes) override { mapped -= bytes; }
  void ReleaseAddressSpace(int segment) override { released.push_back(segment); }
  struct Range {
    int segment;
    int64_t bytes;
  };
  struct Mapping {
    int segment;
    int64_t offset, bytes;
  };
  int64_t limit = int64_t{1} << 40;
  int64_t mapped = 0;
  std::vector<Range> ranges;
  std::vector<Mapping> maps;
  std::vector<int> released;
};

TEST(ExpandableSegmentsTest, BackingReservesTheRangeAndMapsUnits) {
  RecordingBacking backing;
  CachingAllocatorModel a(0, AllocatorConfig{true, 80 * kGiB});
  a.set_backing(&backing);
  a.Allocate(30 * kMiB, 0);
  a.Allocate(15 * kMiB, 0);
  ASSERT_EQ(backing.ranges.size(), 1u);
  EXPECT_EQ(backing.ranges[0].bytes, 80 * kGiB);  // a multiple of 20 MiB already
  ASSERT_EQ(backing.maps.size(), 2u);
  EXPECT_EQ(backing.maps[0].offset, 0);
  EXPECT_EQ(backing.maps[0].bytes, 40 * kMiB);
  EXPECT_EQ(backing.maps[1].offset, 40 * kMiB);
  EXPECT_EQ(backing.maps[1].bytes, 20 * kMiB);
  EXPECT_EQ(backing.mapped, a.reserved_bytes());
  // Another stream's range, wholly unmapped by empty_cache: its address range goes back.
  const int other = a.Allocate(kMiB * 30, 1);
  a.Free(other);
  a.ReleaseCached();
  ASSERT_EQ(backing.ranges.size(), 2u);
  EXPECT_EQ(backing.released, std::vector<int>{backing.ranges[1].segment});
  EXPECT_EQ(backing.mapped, a.reserved_bytes());
  // A device that refuses a mapping: free units are unmapped and the mapping tried again, then
  // the allocation fails.
  backing.limit = 60 * kMiB;
  EXPECT_EQ(a.Allocate(30 * kMiB, 0), -1);
  EXPECT_EQ(a.oom_count(), 1);
  // A backing without expandable segments refuses the range.
  struct Plain : SegmentBacking {
    bool Reserve(int, int64_t) override { return true; }
    void Release(int) override {}
  } plain;
  CachingAllocatorModel b(0, AllocatorConfig{true, 0});
  b.set_backing(&plain);
  EXPECT_EQ(b.Allocate(kMiB, 0), -1);
}

}  // namespace
}  // namespace shardscope::sim
