// Plan + model tree + step options → the Schedule of one training step (runtime.md).
//
// Contents:
//   OpEstimator        how a module's descriptor becomes FLOPs / bytes (EstimateOp by default)
//   ScheduleOptions    exactly what the builder needs from the scenario (training, mesh, FSDP
//                      options the plan does not carry)
//   BuildSchedule      the builder; refuses what it does not model with an error naming the option
//                      (with a StepBasisCache: the step's basis shared by the schedules of a sweep)
//
// Example:
//   ScheduleOptions o;
//   o.world_size = 8; o.dp_shard = 8; o.local_batch = 2; o.seq_len = 8192;
//   SS_ASSIGN_OR_RETURN(Schedule s, BuildSchedule(tree, plan, o));
//
// What is modelled, in brief (details beside the code: step_builder.cpp, unit_work.cpp,
// model_chunks.cpp, pipeline_order.cpp):
//   - one simulated rank per role: without pipelining one role (rank 0 stands for all; padding
//     makes every rank's shard the same size); with pp > 1 one role per stage (its first rank).
//     With ScheduleOptions::rank, one given rank's own schedule instead.
//   - a buffer table (Schedule::buffers) with every buffer's dtype, elements, owner and the
//     op that allocates and frees it; collectives carry a CollectiveSpec (schedule.h).
//   - forward in execution order, nested units run inside their parent at their place in module
//     order (the parent's compute is split into `compute`, `compute:1`, ... around them);
//     backward in reverse; all-gather, prefetch, reshard, reduce-scatter, HSDP all-reduce,
//     replicate-param all-reduce, end-of-backward wait, optimizer step, offload copies.
//   - TP / CP / EP collectives on the compute lane (they block compute), per module.
//   - pipelining: gpipe, 1f1b, interleaved_1f1b (pp_virtual_stages chunks per stage); each
//     chunk is its own FSDP root, as the plan's pipeline_chunks say; send / recv on the p2p
//     lane carry cross-role dependencies.
//   - op_ids: "<phase>/<unit>/<what>", unit "root" for the root ("root.chunk<c>" per pipeline
//     chunk); with several micro-batches every op of micro-batch k carries the prefix "mb<k>/".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/model/dtype.h"
#include "core/model/op_cost.h"
#include "core/model/tree.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/util/status.h"

namespace shardscope {

// Per-rank figures of one module; tests inject closed forms, production uses EstimateOp. A
// function of its arguments alone: the builder calls it once per distinct descriptor and gives
// its figures to every module with an equal one (BuildUnitWork).
using OpEstimator = Result<OpCost> (*)(const OpDescriptor&, const OpContext&);

struct ScheduleOptions {
  // training.*
  int64_t local_batch = 1;  // sequences per rank per micro-step (split into pp_microbatches)
  int64_t seq_len = 1;      // tokens per sequence (before CP splits it)
  int grad_accum = 1;       // micro-steps per optimizer step
  ActivationCheckpoint activation_checkpoint;
  std::string optimizer = "adamw";  // adamw | adam | sgd
  // model.implementation: whose module code runs (what autograd saves, saved_tensors.h)
  Implementation implementation = Implementation::kTransformers;
  // cluster.*
  int world_size = 1;
  int gpus_per_node = 8;
  // parallelism.* (dp_shard here excludes cp: the FSDP shard group is dp_shard·cp ranks)
  int pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1, ep = 1;
  bool sequence_parallel = true;
  bool loss_parallel = false;
  std::string pp_schedule = "1f1b";  // 1f1b | interleaved_1f1b | gpipe
  int pp_microbatches = 1;           // per micro-step; the step runs grad_accum times as many
  int pp_virtual_stages = 1;         // model chunks per stage (interleaved_1f1b only)
  // fsdp.* not carried by the plan
  bool reshard_after_backward = true;  // only matters with grad_accum > 1
  bool requires_grad_sync = true;      // false: no reduce-scatter on non-final micro-steps
  OpEstimator estimator = nullptr;     // null → EstimateOp
  // Whether Buffer::grads_of lists the parameters each gradient buffer holds (what a backend
  // follows). A simulator reads none of them: without them a step builds with a few string
  // copies fewer per parameter and micro-batch, and is otherwise the same.
  bool grad_param_names = true;
  // Which ranks the schedule holds. Unset: one role per pipeline stage, its first rank
  // standing for every rank of the stage (the simulator's mode). Set: the full schedule of
  // this global rank alone (one role whose `rank` is it, ranks_like 1): its own groups'
  // member ranks, its own stage's chunks and its own expert-mesh groups (what a backend runs).
  std::optional<int> rank;
};

// Validates the options against each other and the plan, then builds the step.
Result<Schedule> BuildSchedule(const ModelTree& tree, const Plan& plan,
                               const ScheduleOptions& options);

// The same schedule, with the step's basis (its units' work and sizes, before any op:
// core/schedule/step_basis.h) taken from `bases`, or made and kept there for the next schedule
// of this tree and plan with the same micro-batch shape.
class StepBasisCache;
Result<Schedule> BuildSchedule(const std::shared_ptr<const ModelTree>& tree,
                               const std::shared_ptr<const Plan>& plan,
                               const ScheduleOptions& options, StepBasisCache& bases);

}  // namespace shardscope
