// mimalloc's options for the programs that link it (CMakeLists.txt, shardscope_allocator).
//
// Large OS pages. Each simulated variant builds a schedule of megabytes (a TP 8 × PP 8 steady
// state: 32k ops), which mimalloc takes from the OS in fresh 4 KiB pages and hands back once the
// variant is dropped; every variant then faults them in again. With large pages (huge pages
// where the kernel has them reserved, else transparent huge pages through madvise) the faults
// drop about 300×, and the time with them (bench/explore_benchmark, docs/sweep.md, measured
// 2026-12-04): TP 8 × PP 8 × 64 steady state 64 → 46 ms, the 70B grid on 2 threads
// +8 to +13%. Where the kernel has neither, mimalloc falls back to small pages silently.
//
// Set by a static initialiser: mimalloc reads this option when it maps memory, so setting it
// before main covers all of the program's allocations that matter. MIMALLOC_LARGE_OS_PAGES=0
// in the environment still wins (a user's setting is read first).
#include <mimalloc.h>

#include <cstdlib>

namespace {

struct LargeOsPages {
  LargeOsPages() {
    if (std::getenv("MIMALLOC_LARGE_OS_PAGES") == nullptr) {
      mi_option_enable(mi_option_large_os_pages);
    }
  }
};
const LargeOsPages large_os_pages;

}  // namespace
