// Expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): the parts of
// CachingAllocatorModel that map and unmap a stream's one growing segment. The rules are those
// of c10/cuda/CUDACachingAllocator.cpp (get_free_block, try_allocate_expandable_block,
// find_expandable_block, map_block, unmap_block), summarised in caching_allocator.h.
#include <algorithm>
#include <cassert>

#include "sim/engine/caching_allocator.h"

namespace shardscope::sim {
namespace {

// 1 TiB: a range no replay fills, for a model without a GPU's size (a device's 14 lanes and
// pools of such ranges stay inside a 47-bit address space).
constexpr int64_t kUnboundedAddressSpace = int64_t{1} << 40;

int64_t RoundUp(int64_t bytes, int64_t unit) { return (bytes + unit - 1) / unit * unit; }
int64_t RoundDown(int64_t bytes, int64_t unit) { return bytes / unit * unit; }

}  // namespace

int64_t CachingAllocatorModel::MapUnit(int pool) const {
  return ExpandableUnitBytes(pool % 2 == 1);
}

std::vector<int>& CachingAllocatorModel::Unmapped(int pool) {
  if (pool >= static_cast<int>(unmapped_.size())) unmapped_.resize(pool + 1);
  return unmapped_[pool];
}

// Few unmapped ranges exist (a segment's tail, and holes left by a release), so sorted vectors
// searched linearly.
void CachingAllocatorModel::InsertUnmapped(int id) {
  std::vector<int>& list = Unmapped(blocks_[id].pool);
  const auto before = [&](int a, int b) {
    return blocks_[a].segment != blocks_[b].segment ? blocks_[a].segment < blocks_[b].segment
                                                    : blocks_[a].offset < blocks_[b].offset;
  };
  list.insert(std::lower_bound(list.begin(), list.end(), id, before), id);
}

void CachingAllocatorModel::EraseUnmapped(int id) {
  std::vector<int>& list = Unmapped(blocks_[id].pool);
  const auto it = std::find(list.begin(), list.end(), id);
  assert(it != list.end());
  list.erase(it);
}

CachingAllocatorModel::FreeList::iterator CachingAllocatorModel::SkipExpandableTails(
    FreeList& list, FreeList::iterator it) {
  // A free block followed by unmapped space counts as that much larger, so the block that ends
  // the mapped part is kept for requests nothing else fits.
  const auto expandable_size = [&](int b) {
    const int next = blocks_[b].next;
    return blocks_[b].size + (next >= 0 && !blocks_[next].mapped ? blocks_[next].size : 0);
  };
  while (it != list.end() && segments_[blocks_[it->id].segment].expandable) {
    const auto next = it + 1;
    if (next == list.end() || expandable_size(next->id) >= expandable_size(it->id)) break;
    it = next;
  }
  return it;
}

int CachingAllocatorModel::FindExpandableBlock(int pool, int64_t size) {
  // The lowest unmapped range that, with the free block before it and the free or unmapped
  // blocks after it, holds the request.
  for (int u : Unmapped(pool)) {
    int candidate = u;
    const int prev = blocks_[u].prev;
    if (prev >= 0 && blocks_[prev].free) candidate = prev;
    int64_t bytes = 0;
    for (int b = candidate; b >= 0 && bytes < size && Allocatable(b); b = blocks_[b].next)
      bytes += blocks_[b].size;
    if (bytes >= size) return candidate;
  }
  // None: a new segment for the stream (the first, or when the ranges are used up).
  const int64_t unit = MapUnit(pool);
  const int64_t space =
      config_.address_space_bytes > 0 ? config_.address_space_bytes : kUnboundedAddressSpace;
  const int64_t bytes = RoundUp(std::max(space, size), unit);
  const int seg = static_cast<int>(segments_.size());
  if (backing_ != nullptr && !backing_->ReserveAddressSpace(seg, bytes)) return -1;
  segments_.push_back(Segment{bytes, pool, -1, true, true});
  Block range{bytes, 0, seg, -1, -1, false, pool};
  range.mapped = false;
  const int id = NewBlock(range);
  segments_[seg].first_block = id;
  ++live_segments_;
  InsertUnmapped(id);
  return id;
}

int64_t CachingAllocatorModel::BytesToMap(int candidate, int64_t size) const {
  const int64_t unit = MapUnit(blocks_[candidate].pool);
  int64_t have = 0;
  int64_t to_map = 0;
  for (int b = candidate; have < size; b = blocks_[b].next) {
    if (blocks_[b].mapped) {
      have += blocks_[b].size;
    } else {
      const int64_t m = std::min(RoundUp(size - have, unit), blocks_[b].size);
      to_map += m;
      have += m;
    }
  }
  return to_map;
}

int CachingAllocatorModel::MapRun(int candidate, int64_t size) {
  const int pool = blocks_[candidate].pool;
  const int seg = blocks_[candidate].segment;
  const int64_t unit = MapUnit(pool);
  int run = -1;  // the mapped free block grown so far, out of the free list
  bool last_mapped = false;
  const auto join = [&](int b) {
    if (run < 0) {
      run = b;
    } else {
      Absorb(run, b);
    }
  };
  for (int b = candidate; b >= 0 && (run < 0 || blocks_[run].size < size);) {
    if (blocks_[b].mapped) {
      EraseFree(b);
      join(b);
      last_mapped = false;
    } else {
      const int64_t have = run < 0 ? 0 : blocks_[run].size;
      const int64_t m = std::min(RoundUp(size - have, unit), blocks_[b].size);
      if (backing_ != nullptr && !backing_->Map(seg, blocks_[b].offset, m)) {
        if (run >= 0) InsertFree(run);  // what was mapped stays, cached
        return -1;
      }
      reserved_bytes_ += m;
      peak_reserved_bytes_ = std::max(peak_reserved_bytes_, reserved_bytes_);
      EraseUnmapped(b);
      if (m < blocks_[b].size) InsertUnmapped(SplitAt(b, blocks_[b].offset + m));
      blocks_[b].mapped = true;
      join(b);
      last_mapped = true;
    }
    b = blocks_[run].next;
  }
  // map_block joins a newly mapped range with the free block after it too.
  const int next = blocks_[run].next;
  if (last_mapped && next >= 0 && blocks_[next].free) {
    EraseFree(next);
    Absorb(run, next);
  }
  if (blocks_[run].prev < 0) segments_[seg].first_block = run;
  InsertFree(run);
  return run;
}

int CachingAllocatorModel::MapForRequest(int pool, int64_t size) {
  int candidate = FindExpandableBlock(pool, size);
  if (candidate < 0) {  // the backing refused an address range
    ++oom_count_;
    return -1;
  }
  if (capacity_bytes_ > 0 && reserved_bytes_ + BytesToMap(candidate, size) > capacity_bytes_) {
    ++capacity_hits_;
    ReleaseFreeSegments();
    candidate = FindExpandableBlock(pool, size);
    if (candidate < 0) {
      ++oom_count_;
      return -1;
    }
    if (reserved_bytes_ + BytesToMap(candidate, size) > capacity_bytes_) ++oom_count_;
  }
  int run = MapRun(candidate, size);
  if (run < 0) {
    // The backing ran out: unmap what is cached and try once more, as the allocator retries
    // after release_cached_blocks.
    ReleaseFreeSegments();
    candidate = FindExpandableBlock(pool, size);
    run = candidate < 0 ? -1 : MapRun(candidate, size);
    if (run < 0) ++oom_count_;
  }
  return run;
}

void CachingAllocatorModel::UnmapFreeBlocks() {
  std::vector<int> cached;
  for (const FreeList& list : free_) {
    for (const FreeEntry& e : list) {
      if (segments_[blocks_[e.id].segment].expandable) cached.push_back(e.id);
    }
  }
  for (int id : cached) UnmapInterior(id);
}

void CachingAllocatorModel::UnmapInterior(int id) {
  const int64_t unit = MapUnit(blocks_[id].pool);
  const int64_t begin = blocks_[id].offset;
  const int64_t end = begin + blocks_[id].size;
  const int64_t lo = RoundUp(begin, unit);
  const int64_t hi = RoundDown(end, unit);
  if (hi <= lo) return;
  const int seg = blocks_[id].segment;
  EraseFree(id);
  // Up to three pieces: a mapped head, the unmapped units, a mapped tail.
  int middle = id;
  if (lo > begin) {
    middle = SplitAt(id, lo);
    InsertFree(id);
  }
  if (hi < end) InsertFree(SplitAt(middle, hi));
  if (backing_ != nullptr) backing_->Unmap(seg, lo, hi - lo);
  reserved_bytes_ -= hi - lo;
  blocks_[middle].mapped = false;
  blocks_[middle].free = false;
  // Unmapped neighbours become one range.
  const int prev = blocks_[middle].prev;
  if (prev >= 0 && !blocks_[prev].mapped) {
    EraseUnmapped(prev);
    Absorb(prev, middle);
    middle = prev;
  }
  const int next = blocks_[middle].next;
  if (next >= 0 && !blocks_[next].mapped) {
    EraseUnmapped(next);
    Absorb(middle, next);
  }
  if (blocks_[middle].prev < 0) segments_[seg].first_block = middle;
  if (blocks_[middle].prev < 0 && blocks_[middle].next < 0) {
    // Nothing of the segment is mapped: its address range goes back (release_expandable_segment).
    unused_block_ids_.push_back(middle);
    segments_[seg].live = false;
    --live_segments_;
    if (backing_ != nullptr) backing_->ReleaseAddressSpace(seg);
    return;
  }
  InsertUnmapped(middle);
}

}  // namespace shardscope::sim
