// File access shared by every layer.
//
// Contents:
//   ReadFile         whole file into a string (a `.gz` file is inflated)
//   WriteFileAtomic  write to `<path>.tmp.<pid>` then rename, so a crash or error never
//                    leaves a half-written file where the user's previous output was (a
//                    `.gz` file is gzip-compressed)
#pragma once

#include <cstddef>
#include <string>

#include "core/util/status.h"

namespace shardscope {

// A few kilobytes of gzip can inflate to terabytes; no shardscope input is larger than this.
inline constexpr size_t kMaxInflatedBytes = size_t{2} << 30;

// Reads `path` whole. A name ending in `.gz` is decompressed (zlib), and refused (exit 2) when
// it inflates past `max_inflated_bytes`. A directory is refused as one. Errors name the path.
Result<std::string> ReadFile(const std::string& path,
                             size_t max_inflated_bytes = kMaxInflatedBytes);

// Writes `text` to `path` atomically (temporary name in the same folder, then rename). A name
// ending in `.gz` gets gzip data, so every output option honours the extension ReadFile reads.
Status WriteFileAtomic(const std::string& path, const std::string& text);

}  // namespace shardscope
