#include "core/timeline/step_phase.h"

namespace shardscope {

StepPhase StepPhaseOf(const Schedule& schedule, const ScheduleOp& op) {
  if (op.type == OpType::kOptimizer) return StepPhase::kOptimizer;
  const std::optional<StepPhase> phase =
      op.id_phase ? StepPhaseOfPart(*op.id_phase) : StepPhaseOfOpId(OpIdOf(schedule, op));
  if (!phase) return StepPhase::kForward;  // not a schedule op_id: no phase to read
  if (*phase == StepPhase::kBackward) {
    for (const ComputeItem& item : op.items) {
      if (item.kind == OpKind::kLoss) return StepPhase::kLoss;
    }
  }
  return *phase;
}

}  // namespace shardscope
