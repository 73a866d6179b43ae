// The deterministic values parameters and gradients are made of, and the bfloat16 rounding
// every device uses, in one header that compiles for the host and for CUDA kernels alike, so a
// GPU, the CPU and a reference built on any rank agree bit for bit.
//
// Contents:
//   SeedOf              FNV-1a of a name (an FQN, "grad:<rank>:<FQN>") → a 64-bit seed
//   DeterministicValue  (seed, element index) → a float in [−1, 1) (SplitMix64)
//   FloatToBf16Bits / Bf16BitsToFloat   round to nearest even / exact widening
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__CUDACC__)
#define SS_HOST_DEVICE __host__ __device__
#else
#define SS_HOST_DEVICE
#endif

namespace shardscope::backend {

// Host only: names are strings.
inline uint64_t SeedOf(std::string_view name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// The top 24 bits of SplitMix64(seed + index · golden ratio), as a multiple of 2^-23 in
// [−1, 1): exactly representable in fp32, so every device computes the same float.
SS_HOST_DEVICE inline float DeterministicValue(uint64_t seed, int64_t index) {
  uint64_t z = seed + static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const int32_t top = static_cast<int32_t>(z >> 40) - (1 << 23);  // [−2^23, 2^23)
  return static_cast<float>(top) * (1.0f / 8388608.0f);
}

SS_HOST_DEVICE inline uint16_t FloatToBf16Bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) return 0x7fc0;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

SS_HOST_DEVICE inline float Bf16BitsToFloat(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace shardscope::backend
