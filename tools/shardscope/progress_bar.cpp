#include "tools/shardscope/progress_bar.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace shardscope::cli {

ProgressBar::ProgressBar(std::string what) : what_(std::move(what)), terminal_(StderrIsTty()) {}

void ProgressBar::Update(int64_t done, int64_t total) {
  const auto now = std::chrono::steady_clock::now();
  const double fraction = total > 0 ? std::clamp(static_cast<double>(done) / total, 0.0, 1.0) : 1.0;
  const bool last = done >= total;
  if (terminal_) {
    if (!last && drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  } else {
    const int tenth = static_cast<int>(fraction * 10);
    if (tenth == last_tenth_) return;
    last_tenth_ = tenth;
  }
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  constexpr int kWidth = 30;
  const int filled = std::clamp(static_cast<int>(fraction * kWidth), 0, kWidth);
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const std::string eta =
      rate > 0 ? fmt::format("{:.0f} s left", (total - done) / rate) : std::string("-");
  fmt::print(stderr, "{}{} [{}{}] {}/{} {:5.1f}%  {:.1f}/s  {}{}", terminal_ ? "\r" : "", what_,
             std::string(filled, '#'), std::string(kWidth - filled, '.'), done, total,
             100.0 * fraction, rate, eta, terminal_ ? "   " : "\n");
  std::fflush(stderr);
  drawn_ = terminal_;
}

void ProgressBar::Finish() {
  if (drawn_) fmt::print(stderr, "\n");
  drawn_ = false;
}

bool StderrIsTty() { return isatty(fileno(stderr)) != 0; }

}  // namespace shardscope::cli
