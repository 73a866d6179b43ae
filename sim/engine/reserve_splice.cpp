#include "sim/engine/reserve_splice.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace shardscope::sim {
namespace {

// before[i]: the allocations among calls[0, i), for i up to calls.size().
std::vector<int32_t> AllocationsBefore(const AllocatorCalls& calls) {
  std::vector<int32_t> before(calls.size() + 1);
  int32_t n = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    before[i] = n;
    if (calls[i].bytes > 0) ++n;
  }
  before[calls.size()] = n;
  return before;
}

// The same call in two runs that agree up to it: the same allocation, or a free of the same one.
bool SameCall(const AllocatorCall& x, const AllocatorCall& y) {
  return x.bytes == y.bytes && (x.bytes > 0 ? x.stream == y.stream : x.alloc == y.alloc);
}

// Calls i and j of `calls` alike a period apart: allocations of one size on one stream, or frees
// of one size as many allocations back.
bool SameAPeriodApart(const AllocatorCalls& calls, const std::vector<int32_t>& before, size_t i,
                      size_t j) {
  const AllocatorCall& x = calls[i];
  const AllocatorCall& y = calls[j];
  if (x.bytes != y.bytes) return false;
  if (x.bytes > 0) return x.stream == y.stream;
  return before[i] - x.alloc == before[j] - y.alloc;
}

// The spliced calls as they are appended, each free checked against what it frees.
class CallWriter {
 public:
  explicit CallWriter(size_t calls) { out_.reserve(calls); }
  int32_t allocations() const { return static_cast<int32_t>(sizes_.size()); }
  // false for a free of an allocation that is not live or has another size.
  bool Add(const AllocatorCall& call) {
    if (call.bytes > 0) {
      sizes_.push_back(call.bytes);
      ++live_;
    } else {
      if (call.alloc < 0 || call.alloc >= allocations() || sizes_[call.alloc] != -call.bytes)
        return false;
      sizes_[call.alloc] = 0;
      --live_;
    }
    out_.push_back(call);
    return true;
  }
  AllocatorCalls Take() { return std::move(out_); }
  int64_t live() const { return live_; }

 private:
  AllocatorCalls out_;
  std::vector<int64_t> sizes_;  // per allocation, its bytes while live, 0 once freed
  int64_t live_ = 0;
};

}  // namespace

std::optional<AllocatorCalls> SpliceAllocatorCalls(const AllocatorCalls& a, const AllocatorCalls& b,
                                                   int ma, int mb, int m) {
  if (ma <= 0 || mb <= ma || m < mb || b.size() < a.size()) return std::nullopt;
  const size_t inserted = b.size() - a.size();
  const size_t periods = static_cast<size_t>(mb - ma);
  if (inserted % periods != 0) return std::nullopt;
  const size_t w = inserted / periods;  // calls per period
  if (w == 0) {
    // Nothing of this role's memory repeats per micro-batch: every run's calls are alike.
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameCall(a[i], b[i])) return std::nullopt;
    }
    return a;
  }
  size_t p = 0;  // |P|
  while (p < a.size() && SameCall(a[p], b[p])) ++p;
  if (p + inserted > b.size()) return std::nullopt;
  const std::vector<int32_t> before_b = AllocationsBefore(b);
  // Where each allocation of b was made.
  std::vector<size_t> made_at(static_cast<size_t>(before_b.back()));
  for (size_t i = 0; i < b.size(); ++i) {
    if (b[i].bytes > 0) made_at[static_cast<size_t>(before_b[i])] = i;
  }
  // The template: X's last period, the deepest into the steady state (X's first periods can
  // free what the warm-up allocated, at other distances). It repeats the period before it, and
  // what its frees reach back to (1F1B's first stage frees the activations of pp periods
  // before) is allocated as a period later: so are the allocations its copies' frees reach.
  const size_t q = p + inserted - w;
  size_t reach = w;  // how far back (in calls) its frees reach, at least a period
  for (size_t i = q; i < q + w; ++i) {
    if (b[i].bytes >= 0) continue;
    if (b[i].alloc < 0 || b[i].alloc >= before_b[i]) return std::nullopt;
    reach = std::max(reach, i - made_at[static_cast<size_t>(b[i].alloc)]);
  }
  if (reach > q) return std::nullopt;
  // S, after P in a and after P·X in b. Its frees of what S allocated move with S; of what P
  // allocated, the same allocation in both runs stays (one made before the steady state and
  // live to the cool-down: a gradient accumulator); any other moves with the added periods
  // (the activations of the steady state's last micro-batches).
  const int32_t in_p = before_b[p];
  const int32_t s_first = before_b[p + inserted];  // S's first allocation
  const size_t tail = a.size() - p;
  std::vector<bool> moved(tail, false);
  size_t earliest = q - w;  // the first call the added periods' allocations repeat
  for (size_t j = 0; j < tail; ++j) {
    const AllocatorCall& x = a[p + j];
    const AllocatorCall& y = b[p + inserted + j];
    if (x.bytes != y.bytes) return std::nullopt;
    if (x.bytes > 0) {
      if (x.stream != y.stream) return std::nullopt;
      continue;
    }
    if (y.alloc < 0 || y.alloc >= before_b[p + inserted + j]) return std::nullopt;
    if (y.alloc >= s_first) {
      moved[j] = true;
    } else if (!(x.alloc == y.alloc && x.alloc < in_p)) {
      moved[j] = true;
      earliest = std::min(earliest, made_at[static_cast<size_t>(y.alloc)]);
    }
  }
  earliest = std::min(earliest, q - reach);
  for (size_t i = q - w; i < q; ++i) {
    if (!SameAPeriodApart(b, before_b, i, i + w)) return std::nullopt;
  }
  for (size_t i = earliest; i < q - w; ++i) {
    if ((b[i].bytes > 0 || b[i + w].bytes > 0) && !SameAPeriodApart(b, before_b, i, i + w))
      return std::nullopt;
  }
  const int32_t per_period = before_b[q + w] - before_b[q];
  // m's calls: b's up to the end of X, m − mb more periods, then b's S with the moved frees
  // moved by the added periods' allocations too.
  const size_t added = static_cast<size_t>(m - mb);
  const int32_t in_added = static_cast<int32_t>(added) * per_period;
  CallWriter out(b.size() + added * w);
  for (size_t i = 0; i < q + w; ++i) {
    if (!out.Add(b[i])) return std::nullopt;
  }
  for (size_t k = 0; k < added; ++k) {
    for (size_t i = q; i < q + w; ++i) {
      AllocatorCall call = b[i];
      if (call.bytes < 0) call.alloc = out.allocations() - (before_b[i] - b[i].alloc);
      if (!out.Add(call)) return std::nullopt;
    }
  }
  for (size_t j = 0; j < tail; ++j) {
    AllocatorCall call = b[p + inserted + j];
    if (call.bytes < 0 && moved[j]) call.alloc += in_added;
    if (!out.Add(call)) return std::nullopt;
  }
  // What b leaves allocated (its allocations less its frees), m leaves too.
  const int64_t b_live = 2 * static_cast<int64_t>(before_b.back()) - static_cast<int64_t>(b.size());
  if (out.live() != b_live) return std::nullopt;
  return out.Take();
}

}  // namespace shardscope::sim
