#include "viewer/summary_model.h"

#include <algorithm>
#include <map>
#include <vector>

#include "core/trace/accounting.h"
#include "core/trace/work_kind.h"

namespace shardscope::viewer {
namespace {

void MemoryPeaks(const MemoryModel& m, const std::optional<TimeRange>& range, SummaryFigures* f) {
  if (m.empty()) return;
  f->has_memory = true;
  if (!range) {
    f->peak_allocated_bytes = m.peak_allocated;
    f->peak_reserved_bytes = m.peak_reserved;
    return;
  }
  int64_t k = std::max<int64_t>(m.SampleAt(range->lo_ns), 0);
  for (; k < static_cast<int64_t>(m.times_ns.size()) && m.times_ns[k] < range->hi_ns; ++k) {
    f->peak_allocated_bytes = std::max(f->peak_allocated_bytes, m.allocated[k]);
    f->peak_reserved_bytes = std::max(f->peak_reserved_bytes, m.reserved[k]);
  }
}

}  // namespace

SummaryFigures ComputeSummary(const TraceView& view, const std::optional<TimeRange>& range) {
  SummaryFigures f;
  MemoryPeaks(view.memory, range, &f);
  if (!range) {
    f.step_ns = view.stats.step_time_ns;
    f.exposed_comm_ns = view.stats.exposed_comm_ns;
    int64_t comm = 0, exposed = 0;
    for (const StepStats& s : view.stats.steps) {
      comm += s.comm_ns;
      exposed += s.exposed_comm_ns;
    }
    f.overlap_ratio = comm > 0 ? static_cast<double>(comm - exposed) / comm : 0;
    return f;
  }
  f.step_ns = range->hi_ns - range->lo_ns;
  // Per rank, the work that overlaps the range, classified by kind (not by lane: a collective
  // on the compute stream is communication), accounted by core's step accounting.
  std::map<int, std::vector<WorkSpan>> work;
  for (const Track& t : view.tracks) {
    std::vector<WorkSpan>& out = work[t.rank];
    // Items that can overlap the range: from the first whose prefix max end passes lo.
    auto first = std::upper_bound(t.max_end.begin(), t.max_end.end(), range->lo_ns);
    for (size_t i = first - t.max_end.begin(); i < t.items.size(); ++i) {
      const LaneItem& it = t.items[i];
      if (it.start_ns >= range->hi_ns) break;
      out.push_back(
          {it.start_ns, it.end_ns, ClassifyEvent(view.trace, view.trace.events[it.event])});
    }
  }
  bool any = false;
  StepAccount worst;
  for (const auto& [rank, spans] : work) {
    const StepAccount a = RankAccounting(spans).Window(range->lo_ns, range->hi_ns);
    if (!any || a.exposed_comm_ns > worst.exposed_comm_ns) worst = a;
    any = true;
  }
  f.exposed_comm_ns = worst.exposed_comm_ns;
  f.overlap_ratio = worst.overlap_ratio();
  return f;
}

std::optional<double> RelativeError(double a, double b) {
  if (a != 0) return (b - a) / a;
  // Nothing predicted against something measured has no relative error (it read +0.0%).
  if (b == 0) return 0.0;
  return std::nullopt;
}

}  // namespace shardscope::viewer
