#include "core/trace/step_phase_name.h"

#include "core/trace/op_id.h"
#include "core/trace/op_id_view.h"

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

std::optional<StepPhase> StepPhaseOfOpId(std::string_view op_id) {
  const std::optional<OpIdView> id = ParseOpIdView(op_id);  // once per op: no copies
  if (!id) return std::nullopt;
  return StepPhaseOfPart(id->phase);
}

StepPhase StepPhaseOfPart(OpPhase part) {
  switch (part) {
    case OpPhase::kForward:
      return StepPhase::kForward;
    case OpPhase::kBackward:
      return StepPhase::kBackward;
    case OpPhase::kStep:
      return StepPhase::kOptimizer;
  }
  return StepPhase::kForward;
}

}  // namespace shardscope
