#include "sim/engine/caching_allocator.h"

#include <algorithm>
#include <cassert>

namespace shardscope::sim {

int64_t RoundAllocationBytes(int64_t bytes) {
  if (bytes < kAllocatorMinBlockBytes) return kAllocatorMinBlockBytes;
  return (bytes + kAllocatorMinBlockBytes - 1) / kAllocatorMinBlockBytes * kAllocatorMinBlockBytes;
}

int64_t SegmentBytes(int64_t rounded_bytes) {
  if (rounded_bytes <= kAllocatorSmallSizeBytes) return kAllocatorSmallBufferBytes;
  if (rounded_bytes < kAllocatorMinLargeAllocBytes) return kAllocatorLargeBufferBytes;
  return (rounded_bytes + kAllocatorRoundLargeBytes - 1) / kAllocatorRoundLargeBytes *
         kAllocatorRoundLargeBytes;
}

namespace {

// Sorted-vector set operations (the free lists and idle segments are small and hot).
template <typename T>
void SortedInsert(std::vector<T>& v, const T& x) {
  v.insert(std::lower_bound(v.begin(), v.end(), x), x);
}
template <typename T>
void SortedErase(std::vector<T>& v, const T& x) {
  const auto it = std::lower_bound(v.begin(), v.end(), x);
  if (it != v.end() && *it == x) v.erase(it);
}
// Puts `to` where the entry at `at` was, keeping v sorted: only the entries between the two
// places move. A split (the remainder replaces the block it came from) and a coalesce (the
// merged block replaces its neighbour) each did an erase and an insert, two shifts of the
// list's tail: 11% of a prediction's instructions were the allocator model's.
template <typename T>
void SortedReplace(std::vector<T>& v, typename std::vector<T>::iterator at, const T& to) {
  if (to < *at) {
    const auto q = std::lower_bound(v.begin(), at, to);
    std::move_backward(q, at, at + 1);
    *q = to;
  } else {
    const auto q = std::lower_bound(at + 1, v.end(), to);
    std::move(at + 1, q, at);
    *(q - 1) = to;
  }
}

}  // namespace

int CachingAllocatorModel::NewBlock(const Block& b) {
  if (!unused_block_ids_.empty()) {
    const int id = unused_block_ids_.back();
    unused_block_ids_.pop_back();
    blocks_[id] = b;
    return id;
  }
  blocks_.push_back(b);
  return static_cast<int>(blocks_.size()) - 1;
}

void CachingAllocatorModel::InsertFree(int id) {
  blocks_[id].free = true;
  SortedInsert(FreeSet(blocks_[id].pool), EntryOf(id));
}

void CachingAllocatorModel::EraseFree(int id) {
  SortedErase(FreeSet(blocks_[id].pool), EntryOf(id));
  blocks_[id].free = false;
}

void CachingAllocatorModel::ReplaceFree(FreeEntry entry, int id) {
  FreeList& list = FreeSet(blocks_[id].pool);
  const auto at = std::lower_bound(list.begin(), list.end(), entry);
  assert(at != list.end() && *at == entry);
  ReplaceFreeAt(list, at, id);
}

void CachingAllocatorModel::ReplaceFreeAt(FreeList& list, FreeList::iterator at, int id) {
  SortedReplace(list, at, EntryOf(id));
  blocks_[id].free = true;
}

void CachingAllocatorModel::Absorb(int into, int b) {
  blocks_[into].size += blocks_[b].size;
  blocks_[into].next = blocks_[b].next;
  if (blocks_[b].next >= 0) blocks_[blocks_[b].next].prev = into;
  unused_block_ids_.push_back(b);
}

int CachingAllocatorModel::SplitAt(int b, int64_t at) {
  const Block& k = blocks_[b];
  Block rest{k.offset + k.size - at, at, k.segment, b, k.next, false, k.pool};
  rest.mapped = k.mapped;
  const int id = NewBlock(rest);  // may move blocks_: `k` is not read after it
  if (blocks_[id].next >= 0) blocks_[blocks_[id].next].prev = id;
  blocks_[b].next = id;
  blocks_[b].size = at - blocks_[b].offset;
  return id;
}

void CachingAllocatorModel::ReleaseFreeSegments() {
  if (config_.expandable_segments) UnmapFreeBlocks();
  for (int s : idle_segments_) {
    Segment& seg = segments_[s];
    EraseFree(seg.first_block);
    unused_block_ids_.push_back(seg.first_block);
    seg.live = false;
    reserved_bytes_ -= seg.size;
    --live_segments_;
    if (backing_ != nullptr) backing_->Release(s);
  }
  idle_segments_.clear();
}

int CachingAllocatorModel::Allocate(int64_t bytes, int stream) {
  const int64_t size = RoundAllocationBytes(bytes);
  const bool large = size > kAllocatorSmallSizeBytes;
  const int pool = stream * 2 + (large ? 1 : 0);
  auto& free_set = FreeSet(pool);
  int id = -1;
  auto it = std::lower_bound(free_set.begin(), free_set.end(), FreeEntry{size, INT32_MIN, -1});
  if (config_.expandable_segments) {
    it = SkipExpandableTails(free_set, it);
    if (it == free_set.end()) {
      // No cached block fits: map more of the stream's segment. The mapped run joins the free
      // block before it and is cached like any other block, then split below.
      const int mapped = MapForRequest(pool, size);
      if (mapped < 0) return -1;
      it = std::lower_bound(free_set.begin(), free_set.end(), EntryOf(mapped));
    }
  }
  // The cached block's entry, left in place until the split below knows what replaces it.
  bool cached = false;
  if (it != free_set.end()) {
    id = it->id;
    cached = true;
    blocks_[id].free = false;
    if (blocks_[id].prev < 0 && blocks_[id].next < 0)
      SortedErase(idle_segments_, blocks_[id].segment);
  } else {
    const int64_t seg_size = SegmentBytes(size);
    if (capacity_bytes_ > 0 && reserved_bytes_ + seg_size > capacity_bytes_) {
      ++capacity_hits_;
      ReleaseFreeSegments();
      if (reserved_bytes_ + seg_size > capacity_bytes_) ++oom_count_;
    }
    const int seg = static_cast<int>(segments_.size());
    if (backing_ != nullptr && !backing_->Reserve(seg, seg_size)) {
      ReleaseFreeSegments();
      if (!backing_->Reserve(seg, seg_size)) {
        ++oom_count_;
        return -1;
      }
    }
    segments_.push_back(Segment{seg_size, pool, -1, true});
    id = NewBlock(Block{seg_size, 0, seg, -1, -1, false, pool});
    segments_[seg].first_block = id;
    reserved_bytes_ += seg_size;
    ++live_segments_;
    peak_reserved_bytes_ = std::max(peak_reserved_bytes_, reserved_bytes_);
  }
  const int64_t rest = blocks_[id].size - size;
  const bool split = large && !config_.expandable_segments ? rest > kAllocatorSmallSizeBytes
                                                           : rest >= kAllocatorMinBlockBytes;
  if (split) {
    const int tail_id = SplitAt(id, blocks_[id].offset + size);
    if (cached) {
      ReplaceFreeAt(free_set, it, tail_id);
    } else {
      InsertFree(tail_id);
    }
  } else if (cached) {
    free_set.erase(it);
  }
  allocated_rounded_bytes_ += blocks_[id].size;
  return id;
}

void CachingAllocatorModel::Free(int handle) {
  assert(handle >= 0 && handle < static_cast<int>(blocks_.size()) && !blocks_[handle].free);
  int id = handle;
  allocated_rounded_bytes_ -= blocks_[id].size;
  // Coalesce with free neighbours of the same segment. The merged block's free-list entry takes
  // the place of the first neighbour's (ReplaceFree); a second neighbour's is erased.
  FreeEntry taken{-1, 0, -1};
  const int prev = blocks_[id].prev;
  if (prev >= 0 && blocks_[prev].free) {
    taken = EntryOf(prev);
    Absorb(prev, id);
    id = prev;
  }
  const int next = blocks_[id].next;
  if (next >= 0 && blocks_[next].free) {
    if (taken.id >= 0) {
      EraseFree(next);
    } else {
      taken = EntryOf(next);
      blocks_[next].free = false;
    }
    Absorb(id, next);
  }
  if (blocks_[id].prev < 0) segments_[blocks_[id].segment].first_block = id;
  if (taken.id >= 0) {
    ReplaceFree(taken, id);
  } else {
    InsertFree(id);
  }
  // One free block spanning its whole segment: cudaFree-able when memory runs short (an
  // expandable segment is unmapped instead, UnmapFreeBlocks).
  if (blocks_[id].prev < 0 && blocks_[id].next < 0 && !segments_[blocks_[id].segment].expandable)
    SortedInsert(idle_segments_, blocks_[id].segment);
}

}  // namespace shardscope::sim
