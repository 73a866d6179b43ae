#include "core/timeline/op_accounting.h"

#include <algorithm>

#include "core/schedule/op_kind.h"

namespace shardscope {

std::vector<WorkSpan> RoleWork(const Schedule& schedule, const Timeline& timeline, int role) {
  std::vector<WorkSpan> work;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    const OpTiming& t = timeline.ops[i];
    if (op.role != role || !IsTracedOp(op, t)) continue;
    work.push_back({t.start_ns, t.end_ns, WorkKindOf(op)});
  }
  return work;
}

StepAccount AccountRole(const Schedule& schedule, const Timeline& timeline, int role) {
  const std::vector<WorkSpan> work = RoleWork(schedule, timeline, role);
  // The window `stats` reads from the trace: from the step_begin marker at 0 to the rank's
  // last event.
  int64_t end = 0;
  for (const WorkSpan& w : work) end = std::max(end, w.end_ns);
  return RankAccounting(work).Window(0, end);
}

}  // namespace shardscope
