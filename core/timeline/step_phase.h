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

// The op_id's phase: fwd → forward, bwd → backward, step (the end-of-backward wait and the
// optimizer) → optimizer; except that backward ops holding the loss's backward are the loss
// phase. The loss forward stays in the forward phase, as FSDPMemTracker's reference sees it
// (tools/memtracker_reference.py: the forward runs until the loss is returned, the loss phase
// until the head's backward starts), so a reshard knob's forward peak, reached at the loss
// forward with every kept unit still gathered, is comparable. Pipeline sends and receives
// belong to the pass they carry.
StepPhase StepPhaseOf(const Schedule& schedule, const ScheduleOp& op);

struct PhasePeak {
  int64_t allocated_bytes = 0;
  int64_t time_ns = 0;
  int op = -1;  // the op whose effect reached it; -1: the phase applied no effect
};

}  // namespace shardscope
