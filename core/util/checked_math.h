// Integer arithmetic that reports overflow instead of wrapping (signed overflow is undefined
// behaviour, and a wrapped size is a silently wrong answer).
//
// Contents:
//   CheckedMul / CheckedAdd   a·b, a+b of int64, or nullopt when the result does not fit
//   CheckedProduct            the product of a list, or nullopt on overflow
#pragma once

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

}  // namespace shardscope
