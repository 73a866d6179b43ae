// Why a predicted step does not fit (or barely fits): what to cut, not the last allocation.
//
// Contents:
//   CategoryGib   one memory category and its size
//   FitCause      persistent state vs usable HBM, the categories that dominate the peak, where
//                 the peak happens, and one sentence saying it
//   AnalyzeFit    a Simulation → its FitCause
//
// The summary's overflow_category names the allocation that crossed the line, which is often a
// small temporary on top of a large, unrelated pile. The cause a user can act on is either the
// persistent state (sharded parameters + optimizer state + sharded gradients, live for the
// whole step) being larger than the HBM on its own, so no activation setting can help, or the
// few categories that make up most of the peak and the phase (forward, backward, optimizer
// step) in which it occurs. Where the allocated peak alone is within the usable HBM, the
// caching allocator's reserve above it is the cause, and the text says how much it is.
//
// Example:
//   const FitCause cause = AnalyzeFit(sim);
//   if (cause.persistent_exceeds) Use(cause.persistent_gib);
#pragma once

#include <string>
#include <vector>

#include "sim/engine/simulator.h"

namespace shardscope::sim {

struct CategoryGib {
  std::string category;  // MemCategoryName
  double gib = 0;
};

struct FitCause {
  double usable_gib = 0;
  // Persistent state of the role with the highest reserved peak: sharded_params, optimizer,
  // sharded_grads (each the larger of its start-of-step and end-of-step bytes).
  std::vector<CategoryGib> persistent;
  double persistent_gib = 0;
  bool persistent_exceeds = false;  // persistent_gib > usable_gib
  // The largest categories at the allocated peak, largest first, until they make up at least
  // two thirds of it (at most three).
  std::vector<CategoryGib> dominant;
  double peak_allocated_gib = 0;
  std::string peak_op;     // op_id whose allocation reached the peak, or "(initial state)"
  std::string peak_phase;  // "forward", "backward", "optimizer" or "initial state"
  // What the caching allocator's estimate reserves above the allocated peak: blocks cached per
  // stream, rounding and split blocks. When the allocated peak alone is within the usable HBM,
  // this is what decides the verdict (allocator_decides).
  double reserved_above_allocated_gib = 0;
  bool allocator_decides = false;
  std::string text;  // one sentence for the command line
};

FitCause AnalyzeFit(const Simulation& sim);

}  // namespace shardscope::sim
