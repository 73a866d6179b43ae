#include "tools/shardscope/progress_bar.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace shardscope::cli {

void ProgressBar::Update(int64_t done, int64_t total) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double fraction = total > 0 ? static_cast<double>(done) / total : 1.0;
  constexpr int kWidth = 30;
  const int filled = std::clamp(static_cast<int>(fraction * kWidth), 0, kWidth);
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const std::string eta =
      rate > 0 ? fmt::format("{:.0f} s left", (total - done) / rate) : std::string("-");
  fmt::print(stderr, "\r{} [{}{}] {}/{} {:5.1f}%  {:.1f}/s  {}   ", what_, std::string(filled, '#'),
             std::string(kWidth - filled, '.'), done, total, 100.0 * fraction, rate, eta);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (drawn_) fmt::print(stderr, "\n");
  drawn_ = false;
}

bool StderrIsTty() { return isatty(fileno(stderr)) != 0; }

}  // namespace shardscope::cli
