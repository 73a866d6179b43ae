#include "core/trace/accounting.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace shardscope {

RankAccounting::RankAccounting(std::span<const WorkSpan> work) {
  // Each list sized before it is filled: a step's work is tens of thousands of spans, and
  // lists grown by doubling copied them several times over.
  std::array<size_t, kNumWorkKinds> kind_count{};
  std::array<size_t, kNumCommPurposes> purpose_count{};
  first_ns_ = std::numeric_limits<int64_t>::max();
  last_ns_ = std::numeric_limits<int64_t>::min();
  for (const WorkSpan& w : work) {
    if (w.end_ns <= w.start_ns) continue;
    ++kind_count[static_cast<int>(w.kind)];
    if (IsCommunication(w.kind)) ++purpose_count[static_cast<int>(w.purpose)];
    first_ns_ = std::min(first_ns_, w.start_ns);
    last_ns_ = std::max(last_ns_, w.end_ns);
  }
  for (int k = 0; k < kNumWorkKinds; ++k) by_kind_[k].reserve(kind_count[k]);
  for (int p = 0; p < kNumCommPurposes; ++p) by_purpose_[p].reserve(purpose_count[p]);
  for (const WorkSpan& w : work) {
    if (w.end_ns <= w.start_ns) continue;
    by_kind_[static_cast<int>(w.kind)].push_back({w.start_ns, w.end_ns});
    if (IsCommunication(w.kind))
      by_purpose_[static_cast<int>(w.purpose)].push_back({w.start_ns, w.end_ns});
  }
  for (IntervalSet& set : by_kind_) set = UnionOf(std::move(set));
  for (IntervalSet& set : by_purpose_) set = UnionOf(std::move(set));
  const IntervalSet& compute = by_kind_[static_cast<int>(WorkKind::kCompute)];
  IntervalSet copies;
  for (int k = 0; k < kNumWorkKinds; ++k) {
    const WorkKind kind = static_cast<WorkKind>(k);
    if (IsCommunication(kind)) {
      comm_ = Unite(comm_, by_kind_[k]);
    } else if (kind == WorkKind::kH2D || kind == WorkKind::kD2H) {
      copies = Unite(copies, by_kind_[k]);
    }
  }
  compute_or_comm_ = Unite(compute, comm_);
  busy_ = Unite(compute_or_comm_, copies);
}

const IntervalSet& RankAccounting::Clipped(const IntervalSet& set, int64_t start_ns, int64_t end_ns,
                                           IntervalSet* storage) const {
  if (start_ns <= first_ns_ && end_ns >= last_ns_) return set;
  *storage = ClipTo(set, start_ns, end_ns);
  return *storage;
}

StepAccount RankAccounting::Window(int64_t start_ns, int64_t end_ns) const {
  StepAccount a;
  a.start_ns = start_ns;
  a.end_ns = end_ns;
  a.step_ns = end_ns - start_ns;
  IntervalSet compute_storage, comm_storage, other_storage;
  const IntervalSet& compute = Clipped(compute_set(), start_ns, end_ns, &compute_storage);
  const IntervalSet& comm = Clipped(comm_, start_ns, end_ns, &comm_storage);
  a.compute_ns = TotalNs(compute);
  a.comm_ns = TotalNs(comm);
  a.overlapped_comm_ns = IntersectNs(comm, compute);
  a.exposed_comm_ns = a.comm_ns - a.overlapped_comm_ns;
  a.busy_ns = TotalNs(Clipped(busy_, start_ns, end_ns, &other_storage));
  a.idle_ns = a.step_ns - a.busy_ns;
  a.exposed_copy_ns =
      a.busy_ns - TotalNs(Clipped(compute_or_comm_, start_ns, end_ns, &other_storage));
  for (int k = 0; k < kNumWorkKinds; ++k) {
    if (by_kind_[k].empty()) continue;
    const WorkKind kind = static_cast<WorkKind>(k);
    const IntervalSet& set = Clipped(by_kind_[k], start_ns, end_ns, &other_storage);
    a.busy_by_kind_ns[k] = TotalNs(set);
    if (kind != WorkKind::kCompute && kind != WorkKind::kHost) {
      a.exposed_by_kind_ns[k] = a.busy_by_kind_ns[k] - IntersectNs(set, compute);
    }
  }
  for (int p = 0; p < kNumCommPurposes; ++p) {
    if (by_purpose_[p].empty()) continue;
    const IntervalSet& set = Clipped(by_purpose_[p], start_ns, end_ns, &other_storage);
    a.busy_by_purpose_ns[p] = TotalNs(set);
    a.exposed_by_purpose_ns[p] = a.busy_by_purpose_ns[p] - IntersectNs(set, compute);
  }
  a.host_ns = a.busy_by_kind_ns[static_cast<int>(WorkKind::kHost)];
  return a;
}

int64_t RankAccounting::ExposedNs(int64_t start_ns, int64_t end_ns) const {
  if (end_ns <= start_ns) return 0;
  // Binary search: one op against the whole step's compute, for every collective of a step.
  const IntervalSet& all = compute_set();
  auto it = std::upper_bound(all.begin(), all.end(), start_ns,
                             [](int64_t t, const Interval& i) { return t < i.end_ns; });
  int64_t covered = 0;
  for (; it != all.end() && it->start_ns < end_ns; ++it) {
    covered += std::min(end_ns, it->end_ns) - std::max(start_ns, it->start_ns);
  }
  return (end_ns - start_ns) - covered;
}

}  // namespace shardscope
