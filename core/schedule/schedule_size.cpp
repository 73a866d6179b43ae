#include "core/schedule/schedule_size.h"

#include <fmt/core.h>

#include <algorithm>
#include <optional>

#include "core/util/checked_math.h"
#include "core/util/limits.h"

namespace shardscope {
namespace {

// Ops per unit and micro-batch: all-gather, its wait and copy-out forward and backward, the
// recompute's, reduce-scatter / all-reduce and their waits, the compute segments between
// them (the step builder emits fewer; this is a ceiling, not a count).
constexpr int64_t kOpsPerUnit = 24;
// Compute segments a module op can split (forward, backward, recompute).
constexpr int64_t kOpsPerModule = 3;
// Pipeline sends, receives and waits per stage and micro-batch, both directions.
constexpr int64_t kOpsPerStage = 8;
// The step's per-unit tail (gradient sync, optimizer, frees) and fixed ops.
constexpr int64_t kStepOpsPerUnit = 8;
constexpr int64_t kStepOps = 64;

int64_t ModulesWithOp(const ModelTree& tree) {
  int64_t n = 0;
  for (const ModuleEntry& e : EnumerateModules(tree)) {
    if (tree.modules[static_cast<size_t>(e.module)].op) ++n;
  }
  return n;
}

}  // namespace

int64_t EstimateScheduleOps(const ModelTree& tree, const Plan& plan,
                            const ScheduleOptions& options) {
  return EstimateScheduleOps(ModulesWithOp(tree), plan, options);
}

int64_t EstimateScheduleOps(int64_t modules_with_op, const Plan& plan,
                            const ScheduleOptions& options) {
  constexpr int64_t kSaturated = int64_t{1} << 62;
  const int64_t units = static_cast<int64_t>(plan.units.size());
  const int64_t microbatches = int64_t{options.grad_accum} * options.pp_microbatches;
  std::optional<int64_t> per_microbatch = CheckedAdd(
      units * kOpsPerUnit, CheckedMul(modules_with_op, kOpsPerModule).value_or(kSaturated));
  if (per_microbatch) {
    per_microbatch = CheckedAdd(*per_microbatch, int64_t{options.pp} * kOpsPerStage);
  }
  std::optional<int64_t> total =
      per_microbatch ? CheckedMul(*per_microbatch, microbatches) : std::nullopt;
  if (total) total = CheckedAdd(*total, units * kStepOpsPerUnit + kStepOps);
  return std::min(total.value_or(kSaturated), kSaturated);
}

Status CheckScheduleSize(const ModelTree& tree, const Plan& plan, const ScheduleOptions& options) {
  return CheckScheduleSize(ModulesWithOp(tree), plan, options);
}

Status CheckScheduleSize(int64_t modules_with_op, const Plan& plan,
                         const ScheduleOptions& options) {
  const int64_t estimate = EstimateScheduleOps(modules_with_op, plan, options);
  if (estimate <= LimitValue(Limit::kScheduleOps)) return Status::Ok();
  const int64_t microbatches = int64_t{options.grad_accum} * options.pp_microbatches;
  return InvalidInput(fmt::format(
      "schedule: about {} operations ({} units, {} modules with an op, {} micro-batches: "
      "training.grad_accum {} · parallelism.pp_microbatches {}), more than the limit of {} "
      "(set {} to raise it)",
      estimate, plan.units.size(), modules_with_op, microbatches, options.grad_accum,
      options.pp_microbatches, LimitValue(Limit::kScheduleOps),
      LimitVariable(Limit::kScheduleOps)));
}

}  // namespace shardscope
