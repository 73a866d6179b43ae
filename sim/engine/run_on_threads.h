// Runs the parts of one prediction that do not depend on each other at once.
//
// Contents:
//   RunOnThreads   fn(0..n-1), at once where workers are free, fn(0) on the calling thread
//
// On oneTBB's workers, which persist between calls: a std::thread started per call began each
// time with a fresh allocator heap (mimalloc's are per thread), and BM_Gpt3_175b_Tp8Pp8's whole
// step of 64 micro-batches (bench/explore_benchmark, three interleaved pairs of 7-run medians)
// took 75.7-82.2 ms that way against 75.5-76.2 ms on one thread.
// Sweeps run their variants in parallel and each variant with n = 1, which runs inline.
#pragma once

#include <functional>

namespace shardscope::sim {

// Calls fn(k) for every k in [0, n) and returns when all have returned: fn(0) on the calling
// thread (what it allocates is best freed there, mimalloc's heaps being per thread), the others
// as tasks for the pool, which the caller helps with once fn(0) returns. n <= 1 calls fn(0)
// without touching the pool. fn must not throw.
void RunOnThreads(int n, const std::function<void(int)>& fn);

}  // namespace shardscope::sim
