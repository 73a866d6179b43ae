#include "viewer/png_writer.h"

#include <stb/stb_image_write.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

namespace shardscope::viewer {

Status WritePngAtomic(const std::string& path, int width, int height,
                      const std::vector<uint8_t>& rgba) {
  if (width <= 0 || height <= 0 || rgba.size() != static_cast<size_t>(width) * height * 4) {
    return RuntimeError("PNG " + path + ": pixel buffer does not match " + std::to_string(width) +
                        "x" + std::to_string(height));
  }
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  if (!stbi_write_png(tmp.c_str(), width, height, 4, rgba.data(), width * 4)) {
    std::remove(tmp.c_str());
    return RuntimeError("cannot write " + path + " (is the folder writable?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return RuntimeError("cannot write " + path + ": " + ec.message());
  }
  return Status::Ok();
}

}  // namespace shardscope::viewer
