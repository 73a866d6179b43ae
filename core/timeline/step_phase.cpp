#include "core/timeline/step_phase.h"

#include "core/trace/op_id.h"

namespace shardscope {

std::string_view StepPhaseName(StepPhase phase) {
  switch (phase) {
    case StepPhase::kForward:
      return "forward";
    case StepPhase::kLoss:
      return "loss";
    case StepPhase::kBackward:
      return "backward";
    case StepPhase::kOptimizer:
      return "optimizer";
  }
  return "?";
}

StepPhase StepPhaseOf(const ScheduleOp& op) {
  if (op.type == OpType::kOptimizer) return StepPhase::kOptimizer;
  const Result<OpId> id = ParseOpId(op.op_id);
  if (!id.ok()) return StepPhase::kForward;  // not a schedule op_id: no phase to read
  switch (id->phase) {
    case OpPhase::kForward:
      return StepPhase::kForward;
    case OpPhase::kBackward:
      for (const ComputeItem& item : op.items) {
        if (item.kind == OpKind::kLoss) return StepPhase::kLoss;
      }
      return StepPhase::kBackward;
    case OpPhase::kStep:
      return StepPhase::kOptimizer;
  }
  return StepPhase::kForward;
}

}  // namespace shardscope
