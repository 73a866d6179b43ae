#include "sim/engine/run_on_threads.h"

#include <tbb/task_group.h>

namespace shardscope::sim {

void RunOnThreads(int n, const std::function<void(int)>& fn) {
  if (n <= 1) {
    fn(0);
    return;
  }
  tbb::task_group others;
  for (int k = 1; k < n; ++k) others.run([&fn, k] { fn(k); });
  fn(0);
  others.wait();
}

}  // namespace shardscope::sim
