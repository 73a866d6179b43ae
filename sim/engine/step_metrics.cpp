#include "sim/engine/step_metrics.h"

#include <algorithm>
#include <map>

#include "core/schedule/op_kind.h"
#include "core/trace/intervals.h"

namespace shardscope::sim {

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
  std::map<std::string, UnitExposure> by_unit;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    if (op.role != role || (op.type != OpType::kAllGather && op.type != OpType::kCopyIn)) continue;
    const OpTiming& t = timeline.ops[i];
    UnitExposure& u = by_unit[op.unit];
    u.unit = op.unit;
    u.all_gather_ns += t.duration_ns();
    if (t.end_ns > t.start_ns) u.exposed_ns += TotalNs(Subtract({{t.start_ns, t.end_ns}}, compute));
  }
  std::vector<UnitExposure> out;
  out.reserve(by_unit.size());
  for (auto& [name, u] : by_unit) out.push_back(std::move(u));
  std::stable_sort(out.begin(), out.end(), [](const UnitExposure& a, const UnitExposure& b) {
    return a.exposed_ns > b.exposed_ns;
  });
  return out;
}

}  // namespace shardscope::sim
