// Contents: binary byte units, one definition for every file that counts bytes.
#pragma once

#include <cstdint>

namespace shardscope {

inline constexpr int64_t kKiB = int64_t{1} << 10;
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

}  // namespace shardscope
