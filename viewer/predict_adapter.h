// The one place the viewer turns a simulation into a predicted trace: sim::SimulationTrace,
// i.e. core/timeline/make_trace.h MakeTrace, the trace `simulate --trace` writes.
//
// Contents:
//   PredictedTrace   Simulation → Trace (formats.md §3, the same trace `simulate --trace` writes)
#pragma once

#include "core/trace/trace.h"
#include "sim/engine/simulator.h"

namespace shardscope::viewer {

Trace PredictedTrace(const sim::Simulation& sim);

}  // namespace shardscope::viewer
