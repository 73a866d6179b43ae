// The step accounting (core/trace/accounting.h) fed straight from a Schedule and its Timeline,
// without a trace: what the simulator's summary uses. `stats` feeds the same accounting from
// the trace MakeTrace writes of that timeline; both see the same work with the same kinds
// (WorkKindOf here, ClassifyEvent there) over the same window, so they agree to the ns.
//
// Contents:
//   IsTracedOp    whether an op becomes a trace event (MakeTrace skips zero-length waits)
//   PurposeOf     what a communication op is for: its group's dims (comm_purpose.h)
//   RoleWork      one role's traced ops as WorkSpans
//   AccountRole   StepAccount of one role's step: [0, the end of its last traced op)
//   AccountRoles  AccountRole of every role, in one pass over the ops (and one role's
//                 RankAccounting, for what else a summary reads of it)
#pragma once

#include <optional>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/timeline/timeline.h"
#include "core/trace/accounting.h"

namespace shardscope {

// A wait is a join point, not work: a measured trace has no event for it, and a zero-length
// event at another event's boundary reads as an overlap to trace checkers. An op that never
// ran (a measured step cut short by a failure: start -1) has no event either.
inline bool IsTracedOp(const ScheduleOp& op, const OpTiming& timing) {
  if (timing.start_ns < 0) return false;
  return !(op.type == OpType::kWait && timing.duration_ns() == 0);
}

// PurposeOfDims of the op's group; an op without a group (an all-gather's copy-in) by its
// op_id, as a trace reader sees it. kNone for work that is not communication.
CommPurpose PurposeOf(const Schedule& schedule, const ScheduleOp& op);

std::vector<WorkSpan> RoleWork(const Schedule& schedule, const Timeline& timeline, int role);
// With `kept`, the role's RankAccounting is left there (the summary's edge windows and per-op
// exposure read it; built once, not again from the role's work); so too, for role `keep_role`,
// with AccountRoles.
StepAccount AccountRole(const Schedule& schedule, const Timeline& timeline, int role,
                        std::optional<RankAccounting>* kept = nullptr);
std::vector<StepAccount> AccountRoles(const Schedule& schedule, const Timeline& timeline,
                                      int keep_role = -1,
                                      std::optional<RankAccounting>* kept = nullptr);

}  // namespace shardscope
