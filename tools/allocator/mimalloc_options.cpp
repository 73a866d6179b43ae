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
// A reserved arena (1 GiB of address space; pages count against the machine's memory only once
// touched). Without one, the schedule's large blocks (its ops, buffers and lists: megabytes per
// variant) were mapped fresh and faulted in again for every variant, and the faults showed in
// the allocator's own time. Measured 2026-12-05 (bench/explore_benchmark): the 70B grid one
// variant at a time 138,527 -> 21,587 page faults, 6.26 -> 5.91 s; on two threads, three
// interleaved pairs, 312.7 / 312.2 / 302.4 -> 341.8 / 333.5 / 325.9 variants/s, at 31 MB more
// peak resident memory (119 -> 150 MB); TP 8 x PP 8 x 64 alike (13.2-14.3 ms either way). Reserved
// uncommitted, mimalloc decommitted what was freed and the faults doubled. mimalloc serves
// from the arena first and maps more from the OS when it is used up.
//
// Set by a static initialiser: mimalloc reads these options when it maps memory, so setting
// them before main covers all of the program's allocations that matter.
// MIMALLOC_LARGE_OS_PAGES=0 or MIMALLOC_RESERVE_OS_MEMORY in the environment still wins (a
// user's setting is read first).
#include <mimalloc.h>

#include <cstdlib>

namespace {

constexpr size_t kArenaBytes = size_t{1} << 30;

struct AllocatorOptions {
  AllocatorOptions() {
    if (std::getenv("MIMALLOC_LARGE_OS_PAGES") == nullptr) {
      mi_option_enable(mi_option_large_os_pages);
    }
    if (std::getenv("MIMALLOC_RESERVE_OS_MEMORY") == nullptr) {
      // Committed (reserved uncommitted, mimalloc decommits what is freed and the faults
      // double, above); the kernel still backs only the pages that are touched. A failed
      // reservation (a small address space) leaves mimalloc as it was.
      mi_reserve_os_memory(kArenaBytes, /*commit=*/true, /*allow_large=*/true);
    }
  }
};
const AllocatorOptions allocator_options;

}  // namespace
