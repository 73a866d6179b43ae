// The memory curve of one rank of a trace: the `memory` counter's series as step functions on
// one shared time axis, their peaks, and the per-pixel downsampling the memory view draws.
//
// Contents:
//   MemoryModel        category series (stacked), allocated and reserved lines, peaks
//   BuildMemoryModel   Trace → MemoryModel (the lowest rank with memory counters)
//   MemoryColumn       what one pixel column shows
//   DownsampleMemory   MemoryModel × time range × columns → one MemoryColumn per column
//
// Downsampling keeps peaks: a column shows the sample with the largest stacked total among
// those in effect during the column, and the largest allocated / reserved values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/trace/trace.h"

namespace shardscope::viewer {

struct MemoryModel {
  int rank = -1;                        // -1: the trace has no memory counter
  std::vector<std::string> categories;  // series names without "_bytes", stacked in this order
  std::vector<int64_t> times_ns;        // change times, relative to the trace's origin
  std::vector<int64_t> values;          // times × categories, carried forward between changes
  std::vector<int64_t> total;           // per time: sum of categories
  std::vector<int64_t> allocated;       // per time (the sum of categories when absent)
  std::vector<int64_t> reserved;        // per time (0 when absent)
  bool has_allocated = false, has_reserved = false;
  int64_t peak_allocated = 0, peak_allocated_ns = 0;
  int64_t peak_reserved = 0, peak_reserved_ns = 0;
  int64_t hbm_bytes = 0;  // the GPU's memory from metadata (0 when unknown)

  bool empty() const { return times_ns.empty(); }
  int64_t value(size_t t, size_t c) const { return values[t * categories.size() + c]; }
  // Index of the sample in effect at t (-1 before the first).
  int64_t SampleAt(int64_t t_ns) const;
};

// `origin_ns` is subtracted from every time.
MemoryModel BuildMemoryModel(const Trace& trace, int64_t origin_ns);

struct MemoryColumn {
  int64_t sample = -1;  // the sample whose categories the column stacks (-1: none)
  int64_t allocated = 0, reserved = 0;
};

// One column per `columns` equal parts of [lo_ns, hi_ns).
std::vector<MemoryColumn> DownsampleMemory(const MemoryModel& m, int64_t lo_ns, int64_t hi_ns,
                                           int columns);

}  // namespace shardscope::viewer
