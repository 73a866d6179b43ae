// Contents: FlatIndex, a 64-bit key → non-negative int map by flat open addressing (linear
// probing, a power-of-two table at most half full). For hot lookups over dense small keys, one
// per event or row, where a node-based std::unordered_map costs a dependent cache miss or two:
// a trace's (rank, lane) while events are sorted, the viewer's (rank, op_id) → row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace shardscope {

class FlatIndex {
 public:
  // Empties the index, sized so that `expected` keys fit without growing.
  void Reset(size_t expected) {
    size_t n = 16;
    while (n < 2 * expected) n *= 2;
    slots_.assign(n, {0, kFree});
    count_ = 0;
  }
  // The value of `key`, or -1.
  int Find(uint64_t key) const {
    if (slots_.empty()) return -1;
    for (size_t i = Home(key);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].second == kFree) return -1;
      if (slots_[i].first == key) return slots_[i].second;
    }
  }
  // The value of `key`, inserting `value` (≥ 0) when the key is new; second: whether it was.
  std::pair<int, bool> Emplace(uint64_t key, int value) {
    std::pair<uint64_t, int>& slot = SlotFor(key);
    if (slot.second != kFree) return {slot.second, false};
    slot = {key, value};
    ++count_;
    return {value, true};
  }
  // Sets the value of `key` (≥ 0); a second call for one key replaces the first.
  void Set(uint64_t key, int value) {
    std::pair<uint64_t, int>& slot = SlotFor(key);
    if (slot.second == kFree) ++count_;
    slot = {key, value};
  }

 private:
  static constexpr int kFree = -1;
  size_t Home(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> 32) & (slots_.size() - 1);
  }
  // The slot holding `key`, or the free one where it goes (grown first, to stay half full).
  std::pair<uint64_t, int>& SlotFor(uint64_t key) {
    if (2 * (count_ + 1) > slots_.size()) {
      std::vector<std::pair<uint64_t, int>> old = std::move(slots_);
      Reset(count_ + 1);
      for (const auto& [k, v] : old) {
        if (v != kFree) Set(k, v);
      }
    }
    size_t i = Home(key);
    while (slots_[i].second != kFree && slots_[i].first != key) i = (i + 1) & (slots_.size() - 1);
    return slots_[i];
  }
  std::vector<std::pair<uint64_t, int>> slots_;  // (key, value); kFree: a free slot
  size_t count_ = 0;
};

}  // namespace shardscope
