// The least step time a job's mesh, batch and checkpointing allow whatever its FSDP settings
// (prefetch depth, resharding): the busiest role's compute-stream work that FSDP does not
// place, at its priced, unslowed durations. recommend refines a plan's FSDP settings only while
// this floor could still put it among the best (sim/explore/recommend.cpp).
//
// What counts: compute-lane ops whose items are all model work (forward, backward, recompute,
// loss) and the collectives FSDP does not issue that block the compute stream (tensor, context
// and expert parallel). FSDP's copies on the compute stream and the optimizer step are left out
// (resharding and prefetch change how many copies run). Each counted op is one micro-batch's
// work, so an extrapolated run (Simulation::steady_state) scales by the step's micro-batches
// over the run's.
#pragma once

#include "sim/engine/simulator.h"

namespace shardscope::sim {

// Seconds; 0 where `sim` was not run (Simulation::floor_over_capacity).
double FsdpIndependentFloorSeconds(const Simulation& sim);

}  // namespace shardscope::sim
