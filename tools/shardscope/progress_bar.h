// The progress `sweep` and `recommend` report on stderr: done / total, rate, time left.
//
// Contents:
//   ProgressBar   Update(done, total) reports; Finish() ends it
//   StderrIsTty   whether stderr is a terminal (progress is shown there, or when asked)
//
// On a terminal one line is redrawn in place (carriage return), at most ten times a second.
// Elsewhere (`--progress` into a log file) each tenth of the work, and the end, is a line of
// its own: a log read later holds a dozen lines, not one line of a thousand redraws.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace shardscope::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string what);
  void Update(int64_t done, int64_t total);
  void Finish();

 private:
  std::string what_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = {};
  int last_tenth_ = -1;
  bool drawn_ = false;
};

bool StderrIsTty();

}  // namespace shardscope::cli
