// The phases of a training step that memory peaks are reported for (simulate's summary and
// text output), so that a knob acting on one phase shows even when the global peak sits in
// another (the loss backward, typically).
//
// Contents:
//   StepPhase, StepPhaseName   the phases and their names (core/trace/step_phase_name.h)
//   StepPhaseOf                the phase of one schedule op
//   PhasePeak                  the highest allocated bytes while ops of one phase applied memory
//                              effects
#pragma once

#include <cstdint>

#include "core/schedule/schedule.h"
#include "core/trace/step_phase_name.h"

namespace shardscope {

// Ops holding the loss's work (forward or backward) are the loss phase; otherwise the op_id's
// phase: fwd → forward, bwd → backward, step (the end-of-backward wait and the optimizer) →
// optimizer. Pipeline sends and receives belong to the pass they carry.
StepPhase StepPhaseOf(const ScheduleOp& op);

struct PhasePeak {
  int64_t allocated_bytes = 0;
  int64_t time_ns = 0;
  int op = -1;  // the op whose effect reached it; -1: the phase applied no effect
};

}  // namespace shardscope
