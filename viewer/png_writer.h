// PNG files from RGBA pixels (stb_image_write from Debian's libstb).
//
// Contents:
//   WritePngAtomic   RGBA8 rows, top row first → PNG at `path` (temporary name, then rename)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace shardscope::viewer {

Status WritePngAtomic(const std::string& path, int width, int height,
                      const std::vector<uint8_t>& rgba);

}  // namespace shardscope::viewer
