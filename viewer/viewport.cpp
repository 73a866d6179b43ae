#include "viewer/viewport.h"

#include <algorithm>
#include <cmath>

namespace shardscope::viewer {

double Viewport::TimeToX(int64_t t_ns) const {
  return static_cast<double>(t_ns - start_ns) * width_px / static_cast<double>(span_ns);
}

int64_t Viewport::XToTime(double x_px) const {
  return start_ns + static_cast<int64_t>(std::llround(x_px * NsPerPx()));
}

void Viewport::ZoomAt(double x_px, double factor) {
  const int64_t anchor = XToTime(x_px);
  const double new_span =
      std::clamp(static_cast<double>(span_ns) * factor, static_cast<double>(kMinSpanNs),
                 static_cast<double>(kMaxSpanNs));
  span_ns = static_cast<int64_t>(std::llround(new_span));
  start_ns = anchor - static_cast<int64_t>(std::llround(x_px * NsPerPx()));
}

void Viewport::Pan(double dx_px) {
  start_ns -= static_cast<int64_t>(std::llround(dx_px * NsPerPx()));
}

void Viewport::Fit(int64_t lo_ns, int64_t hi_ns, double margin) {
  const int64_t span = std::max<int64_t>(hi_ns - lo_ns, kMinSpanNs);
  const int64_t pad = static_cast<int64_t>(static_cast<double>(span) * margin);
  span_ns = std::clamp(span + 2 * pad, kMinSpanNs, kMaxSpanNs);
  start_ns = lo_ns - pad;
}

void Viewport::CenterOn(int64_t t_ns) { start_ns = t_ns - span_ns / 2; }

}  // namespace shardscope::viewer
