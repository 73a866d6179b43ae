// The one place the viewer turns a simulation into a predicted trace, so the move of the
// exporter into core (MakePredictedTrace → MakeTrace) is a one-line change here.
//
// Contents:
//   PredictedTrace   Simulation → Trace (formats.md §3, the same trace `simulate --trace` writes)
#pragma once

#include "core/trace/trace.h"
#include "sim/engine/simulator.h"

namespace shardscope::viewer {

Trace PredictedTrace(const sim::Simulation& sim);

}  // namespace shardscope::viewer
