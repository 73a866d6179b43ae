#include "core/util/file_io.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace shardscope {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Result<std::string> ReadGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return InvalidInput(path + ": cannot open (" + std::strerror(errno) + ")");
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  int err = 0;
  const char* msg = gzerror(f, &err);
  std::string message = (n < 0 && msg != nullptr) ? msg : "";
  gzclose(f);
  if (n < 0) return InvalidInput(path + ": not a valid gzip file (" + message + ")");
  return out;
}

}  // namespace

Result<std::string> ReadFile(const std::string& path) {
  if (EndsWith(path, ".gz")) return ReadGzip(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput(path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return RuntimeError(path + ": read failed");
  return ss.str();
}

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return RuntimeError(tmp + ": cannot create (" + std::strerror(errno) + ")");
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return RuntimeError(tmp + ": write failed (" + std::strerror(errno) + ")");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return RuntimeError(path + ": cannot rename from " + tmp + " (" + why + ")");
  }
  return Status::Ok();
}

}  // namespace shardscope
