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

// Reads `path` whole. A name ending in `.gz` is decompressed (zlib). More than `max_bytes`
// (0: LimitValue(Limit::kInputBytes), 2 GiB unless SHARDSCOPE_MAX_INPUT_BYTES says otherwise;
// a few kilobytes of gzip can inflate to terabytes) is refused (exit 2). A directory is
// refused as one. Errors name the path.
Result<std::string> ReadFile(const std::string& path, size_t max_bytes = 0);

// Writes `text` to `path` atomically (temporary name in the same folder, then rename). A name
// ending in `.gz` gets gzip data, so every output option honours the extension ReadFile reads.
Status WriteFileAtomic(const std::string& path, const std::string& text);

}  // namespace shardscope
