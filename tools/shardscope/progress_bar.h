// The progress line `sweep` and `recommend` draw on stderr: done / total, rate, time left.
//
// Contents:
//   ProgressBar   Update(done, total) redraws one line (carriage return); Finish() ends it
//   StderrIsTty   whether stderr is a terminal (the bar is drawn there, or when asked)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace shardscope::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string what) : what_(std::move(what)) {}
  void Update(int64_t done, int64_t total);
  void Finish();

 private:
  std::string what_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  bool drawn_ = false;
};

bool StderrIsTty();

}  // namespace shardscope::cli
