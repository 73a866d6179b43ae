// CachingAllocatorModel::CheckConsistency: the model's invariants, checked by the allocator
// tests after every step of random request sequences.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "sim/engine/caching_allocator.h"

namespace shardscope::sim {

std::string CachingAllocatorModel::CheckConsistency() const {
  int64_t reserved = 0;
  int live = 0;
  std::set<int> free_blocks;  // met walking the segments
  std::vector<std::vector<int>> unmapped(unmapped_.size());
  for (size_t s = 0; s < segments_.size(); ++s) {
    const Segment& seg = segments_[s];
    if (!seg.live) continue;
    ++live;
    int64_t at = 0;
    int prev = -1;
    for (int b = seg.first_block; b >= 0; b = blocks_[b].next) {
      const Block& k = blocks_[b];
      if (k.segment != static_cast<int>(s) || k.offset != at || k.prev != prev || k.size <= 0) {
        return fmt::format("segment {}: block {} at {} (expected {}), prev {} (expected {})", s, b,
                           k.offset, at, k.prev, prev);
      }
      if (k.free && !k.mapped) return fmt::format("block {} is free but unmapped", b);
      if (prev >= 0 && ((k.free && blocks_[prev].free) || (!k.mapped && !blocks_[prev].mapped))) {
        return fmt::format("blocks {} and {} are not coalesced", prev, b);
      }
      if (k.mapped) {
        reserved += seg.expandable ? k.size : 0;
      } else {
        const int64_t unit = MapUnit(k.pool);
        if (k.offset % unit != 0 || k.size % unit != 0)
          return fmt::format("unmapped block {} is not whole units", b);
        if (k.pool >= static_cast<int>(unmapped.size())) unmapped.resize(k.pool + 1);
        unmapped[k.pool].push_back(b);
      }
      if (k.free) free_blocks.insert(b);
      at += k.size;
      prev = b;
    }
    if (at != seg.size) return fmt::format("segment {}: blocks cover {} of {}", s, at, seg.size);
    if (!seg.expandable) reserved += seg.size;
  }
  if (live != live_segments_)
    return fmt::format("{} live segments, counted {}", live, live_segments_);
  if (reserved != reserved_bytes_)
    return fmt::format("reserved {} bytes, counted {}", reserved, reserved_bytes_);
  size_t listed = 0;
  for (size_t p = 0; p < free_.size(); ++p) {
    for (size_t i = 0; i < free_[p].size(); ++i) {
      const FreeEntry& e = free_[p][i];
      if (i > 0 && !(free_[p][i - 1] < e)) return fmt::format("pool {}: free list not sorted", p);
      if (free_blocks.count(e.id) == 0 || !(EntryOf(e.id) == e) ||
          blocks_[e.id].pool != static_cast<int>(p)) {
        return fmt::format("pool {}: free entry ({}, {}) is not a free block of the pool", p,
                           e.size, e.id);
      }
      ++listed;
    }
  }
  if (listed != free_blocks.size())
    return fmt::format("{} free blocks, {} in the free lists", free_blocks.size(), listed);
  for (size_t p = 0; p < unmapped_.size(); ++p) {
    std::vector<int> want = p < unmapped.size() ? unmapped[p] : std::vector<int>{};
    if (unmapped_[p] != want) return fmt::format("pool {}: unmapped list out of date", p);
  }
  return "";
}

}  // namespace shardscope::sim
