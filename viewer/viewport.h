// The timeline's viewport: which span of time maps onto which pixels. One struct shared by the
// timeline and the memory view, so both always show the same time range.
//
// Contents:
//   Viewport   [start_ns, start_ns + span_ns) drawn over width_px pixels
//     TimeToX / XToTime   the mapping (x relative to the plot's left edge)
//     ZoomAt              zoom by a factor keeping the time under x fixed
//     Pan                 move by a number of pixels
//     Fit                 show [lo, hi)
//     CenterOn            move so that t is in the middle, keeping the span
//
// Time is int64 ns; only the pixel side is floating point.
#pragma once

#include <cstdint>

namespace shardscope::viewer {

struct Viewport {
  int64_t start_ns = 0;
  int64_t span_ns = 1'000'000;  // > 0
  double width_px = 1000;       // > 0

  static constexpr int64_t kMinSpanNs = 100;                  // 100 ns over the whole width
  static constexpr int64_t kMaxSpanNs = 1'000'000'000'000LL;  // 1000 s

  double NsPerPx() const { return static_cast<double>(span_ns) / width_px; }
  double TimeToX(int64_t t_ns) const;
  int64_t XToTime(double x_px) const;
  int64_t end_ns() const { return start_ns + span_ns; }

  // factor < 1 zooms in. The time under `x_px` stays under it (within a nanosecond).
  void ZoomAt(double x_px, double factor);
  // Positive dx_px moves the content right (earlier times come into view).
  void Pan(double dx_px);
  // Shows [lo_ns, hi_ns) with `margin` (a fraction of the span) on both sides.
  void Fit(int64_t lo_ns, int64_t hi_ns, double margin = 0.02);
  void CenterOn(int64_t t_ns);
};

}  // namespace shardscope::viewer
