// File access shared by every layer.
//
// Contents:
//   ReadFile         whole file into a string (a `.gz` file is inflated)
// Writing (atomic, all or none, devices in place) is in core/util/output_files.h.
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

}  // namespace shardscope
