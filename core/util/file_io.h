// File access shared by every layer.
//
// Contents:
//   ReadFile         whole file into a string (a `.gz` file is inflated)
//   WriteFileAtomic  write to `<path>.tmp.<pid>` then rename, so a crash or error never
//                    leaves a half-written file where the user's previous output was
#pragma once

#include <string>

#include "core/util/status.h"

namespace shardscope {

// Reads `path` whole. A name ending in `.gz` is decompressed (zlib). Errors name the path.
Result<std::string> ReadFile(const std::string& path);

// Writes `contents` to `path` atomically (temporary name in the same folder, then rename).
Status WriteFileAtomic(const std::string& path, const std::string& contents);

}  // namespace shardscope
