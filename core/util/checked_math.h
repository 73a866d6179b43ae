// Integer arithmetic that reports overflow instead of wrapping (signed overflow is undefined
// behaviour, and a wrapped size is a silently wrong answer).
//
// Contents:
//   CheckedMul / CheckedAdd   a·b, a+b of int64, or nullopt when the result does not fit
//   CheckedProduct            the product of a list, or nullopt on overflow
//   kMaxDurationNs            the longest duration any figure may hold (2^60 ns, 36.5 years)
//   SaturatingNs              double nanoseconds → int64, kMaxDurationNs for anything longer
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>

namespace shardscope {

inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> CheckedProduct(std::initializer_list<int64_t> factors) {
  int64_t r = 1;
  for (int64_t f : factors) {
    if (__builtin_mul_overflow(r, f, &r)) return std::nullopt;
  }
  return r;
}

// Far beyond any real step, and 8x below int64's limit, so a sum of a few durations or one
// stretched by contention cannot wrap; a figure that reaches it is refused, not reported.
inline constexpr int64_t kMaxDurationNs = int64_t{1} << 60;

// Rounds `ns` to an integer; negative → 0, NaN and anything at or above kMaxDurationNs →
// kMaxDurationNs (a double cast beyond int64's range is undefined, in practice INT64_MIN).
inline int64_t SaturatingNs(double ns) {
  if (!(ns < static_cast<double>(kMaxDurationNs))) return kMaxDurationNs;
  if (ns <= 0) return 0;
  return std::llround(ns);
}

}  // namespace shardscope
