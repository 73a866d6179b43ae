#include "core/util/limits.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace shardscope {
namespace {

struct LimitInfo {
  const char* variable;
  const char* what;  // the counted thing, plural
  int64_t default_value;
};

// A few GiB of memory and seconds of work at most: a module costs ~1 KiB as a tree node and
// its plan entries, a schedule op ~0.5 KiB and ~1 µs of simulation.
LimitInfo InfoOf(Limit limit) {
  switch (limit) {
    case Limit::kInputBytes:
      return {"SHARDSCOPE_MAX_INPUT_BYTES", "bytes", int64_t{2} << 30};
    case Limit::kModules:
      return {"SHARDSCOPE_MAX_MODULES", "modules", int64_t{1} << 20};
    case Limit::kParams:
      return {"SHARDSCOPE_MAX_PARAMS", "parameters", int64_t{1} << 21};
    case Limit::kScheduleOps:
      return {"SHARDSCOPE_MAX_SCHEDULE_OPS", "schedule operations", int64_t{1} << 22};
  }
  return {"", "items", 0};
}

}  // namespace

int64_t LimitValue(Limit limit) {
  const LimitInfo info = InfoOf(limit);
  const char* env = std::getenv(info.variable);
  if (env == nullptr) return info.default_value;
  int64_t v = 0;
  const char* end = env + std::strlen(env);
  const auto [ptr, ec] = std::from_chars(env, end, v);
  return ec == std::errc() && ptr == end && v > 0 ? v : info.default_value;
}

const char* LimitVariable(Limit limit) { return InfoOf(limit).variable; }

Status CheckLimit(Limit limit, int64_t count, const std::string& source) {
  const int64_t max = LimitValue(limit);
  if (count <= max) return Status::Ok();
  const LimitInfo info = InfoOf(limit);
  return InvalidInput(source + ": " + std::to_string(count) + " " + info.what +
                      ", more than the limit of " + std::to_string(max) + " (set " + info.variable +
                      " to raise it)");
}

}  // namespace shardscope
