#include "core/util/file_io.h"

#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/util/limits.h"

namespace shardscope {
namespace {

std::string TooLarge(const std::string& path, bool gz, size_t max_bytes) {
  return path + (gz ? ": inflates to more than " : ": is larger than ") +
         std::to_string(max_bytes) + " bytes, the limit on any input (set " +
         "SHARDSCOPE_MAX_INPUT_BYTES to raise it)";
}

Result<std::string> ReadGzip(const std::string& path, size_t max_bytes) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return InvalidInput(path + ": cannot open (" + std::strerror(errno) + ")");
  // zlib reads a file without the gzip header as it is ("transparent" mode), so a `.gz` that
  // holds plain text (a trace renamed, or written without compression) would be read without a
  // word; the name says gzip, and a file that is not is refused, as `gzip -d` refuses it. Asked
  // right after gzopen, gzdirect looks at the first bytes for the header.
  if (gzdirect(f) == 1) {
    gzclose(f);
    return InvalidInput(path +
                        ": not gzip data (a name ending in .gz is read as gzip, and this file "
                        "does not start with the gzip header 1f 8b); rename it without .gz if "
                        "it is plain text");
  }
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) {
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      gzclose(f);
      return InvalidInput(TooLarge(path, /*gz=*/true, max_bytes));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  int err = 0;
  const char* msg = gzerror(f, &err);
  std::string message = msg != nullptr ? msg : "";
  gzclose(f);
  if (n < 0) return InvalidInput(path + ": not a valid gzip file (" + message + ")");
  // A stream cut short (a copy that stopped, a disk that filled) ends without an error from
  // gzread: what was inflated comes back and gzerror says Z_BUF_ERROR. Half a trace must not
  // pass for a whole one.
  if (err == Z_BUF_ERROR) {
    return InvalidInput(path +
                        ": not a valid gzip file (it ends in the middle of the gzip "
                        "stream: truncated?)");
  }
  return out;
}

// Chunked, so a device or a pipe (/dev/zero) stops at the limit instead of filling memory.
Result<std::string> ReadPlain(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput(path + ": cannot open (" + std::strerror(errno) + ")");
  // One read into a string of the file's size: a chunked copy of a 150 MB trace grows and
  // copies its buffer several times.
  std::string out;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size > 0 && in) {
    if (static_cast<uint64_t>(size) > max_bytes) {
      return InvalidInput(TooLarge(path, /*gz=*/false, max_bytes));
    }
    out.resize(static_cast<size_t>(size));
    in.read(out.data(), size);
    out.resize(static_cast<size_t>(in.gcount()));
  }
  in.clear(in.rdstate() & std::ios::badbit);
  // What the size did not tell (a pipe, a device, a file still growing) is read to the end,
  // within the same bound.
  char buf[1 << 16];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    const size_t n = static_cast<size_t>(in.gcount());
    if (out.size() + n > max_bytes) return InvalidInput(TooLarge(path, /*gz=*/false, max_bytes));
    out.append(buf, n);
  }
  if (in.bad()) return RuntimeError(path + ": read failed");
  return out;
}

}  // namespace

Result<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  // The system reads a path up to its first NUL: "job.json\0x" (from a JSON string's \u0000)
  // would open job.json, a file the input never named.
  if (path.find('\0') != std::string::npos) {
    std::string shown;
    for (char c : path) shown += c == '\0' ? std::string("\\0") : std::string(1, c);
    return InvalidInput(shown +
                        ": a file name with a NUL byte in it (expected a path without one)");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidInput(path + ": is a directory (expected a file)");
  }
  if (max_bytes == 0) max_bytes = static_cast<size_t>(LimitValue(Limit::kInputBytes));
  if (path.ends_with(".gz")) return ReadGzip(path, max_bytes);
  return ReadPlain(path, max_bytes);
}

}  // namespace shardscope
