// An estimate of what PyTorch's CUDA caching allocator reserves
// (c10/cuda/CUDACachingAllocator.cpp), replayed over the allocations of a simulated step.
//
// Contents:
//   CachingAllocatorModel   Allocate / Free / reserved_bytes / peak_reserved_bytes
//   RoundAllocationBytes    the allocator's request rounding (512 B multiples)
//   SegmentBytes            the size of a new segment for a rounded request
//
// What is modelled (the allocator's defaults, no PYTORCH_CUDA_ALLOC_CONF):
//   - requests rounded up to 512 B; requests <= 1 MiB come from the small pool (2 MiB
//     segments), larger ones from the large pool (20 MiB segments for < 10 MiB, otherwise the
//     request rounded up to 2 MiB);
//   - blocks are cached per stream: a freed block is reused only by later requests of the
//     same stream and pool that fit; best fit (smallest cached block that fits), split when
//     the rest is >= 512 B (small pool) or > 1 MiB (large pool); free neighbours in one
//     segment coalesce;
//   - when a new segment would exceed the capacity, fully free cached segments are released
//     first (the allocator's free-and-retry); if it still does not fit, that is an OOM.
// Simplified: one segment per cudaMalloc, no expandable segments, no max_split_size, no
// garbage-collection threshold, no cross-stream record_stream delays (a block is reusable as
// soon as the step frees it), no per-allocation alignment beyond 512 B.
#pragma once

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace shardscope::sim {

inline constexpr int64_t kAllocatorMinBlockBytes = 512;
inline constexpr int64_t kAllocatorSmallSizeBytes = int64_t{1} << 20;       // 1 MiB
inline constexpr int64_t kAllocatorSmallBufferBytes = int64_t{2} << 20;     // 2 MiB
inline constexpr int64_t kAllocatorLargeBufferBytes = int64_t{20} << 20;    // 20 MiB
inline constexpr int64_t kAllocatorMinLargeAllocBytes = int64_t{10} << 20;  // 10 MiB
inline constexpr int64_t kAllocatorRoundLargeBytes = int64_t{2} << 20;      // 2 MiB

// Request size after the allocator's rounding (at least 512 B).
int64_t RoundAllocationBytes(int64_t bytes);
// Size of the segment cudaMalloc'd for a rounded request that no cached block fits.
int64_t SegmentBytes(int64_t rounded_bytes);

class CachingAllocatorModel {
 public:
  // capacity_bytes <= 0: unlimited (no release-and-retry, never OOM).
  explicit CachingAllocatorModel(int64_t capacity_bytes = 0) : capacity_bytes_(capacity_bytes) {}

  // Allocates `bytes` (> 0) on `stream`; returns a handle for Free.
  int Allocate(int64_t bytes, int stream);
  // Returns the block of `handle` to its stream's cache.
  void Free(int handle);

  int64_t reserved_bytes() const { return reserved_bytes_; }
  int64_t peak_reserved_bytes() const { return peak_reserved_bytes_; }
  // Sum of the rounded sizes of live blocks.
  int64_t allocated_rounded_bytes() const { return allocated_rounded_bytes_; }
  // Number of allocations whose segment did not fit under the capacity, even after releasing.
  int oom_count() const { return oom_count_; }
  int segment_count() const { return live_segments_; }

 private:
  struct Block {
    int64_t size = 0;
    int64_t offset = 0;
    int segment = -1;
    int prev = -1;  // neighbours inside the segment, by address
    int next = -1;
    bool free = false;
    int pool = 0;  // key into free_ (stream * 2 + large)
  };
  struct Segment {
    int64_t size = 0;
    int pool = 0;
    int first_block = -1;
    bool live = false;
  };

  int NewBlock(const Block& b);
  void InsertFree(int id);
  void EraseFree(int id);
  void ReleaseFreeSegments();
  std::set<std::pair<int64_t, int>>& FreeSet(int pool);

  int64_t capacity_bytes_;
  int64_t reserved_bytes_ = 0;
  int64_t peak_reserved_bytes_ = 0;
  int64_t allocated_rounded_bytes_ = 0;
  int oom_count_ = 0;
  int live_segments_ = 0;
  std::vector<Block> blocks_;
  std::vector<int> unused_block_ids_;
  std::vector<Segment> segments_;
  std::vector<std::set<std::pair<int64_t, int>>> free_;  // per pool: (size, block id)
  std::set<int> idle_segments_;  // live segments that are one free block (releasable)
};

}  // namespace shardscope::sim
