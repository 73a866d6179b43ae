#include "sim/engine/run_parts.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHARDSCOPE_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define SHARDSCOPE_UNDER_TSAN 1
#endif

#ifdef SHARDSCOPE_UNDER_TSAN
#include <thread>
#include <vector>
#else
#include <tbb/task_group.h>
#endif

namespace shardscope::sim {

void RunParts(int n, int threads, const std::function<void(int)>& fn) {
  if (threads <= 1 || n <= 1) {
    for (int k = 0; k < n; ++k) fn(k);
    return;
  }
#ifdef SHARDSCOPE_UNDER_TSAN
  // ThreadSanitizer does not see oneTBB's (uninstrumented) hand-off of a task to a worker and
  // reports every read of what the caller wrote before it; with threads it can see start and
  // join, the parts' own accesses are what it checks.
  std::vector<std::thread> others;
  for (int k = 1; k < n; ++k) others.emplace_back(fn, k);
  fn(0);
  for (std::thread& t : others) t.join();
#else
  tbb::task_group others;
  for (int k = 1; k < n; ++k) others.run([&fn, k] { fn(k); });
  fn(0);
  others.wait();
#endif
}

}  // namespace shardscope::sim
