#include "sim/advisor/fit_cause.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "core/schedule/schedule.h"
#include "core/trace/step_phase_name.h"
#include "core/util/units.h"

namespace shardscope::sim {
namespace {

std::string PhaseOf(const std::string& op) {
  const std::optional<StepPhase> phase = StepPhaseOfOpId(op);
  return phase ? std::string(StepPhaseName(*phase)) : "initial state";
}

std::string JoinCategories(const std::vector<CategoryGib>& cats, double total_gib) {
  std::string out;
  for (const CategoryGib& c : cats) {
    out += fmt::format("{}{} {:.2f} GiB", out.empty() ? "" : ", ", c.category, c.gib);
    if (total_gib > 0) out += fmt::format(" ({:.0f}%)", 100.0 * c.gib / total_gib);
  }
  return out;
}

}  // namespace

FitCause AnalyzeFit(const Simulation& sim) {
  FitCause cause;
  cause.usable_gib = sim.summary.usable_gib;
  cause.peak_allocated_gib = sim.summary.peak_memory_allocated_gib;
  cause.peak_op = sim.summary.peak_memory_op;
  cause.peak_phase = PhaseOf(cause.peak_op);
  // Persistent state: the role that reserves the most is the one that fails first.
  const RoleMemory* worst = nullptr;
  for (const RoleMemory& rm : sim.memory) {
    if (worst == nullptr || rm.peak_reserved_bytes > worst->peak_reserved_bytes) worst = &rm;
  }
  if (worst != nullptr) {
    for (MemCategory c :
         {MemCategory::kShardedParams, MemCategory::kOptimizer, MemCategory::kShardedGrads}) {
      const int i = static_cast<int>(c);
      const double gib = ToGiB(std::max(worst->initial_bytes[i], worst->final_bytes[i]));
      cause.persistent.push_back({std::string(MemCategoryName(c)), gib});
      cause.persistent_gib += gib;
    }
  }
  cause.persistent_exceeds = cause.usable_gib > 0 && cause.persistent_gib > cause.usable_gib;
  cause.reserved_above_allocated_gib =
      std::max(0.0, sim.summary.peak_memory_reserved_gib - cause.peak_allocated_gib);
  cause.allocator_decides = cause.usable_gib > 0 && cause.reserved_above_allocated_gib > 0 &&
                            cause.peak_allocated_gib <= cause.usable_gib;

  std::vector<CategoryGib> at_peak;
  for (int c = 0; c < kNumMemCategories; ++c) {
    at_peak.push_back({std::string(MemCategoryName(static_cast<MemCategory>(c))),
                       sim.summary.memory_at_peak_gib[c]});
  }
  std::stable_sort(at_peak.begin(), at_peak.end(),
                   [](const CategoryGib& a, const CategoryGib& b) { return a.gib > b.gib; });
  double covered = 0;
  for (const CategoryGib& c : at_peak) {
    if (c.gib <= 0 || cause.dominant.size() == 3) break;
    if (covered * 3 >= 2 * cause.peak_allocated_gib) break;
    cause.dominant.push_back(c);
    covered += c.gib;
  }

  if (cause.persistent_exceeds) {
    cause.text = fmt::format(
        "persistent state alone exceeds the usable HBM: {} = {:.2f} GiB > {:.2f} GiB usable, "
        "before any activation or temporary; checkpointing and batch size cannot fix this — "
        "shard the state over more GPUs or offload it",
        JoinCategories(cause.persistent, 0), cause.persistent_gib, cause.usable_gib);
  } else {
    cause.text = fmt::format(
        "the peak ({:.2f} GiB allocated) is in the {} at {}; it is mostly {}; persistent state "
        "(sharded params + optimizer + sharded grads) is {:.2f} GiB",
        cause.peak_allocated_gib, cause.peak_phase, cause.peak_op,
        JoinCategories(cause.dominant, cause.peak_allocated_gib), cause.persistent_gib);
    if (cause.allocator_decides) {
      cause.text += fmt::format(
          "; the allocated peak is within the {:.2f} GiB usable, and the caching allocator is "
          "estimated to reserve {:.2f} GiB above it (blocks cached per stream, rounded and split)",
          cause.usable_gib, cause.reserved_above_allocated_gib);
    }
  }
  return cause;
}

}  // namespace shardscope::sim
