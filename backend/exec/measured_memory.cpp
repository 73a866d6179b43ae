#include "backend/exec/measured_memory.h"

#include <algorithm>
#include <numeric>

namespace shardscope::backend {

RoleMemory BuildRoleMemory(const std::vector<MemoryLogEntry>& log, const Timeline& timeline,
                           const CategoryBytes& initial, const CategoryBytes& host,
                           int64_t initial_reserved, int live_buffers_at_end) {
  RoleMemory m;
  m.initial_bytes = initial;
  m.host_bytes = host;
  CategoryBytes bytes = initial;
  auto total = [](const CategoryBytes& b) {
    return std::accumulate(b.begin(), b.end(), int64_t{0});
  };
  int64_t reserved = initial_reserved;
  m.samples.push_back(MemorySample{0, bytes, total(bytes), reserved});
  m.peak_allocated_bytes = total(bytes);
  m.at_peak_allocated = bytes;
  m.max_bytes = bytes;
  m.peak_reserved_bytes = reserved;
  m.at_peak_reserved = bytes;
  // Effects in time order (the log's order among equal times: the order they applied).
  struct Placed {
    int64_t t;
    size_t seq;
  };
  std::vector<Placed> order;
  order.reserve(log.size());
  for (size_t i = 0; i < log.size(); ++i) {
    const OpTiming& ot = timeline.ops[log[i].op];
    int64_t t = log[i].at_start ? ot.start_ns : ot.end_ns;
    if (t < 0) t = std::max<int64_t>(ot.start_ns, 0);  // the op never ended (a failure)
    order.push_back({t, i});
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Placed& a, const Placed& b) { return a.t < b.t; });
  for (const Placed& p : order) {
    const MemoryLogEntry& e = log[p.seq];
    if (e.failed) {
      if (!m.oom) {
        m.oom = true;
        m.oom_time_ns = p.t;
        m.oom_op = e.op;
        m.oom_category = e.category;
      }
      continue;
    }
    bytes[static_cast<int>(e.category)] += e.delta;
    for (int c = 0; c < kNumMemCategories; ++c) m.max_bytes[c] = std::max(m.max_bytes[c], bytes[c]);
    reserved = e.reserved_after;
    const int64_t allocated = total(bytes);
    if (allocated > m.peak_allocated_bytes) {
      m.peak_allocated_bytes = allocated;
      m.peak_allocated_time_ns = p.t;
      m.peak_allocated_op = e.op;
      m.at_peak_allocated = bytes;
    }
    if (reserved > m.peak_reserved_bytes) {
      m.peak_reserved_bytes = reserved;
      m.peak_reserved_time_ns = p.t;
      m.peak_reserved_op = e.op;
      m.at_peak_reserved = bytes;
    }
    MemorySample s{p.t, bytes, allocated, reserved};
    if (m.samples.back().time_ns == p.t) {
      m.samples.back() = s;
    } else {
      m.samples.push_back(s);
    }
  }
  m.final_bytes = bytes;
  m.live_buffers_at_end = live_buffers_at_end;
  return m;
}

}  // namespace shardscope::backend
