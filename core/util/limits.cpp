#include "core/util/limits.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>

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

// The variable's value when it is a positive integer; nullopt when it is set to anything else.
std::optional<int64_t> ParsedValue(const char* env) {
  int64_t v = 0;
  const char* end = env + std::strlen(env);
  const auto [ptr, ec] = std::from_chars(env, end, v);
  if (ec != std::errc() || ptr != end || v <= 0) return std::nullopt;
  return v;
}

constexpr Limit kAllLimits[] = {Limit::kInputBytes, Limit::kModules, Limit::kParams,
                                Limit::kScheduleOps};

}  // namespace

int64_t LimitValue(Limit limit) {
  const LimitInfo info = InfoOf(limit);
  const char* env = std::getenv(info.variable);
  if (env == nullptr) return info.default_value;
  return ParsedValue(env).value_or(info.default_value);
}

Status CheckLimitVariables() {
  for (Limit limit : kAllLimits) {
    const LimitInfo info = InfoOf(limit);
    const char* env = std::getenv(info.variable);
    if (env != nullptr && !ParsedValue(env)) {
      return InvalidInput(std::string(info.variable) + "=" + env +
                          ": expected a positive integer (" + info.what +
                          "; unset it for the default " + std::to_string(info.default_value) + ")");
    }
  }
  return Status::Ok();
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
