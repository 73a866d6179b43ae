// An estimate of what PyTorch's CUDA caching allocator reserves
// (c10/cuda/CUDACachingAllocator.cpp), replayed over the allocations of a simulated step.
//
// Contents:
//   CachingAllocatorModel   Allocate / Free / reserved_bytes / peak_reserved_bytes
//   RoundAllocationBytes    the allocator's request rounding (512 B multiples)
//   SegmentBytes            the size of a new segment for a rounded request
//   SegmentBacking          real memory behind segments (the backend's devices; the simulator
//                           has none and only counts)
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
// With expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, AllocatorConfig),
// as CUDACachingAllocator.cpp runs them:
//   - each stream and pool has one segment: a virtual range of the GPU's memory × 9/8, mapped
//     from its start in units of 2 MiB (small pool) or 20 MiB (large pool) as requests need;
//     reserved is what is mapped;
//   - a request no cached block fits maps ceil((size - F) / unit) units after the free block F
//     that ends the mapped part (the lowest unmapped range that, with the free block before
//     it, holds the request), and the new range joins F (try_allocate_expandable_block);
//   - best fit treats a free block before unmapped space as that much larger, so it is taken
//     only when no other cached block fits (get_free_block's expandable_size);
//   - large blocks split whenever 512 B or more remain (should_split);
//   - at the capacity the whole units inside every free block are unmapped, wherever they lie
//     (release_cached_blocks → unmap_block), and the request is tried again.
// Simplified: one segment per cudaMalloc, no max_split_size, no garbage-collection threshold,
// no cross-stream record_stream delays (a block is reusable as soon as the step frees it), no
// per-allocation alignment beyond 512 B; without expandable segments best fit's ties go to the
// lowest block id, not the lower address.
#pragma once

#include <algorithm>
#include <climits>
#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::sim {

inline constexpr int64_t kAllocatorMinBlockBytes = 512;
inline constexpr int64_t kAllocatorSmallSizeBytes = int64_t{1} << 20;       // 1 MiB
inline constexpr int64_t kAllocatorSmallBufferBytes = int64_t{2} << 20;     // 2 MiB
inline constexpr int64_t kAllocatorLargeBufferBytes = int64_t{20} << 20;    // 20 MiB
inline constexpr int64_t kAllocatorMinLargeAllocBytes = int64_t{10} << 20;  // 10 MiB
inline constexpr int64_t kAllocatorRoundLargeBytes = int64_t{2} << 20;      // 2 MiB
// The unit an expandable segment of the large (requests over 1 MiB) or the small pool is
// mapped in.
inline int64_t ExpandableUnitBytes(bool large) {
  return large ? kAllocatorLargeBufferBytes : kAllocatorSmallBufferBytes;
}

// Request size after the allocator's rounding (at least 512 B).
int64_t RoundAllocationBytes(int64_t bytes);
// Size of the segment cudaMalloc'd for a rounded request that no cached block fits.
int64_t SegmentBytes(int64_t rounded_bytes);

// What a real device supplies: the raw allocation behind each segment (malloc, cudaMalloc).
// With a backing the model is the policy of a real allocator: a segment the backing refuses
// makes it release every free cached segment and retry once, as PyTorch's allocator does
// after a failed cudaMalloc, and the allocation fails (-1) if the retry is refused too.
class SegmentBacking {
 public:
  virtual ~SegmentBacking() = default;
  // Obtains `bytes` for new segment `segment`; false when there is no memory for it.
  virtual bool Reserve(int segment, int64_t bytes) = 0;
  virtual void Release(int segment) = 0;
  // Expandable segments: an address range for `segment` with nothing behind it, then whole
  // units of it mapped and unmapped. A backing that cannot (the default) refuses the range, and
  // the allocation fails.
  virtual bool ReserveAddressSpace(int /*segment*/, int64_t /*bytes*/) { return false; }
  virtual bool Map(int /*segment*/, int64_t /*offset*/, int64_t /*bytes*/) { return false; }
  virtual void Unmap(int /*segment*/, int64_t /*offset*/, int64_t /*bytes*/) {}
  virtual void ReleaseAddressSpace(int /*segment*/) {}
};

// The PYTORCH_CUDA_ALLOC_CONF settings the model follows.
struct AllocatorConfig {
  bool expandable_segments = false;
  // The virtual size of one expandable segment (PyTorch: the GPU's total memory × 9/8);
  // <= 0: 1 TiB.
  int64_t address_space_bytes = 0;
};

class CachingAllocatorModel {
 public:
  // capacity_bytes <= 0: unlimited (no release-and-retry, never OOM).
  explicit CachingAllocatorModel(int64_t capacity_bytes = 0, AllocatorConfig config = {})
      : capacity_bytes_(capacity_bytes), config_(config) {}

  const AllocatorConfig& config() const { return config_; }
  // Not owned; must outlive the model. Set before the first Allocate.
  void set_backing(SegmentBacking* backing) { backing_ = backing; }

  // Allocates `bytes` (> 0) on `stream`; returns a handle for Free. -1 only with a backing
  // that refuses the segment (see SegmentBacking).
  int Allocate(int64_t bytes, int stream);
  // Returns the block of `handle` to its stream's cache.
  void Free(int handle);

