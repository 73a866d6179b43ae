// A Simulation as a predicted trace (formats.md §3), through the trace helper's model
// (core/trace/trace.h); WriteTrace (core/trace/trace_io.h) writes it.
//
// Contents:
//   MakePredictedTrace   one pid per simulated rank, one tid per lane, X events per op (zero-
//                        length waits omitted; bytes/group_size/busbw on collectives only),
//                        `memory` counters per category + allocated + reserved, markers
#pragma once

#include <string>

#include "core/trace/trace.h"
#include "sim/engine/simulator.h"

namespace shardscope::sim {

// `tool_version` goes into metadata ("shardscope 0.1.0"). Deterministic: the same Simulation
// gives the same Trace (no clocks, no addresses).
Trace MakePredictedTrace(const Simulation& sim, const std::string& tool_version);

}  // namespace shardscope::sim
