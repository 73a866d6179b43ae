// The phases of a training step as summaries, statistics and messages name them, and the phase
// an op_id names. Kept beside the op_id grammar so that trace statistics (core_trace) and the
// schedule's accounting (core/timeline/step_phase.h) spell each phase once.
//
// Contents:
//   StepPhase         forward, loss, backward, optimizer
//   StepPhaseName     "forward", "loss", "backward", "optimizer"
//   StepPhaseOfOpId   the phase of an op_id's phase part (fwd, bwd, step); nullopt for other text
//   StepPhaseOfPart   the same from the phase part itself (OpPhase)
#pragma once

#include <optional>
#include <string_view>

#include "core/trace/op_id.h"

namespace shardscope {

enum class StepPhase : int { kForward, kLoss, kBackward, kOptimizer };
constexpr int kNumStepPhases = 4;
std::string_view StepPhaseName(StepPhase phase);

// fwd → forward, bwd → backward, step (the end-of-backward wait and the optimizer) → optimizer.
// Never the loss: an op_id does not say which ops hold the loss's work.
std::optional<StepPhase> StepPhaseOfOpId(std::string_view op_id);
StepPhase StepPhaseOfPart(OpPhase part);

}  // namespace shardscope
