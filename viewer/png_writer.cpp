#include "viewer/png_writer.h"

#include <stb/stb_image_write.h>

#include <string>

#include "core/util/output_files.h"

namespace shardscope::viewer {

Status WritePngAtomic(const std::string& path, int width, int height,
                      const std::vector<uint8_t>& rgba) {
  if (width <= 0 || height <= 0 || rgba.size() != static_cast<size_t>(width) * height * 4) {
    return RuntimeError("PNG " + path + ": pixel buffer does not match " + std::to_string(width) +
                        "x" + std::to_string(height));
  }
  // Encoded in memory, then written as every output is (core/util/output_files.h).
  std::string png;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data),
                                               static_cast<size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &png, width, height, 4, rgba.data(), width * 4)) {
    return RuntimeError("PNG " + path + ": encoding failed");
  }
  return WriteFileAtomic(path, png);
}

}  // namespace shardscope::viewer
