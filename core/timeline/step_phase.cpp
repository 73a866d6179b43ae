#include "core/timeline/step_phase.h"

namespace shardscope {

StepPhase StepPhaseOf(const ScheduleOp& op) {
  for (const ComputeItem& item : op.items) {
    if (item.kind == OpKind::kLoss) return StepPhase::kLoss;
  }
  if (op.type == OpType::kOptimizer) return StepPhase::kOptimizer;
  // Not a schedule op_id: no phase to read.
  return StepPhaseOfOpId(op.op_id).value_or(StepPhase::kForward);
}

}  // namespace shardscope
