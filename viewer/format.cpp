#include "viewer/format.h"

#include <fmt/core.h>

#include <cstdlib>

namespace shardscope::viewer {

std::string FormatDuration(int64_t ns) {
  const double v = static_cast<double>(ns);
  const int64_t a = std::llabs(ns);
  if (a >= 1'000'000'000) return fmt::format("{:.3f} s", v * 1e-9);
  if (a >= 1'000'000) return fmt::format("{:.3f} ms", v * 1e-6);
  if (a >= 1'000) return fmt::format("{:.2f} us", v * 1e-3);
  return fmt::format("{} ns", ns);
}

std::string FormatBytes(int64_t bytes) {
  const double v = static_cast<double>(bytes);
  const int64_t a = std::llabs(bytes);
  if (a >= (1LL << 30)) return fmt::format("{:.2f} GiB", v / (1LL << 30));
  if (a >= (1LL << 20)) return fmt::format("{:.1f} MiB", v / (1LL << 20));
  if (a >= (1LL << 10)) return fmt::format("{:.1f} KiB", v / (1LL << 10));
  return fmt::format("{} B", bytes);
}

std::string FormatPercent(double fraction, bool sign) {
  return sign ? fmt::format("{:+.1f}%", 100.0 * fraction)
              : fmt::format("{:.1f}%", 100.0 * fraction);
}

}  // namespace shardscope::viewer
