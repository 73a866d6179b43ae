#include "sim/engine/step_metrics.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "core/schedule/op_kind.h"
#include "core/trace/intervals.h"

namespace shardscope::sim {
namespace {

// |[start, end) − set|, finding the first interval that may overlap by binary search: an
// all-gather meets a handful of the step's compute intervals, not all of them.
int64_t NotCoveredNs(int64_t start, int64_t end, const IntervalSet& set) {
  int64_t covered = 0;
  auto it = std::lower_bound(set.begin(), set.end(), start,
                             [](const Interval& i, int64_t v) { return i.end_ns <= v; });
  for (; it != set.end() && it->start_ns < end; ++it) {
    covered += std::min(it->end_ns, end) - std::max(it->start_ns, start);
  }
  return end - start - covered;
}

}  // namespace

std::vector<UnitExposure> ExposedAllGathers(const Schedule& schedule, const Timeline& timeline,
                                            int role) {
  std::vector<Interval> compute_raw;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    if (op.role == role && WorkKindOf(op) == WorkKind::kCompute) {
      compute_raw.push_back({timeline.ops[i].start_ns, timeline.ops[i].end_ns});
    }
  }
  const IntervalSet compute = UnionOf(std::move(compute_raw));
  // Per unit, keyed by the ops' own unit strings (no copies until the result).
  std::unordered_map<std::string_view, UnitExposure> by_unit;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    if (op.role != role || (op.type != OpType::kAllGather && op.type != OpType::kCopyIn)) continue;
    const OpTiming& t = timeline.ops[i];
    UnitExposure& u = by_unit[UnitOf(schedule, op)];
    u.all_gather_ns += t.duration_ns();
    if (t.end_ns > t.start_ns) u.exposed_ns += NotCoveredNs(t.start_ns, t.end_ns, compute);
  }
  std::vector<UnitExposure> out;
  out.reserve(by_unit.size());
  for (auto& [name, u] : by_unit) {
    u.unit = std::string(name);
    out.push_back(std::move(u));
  }
  std::sort(out.begin(), out.end(), [](const UnitExposure& a, const UnitExposure& b) {
    return a.exposed_ns != b.exposed_ns ? a.exposed_ns > b.exposed_ns : a.unit < b.unit;
  });
  return out;
}

}  // namespace shardscope::sim
