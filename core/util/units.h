// Contents: binary byte units, one definition for every file that counts bytes; nanoseconds
// (the timeline's unit) as seconds.
#pragma once

#include <cstdint>

namespace shardscope {

inline constexpr int64_t kKiB = int64_t{1} << 10;
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

// Bytes as GiB, for reports (double: a fraction of a GiB is a figure users read).
inline constexpr double ToGiB(int64_t bytes) {
  return static_cast<double>(bytes) / static_cast<double>(kGiB);
}
// A GiB figure a user gave (a scenario, a flag) as bytes, truncated.
inline constexpr int64_t GiBToBytes(double gib) {
  return static_cast<int64_t>(gib * static_cast<double>(kGiB));
}

// Nanoseconds as seconds, for reports and summaries.
inline constexpr double NsToSeconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace shardscope
