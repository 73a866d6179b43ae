// How large a step's schedule will be, worked out from the plan before any op is built, so an
// absurd job is refused in microseconds instead of after gigabytes of schedule.
//
// Contents:
//   EstimateScheduleOps   an upper bound of the ops BuildSchedule makes (all roles)
//   CheckScheduleSize     InvalidInput past Limit::kScheduleOps, naming the figures that set it
#pragma once

#include <cstdint>

#include "core/model/tree.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule_builder.h"
#include "core/util/status.h"

namespace shardscope {

// Per micro-batch (grad_accum · pp_microbatches of them), each unit's collectives, waits,
// copies and compute segments forward and backward (recompute included), each module op's
// share of the compute segments, each stage's pipeline sends and receives; then the step's
// per-unit optimizer and synchronisation ops. Saturates instead of wrapping.
int64_t EstimateScheduleOps(const ModelTree& tree, const Plan& plan,
                            const ScheduleOptions& options);
// The same, given the tree's module visits with an op (StepBasis::modules_with_op).
int64_t EstimateScheduleOps(int64_t modules_with_op, const Plan& plan,
                            const ScheduleOptions& options);

// "schedule: about N schedule operations (U units, M modules with an op, G micro-batches:
// training.grad_accum · parallelism.pp_microbatches), more than the limit of L (set
// SHARDSCOPE_MAX_SCHEDULE_OPS to raise it)".
Status CheckScheduleSize(const ModelTree& tree, const Plan& plan, const ScheduleOptions& options);
Status CheckScheduleSize(int64_t modules_with_op, const Plan& plan, const ScheduleOptions& options);

}  // namespace shardscope
