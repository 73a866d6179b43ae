// The deterministic values of FillDeterministic, one definition for the device kernel and the
// host references (tests, --check): a splitmix64 hash of (seed, index) mapped to a float in
// [-scale, scale). Every step is exact in fp32 except the final multiply by `scale`, a single
// correctly rounded operation, so host and device agree bit for bit.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SS_HOST_DEVICE __host__ __device__
#else
#define SS_HOST_DEVICE
#endif

namespace shardscope::backend::cuda {

SS_HOST_DEVICE inline uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

SS_HOST_DEVICE inline float DeterministicUnit(uint64_t seed, int64_t index) {
  const uint64_t z = SplitMix64(seed ^ SplitMix64(static_cast<uint64_t>(index)));
  const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // [0, 1), 24 bits
  return 2.0f * u - 1.0f;                                              // [-1, 1), exact
}

}  // namespace shardscope::backend::cuda
