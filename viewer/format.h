// Human-readable figures for the panels.
//
// Contents:
//   FormatDuration   ns → "1.234 s" / "12.35 ms" / "5.2 us" / "800 ns" (sign kept)
//   FormatBytes      bytes → "12.34 GiB" / "3.0 MiB" / "512 B"
//   FormatPercent    0.0123 → "+1.2%"
#pragma once

#include <cstdint>
#include <string>

namespace shardscope::viewer {

std::string FormatDuration(int64_t ns);
std::string FormatBytes(int64_t bytes);
std::string FormatPercent(double fraction, bool sign = true);

}  // namespace shardscope::viewer
