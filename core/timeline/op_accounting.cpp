#include "core/timeline/op_accounting.h"

#include <algorithm>
#include <cstdint>

#include "core/schedule/op_kind.h"

namespace shardscope {

CommPurpose PurposeOf(const Schedule& schedule, const ScheduleOp& op) {
  const WorkKind kind = WorkKindOf(op);
  if (op.group >= 0 && op.group < static_cast<int>(schedule.groups.size())) {
    return PurposeOfDims(schedule.groups[op.group].dims, kind);
  }
  return PurposeOfOpId(OpIdOf(schedule, op), kind);
}

namespace {

// The op as the accounting sees it (its WorkKind and purpose), over a whole schedule, with
// PurposeOf's answer kept per group and kind: a step's collectives run on a handful of groups,
// and PurposeOfDims compares each one's dim names (4% of the instructions of a TP 8 x PP 8
// prediction, issue 14).
class SpanMaker {
 public:
  explicit SpanMaker(const Schedule& schedule)
      : schedule_(schedule), purposes_(schedule.groups.size() * kNumWorkKinds, kUnknown) {}

  WorkSpan operator()(const ScheduleOp& op, const OpTiming& timing) {
    const WorkKind kind = WorkKindOf(op);
    return {timing.start_ns, timing.end_ns, kind, Purpose(op, kind)};
  }

 private:
  static constexpr uint8_t kUnknown = 0xff;
  CommPurpose Purpose(const ScheduleOp& op, WorkKind kind) {
    if (!IsCommunication(kind)) return CommPurpose::kNone;
    if (op.group < 0 || op.group >= static_cast<int>(schedule_.groups.size()))
      return PurposeOf(schedule_, op);
    uint8_t& kept =
        purposes_[static_cast<size_t>(op.group) * kNumWorkKinds + static_cast<size_t>(kind)];
    if (kept == kUnknown) kept = static_cast<uint8_t>(PurposeOf(schedule_, op));
    return static_cast<CommPurpose>(kept);
  }

  const Schedule& schedule_;
  std::vector<uint8_t> purposes_;  // by group, then kind
};

}  // namespace

std::vector<WorkSpan> RoleWork(const Schedule& schedule, const Timeline& timeline, int role) {
  std::vector<WorkSpan> work;
  SpanMaker span(schedule);
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    const OpTiming& t = timeline.ops[i];
    if (op.role != role || !IsTracedOp(op, t)) continue;
    work.push_back(span(op, t));
  }
  return work;
}

namespace {

// The window `stats` reads from the trace: from the step_begin marker at 0 to the rank's last
// event.
StepAccount Account(const std::vector<WorkSpan>& work, const RankAccounting& accounting) {
  int64_t end = 0;
  for (const WorkSpan& w : work) end = std::max(end, w.end_ns);
  return accounting.Window(0, end);
}

}  // namespace

StepAccount AccountRole(const Schedule& schedule, const Timeline& timeline, int role,
                        std::optional<RankAccounting>* kept) {
  const std::vector<WorkSpan> work = RoleWork(schedule, timeline, role);
  if (kept == nullptr) return Account(work, RankAccounting(work));
  kept->emplace(work);
  return Account(work, **kept);
}

std::vector<StepAccount> AccountRoles(const Schedule& schedule, const Timeline& timeline,
                                      int keep_role, std::optional<RankAccounting>* kept) {
  std::vector<std::vector<WorkSpan>> work(schedule.roles.size());
  SpanMaker span(schedule);
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    const OpTiming& t = timeline.ops[i];
    if (!IsTracedOp(op, t)) continue;
    work[static_cast<size_t>(op.role)].push_back(span(op, t));
  }
  std::vector<StepAccount> out;
  out.reserve(work.size());
  for (size_t r = 0; r < work.size(); ++r) {
    if (kept != nullptr && static_cast<int>(r) == keep_role) {
      kept->emplace(work[r]);
      out.push_back(Account(work[r], **kept));
    } else {
      out.push_back(Account(work[r], RankAccounting(work[r])));
    }
  }
  return out;
}

}  // namespace shardscope
