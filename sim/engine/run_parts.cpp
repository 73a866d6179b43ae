#include "sim/engine/run_parts.h"

#include <tbb/task_group.h>

namespace shardscope::sim {

void RunParts(int n, int threads, const std::function<void(int)>& fn) {
  if (threads <= 1 || n <= 1) {
    for (int k = 0; k < n; ++k) fn(k);
    return;
  }
  tbb::task_group others;
  for (int k = 1; k < n; ++k) others.run([&fn, k] { fn(k); });
  fn(0);
  others.wait();
}

}  // namespace shardscope::sim