  // Bytes of segments (with expandable segments: mapped bytes).
  int64_t reserved_bytes() const { return reserved_bytes_; }
  int64_t peak_reserved_bytes() const { return peak_reserved_bytes_; }
  // Sum of the rounded sizes of live blocks.
  int64_t allocated_rounded_bytes() const { return allocated_rounded_bytes_; }
  // Number of allocations whose segment did not fit under the capacity, even after releasing.
  int oom_count() const { return oom_count_; }
  // Number of new segments that met the capacity (each set off the free-and-retry, whether or
  // not an OOM followed): from the first, what is reserved depends on what was cached then.
  int capacity_hits() const { return capacity_hits_; }
  int segment_count() const { return live_segments_; }
  // Where a live block lies: its segment and its byte offset in it; its rounded size.
  int segment_of(int handle) const { return blocks_[handle].segment; }
  int64_t offset_of(int handle) const { return blocks_[handle].offset; }
  int64_t block_bytes(int handle) const { return blocks_[handle].size; }
  // What is wrong with the model's own bookkeeping, empty when nothing (for tests): every live
  // segment tiled by its blocks in offset order, the free lists holding exactly the free
  // mapped blocks, neighbours coalesced, unmapped ranges whole units and listed, reserved the
  // sum of what is mapped.
  std::string CheckConsistency() const;
  // Releases every fully free cached segment, and unmaps the whole units inside every free
  // block of an expandable segment (torch.cuda.empty_cache()).
  void ReleaseCached() { ReleaseFreeSegments(); }

 private:
  struct Block {
    int64_t size = 0;
    int64_t offset = 0;
    int segment = -1;
    int prev = -1;  // neighbours inside the segment, by address
    int next = -1;
    bool free = false;   // cached and mapped: in its pool's free list
    int pool = 0;        // key into free_ (stream * 2 + large)
    bool mapped = true;  // false: an expandable segment's range with no memory behind it
  };
  struct Segment {
    int64_t size = 0;
    int pool = 0;
    int first_block = -1;
    bool live = false;
    bool expandable = false;
  };

  int NewBlock(const Block& b);
  void InsertFree(int id);
  void EraseFree(int id);
  void ReleaseFreeSegments();
  // Block `b` (the one after `into`) joins `into`.
  void Absorb(int into, int b);
  // The inverse: block `b` ends at offset `at`, and the new block returned (of its pool, mapped
  // as it is, not free) holds the rest.
  int SplitAt(int b, int64_t at);

  // Expandable segments (caching_allocator_expandable.cpp).
  int64_t MapUnit(int pool) const;
  bool Allocatable(int b) const { return blocks_[b].free || !blocks_[b].mapped; }
  // A free mapped block of `pool` holding `size`, mapped for it, in the free list; -1 when the
  // backing refuses.
  int MapForRequest(int pool, int64_t size);
  int FindExpandableBlock(int pool, int64_t size);
  int64_t BytesToMap(int candidate, int64_t size) const;
  int MapRun(int candidate, int64_t size);
  void UnmapFreeBlocks();
  void UnmapInterior(int id);
  std::vector<int>& Unmapped(int pool);
  void InsertUnmapped(int id);
  void EraseUnmapped(int id);
  // A pool's cached blocks, (size, order, block id) ascending: best fit is the first not below
  // the request. A sorted vector, not a
  // std::set: a step replays an allocation and a free per buffer, and a set allocated and freed
  // a node for each (the allocator model's share of a sweep's profile, issue 14).
  // An entry: a trivially copyable pair, so that shifting a list's entries is one memmove
  // (std::pair's assignment is user-provided: element by element).
  // `order` breaks ties of size by address, as PyTorch's BlockComparatorSize does, where that
  // decides more than which of two equal blocks serves: in an expandable segment, the offset in
  // 512 B units (the block before unmapped space is skipped only for a larger one); elsewhere 0,
  // ties then going to the lowest block id.
  struct FreeEntry {
    int64_t size;
    int32_t order;
    int id;
    auto operator<=>(const FreeEntry&) const = default;
  };
  FreeEntry EntryOf(int id) const {
    const Block& b = blocks_[id];
    const bool by_address = config_.expandable_segments && segments_[b.segment].expandable;
    return {b.size,
            by_address ? static_cast<int32_t>(
                             std::min<int64_t>(b.offset / kAllocatorMinBlockBytes, INT32_MAX))
                       : 0,
            id};
  }
  using FreeList = std::vector<FreeEntry>;
  FreeList& FreeSet(int pool) {  // inline: every insert and erase asks for its list
    if (pool >= static_cast<int>(free_.size())) [[unlikely]]
      free_.resize(pool + 1);
    return free_[pool];
  }
  // Block `id`'s entry replaces `entry` (a neighbour's, taken over by a coalesce), or the entry
  // at `at` of `list`, its pool's (the block a split came from).
  void ReplaceFree(FreeEntry entry, int id);
  void ReplaceFreeAt(FreeList& list, FreeList::iterator at, int id);
  // get_free_block's step past a best fit that ends at unmapped space, to the next larger
  // block whose size and unmapped space after it are smaller.
  FreeList::iterator SkipExpandableTails(FreeList& list, FreeList::iterator it);

  int64_t capacity_bytes_;
  AllocatorConfig config_;
  SegmentBacking* backing_ = nullptr;
  int64_t reserved_bytes_ = 0;
  int64_t peak_reserved_bytes_ = 0;
  int64_t allocated_rounded_bytes_ = 0;
  int oom_count_ = 0;
  int capacity_hits_ = 0;
  int live_segments_ = 0;
  std::vector<Block> blocks_;
  std::vector<int> unused_block_ids_;
  std::vector<Segment> segments_;
  std::vector<FreeList> free_;      // per pool
  std::vector<int> idle_segments_;  // ascending: live segments that are one free block
  // Per pool: the unmapped blocks of its expandable segments, by segment then offset.
  std::vector<std::vector<int>> unmapped_;
};

}  // namespace shardscope::sim
