#include "sim/engine/run_on_threads.h"

#include <tbb/parallel_for.h>

namespace shardscope::sim {

void RunOnThreads(int n, const std::function<void(int)>& fn) {
  if (n <= 1) {
    fn(0);
    return;
  }
  tbb::parallel_for(0, n, [&](int k) { fn(k); });
}

}  // namespace shardscope::sim
