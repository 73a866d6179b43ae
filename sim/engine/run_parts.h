// Runs the parts of one prediction that do not depend on each other at once.
//
// Contents:
//   RunParts   fn(0..n-1), at once on up to `threads` threads, fn(0) on the calling thread
//
// On oneTBB's workers, which persist between calls: a std::thread started per call began each
// time with a fresh allocator heap (mimalloc's are per thread), and BM_Gpt3_175b_Tp8Pp8's whole
// step of 64 micro-batches (bench/explore_benchmark, three interleaved pairs of 7-run medians)
// took 75.7-82.2 ms that way against 75.5-76.2 ms on one thread.
// Sweeps run their variants in parallel and each variant with threads = 1, which runs inline.
// Under ThreadSanitizer the parts run on std::threads, whose start and join it sees.
#pragma once

#include <functional>

namespace shardscope::sim {

// Calls fn(k) for every k in [0, n) and returns when all have returned. With threads <= 1 (or
// n <= 1), one after the other on the calling thread without touching the pool. Otherwise fn(0)
// runs on the calling thread (what it allocates is best freed there, mimalloc's heaps being per
// thread) and the others are tasks for the pool, which the caller helps with once fn(0)
// returns; more parts than threads let a thread that finishes early take a share. fn must not
// throw.
void RunParts(int n, int threads, const std::function<void(int)>& fn);

}  // namespace shardscope::sim
