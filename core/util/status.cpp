#include "core/util/status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace shardscope {
namespace {

// __FILE__ is the path the compiler was given: absolute (CMake's), or relative to the build
// folder ("../core/…", when ccache's base_dir rewrites it). The trail names files from the
// source tree's root either way.
std::string_view RelativeToSourceTree(std::string_view path) {
#ifdef SHARDSCOPE_SOURCE_ROOT
  constexpr std::string_view root = SHARDSCOPE_SOURCE_ROOT;
  if (path.substr(0, root.size()) == root) return path.substr(root.size());
#endif
  while (path.substr(0, 3) == "../" || path.substr(0, 2) == "./") {
    path.remove_prefix(path[1] == '/' ? 2 : 3);
  }
  return path;
}

}  // namespace

std::string Status::TrailText() const {
  std::string out;
  for (const SourceFrame& f : trail_) {
    if (!out.empty()) out += " <- ";
    out += RelativeToSourceTree(f.file);
    out += ':';
    out += std::to_string(f.line);
  }
  return out;
}

bool ErrorTraceRequested() {
  const char* v = std::getenv("SHARDSCOPE_ERROR_TRACE");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

namespace internal {

void DieOnBadResult(const char* what, const Status& status) {
  std::fflush(stdout);
  std::fprintf(stderr, "shardscope: %s: %s", what,
               status.ok() ? "(no error)" : status.message().c_str());
  const std::string trail = status.TrailText();
  if (!trail.empty()) std::fprintf(stderr, " [at %s]", trail.c_str());
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal
}  // namespace shardscope
