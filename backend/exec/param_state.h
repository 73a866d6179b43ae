// The data layout of each FSDP unit on this rank, from the plan (planning.md §2): where every
// parameter's rows lie in the unit's flat local shard, in its slot of the all-gather buffer,
// in the unsharded gradients and in each block of the reduce-scatter input; and the values
// parameters and gradients start from. `run --check` builds its references from the same
// functions, so the executor and the checker agree by construction.
//
// Contents:
//   ParamLayout     one parameter: dtypes, rows, columns, byte offsets in each buffer
//   UnitLayout      one unit: its parameters, sizes (core/schedule/unit_sizes.h), shard index
//   ScheduledUnit / ScheduledUnits   the units a schedule's buffers belong to (per-chunk roots)
//   OpUnitLabel     the label of the unit an op belongs to (a chunk root's too)
//   MakeUnitLayout  UnitPlan + this rank's position in the unit's shard group → UnitLayout
//   ParamSeed / GradSeed   the seeds of DeterministicValue for a parameter / a rank's gradient
//                          at one micro-step (each micro-step's differ, so a sum over them
//                          that drops or repeats one is seen)
//   ParamValue / GradValue the reference value of element `index` of the local tensor
//
// Layout (FSDP2, _fsdp_param.py / _fsdp_collectives.py): a parameter's local tensor (after the
// source layout) has n0 rows of `cols` elements; each of the S shard ranks holds shard_rows =
// ceil(n0 / S) rows (the last ones zero padding). The unit's flat shard, each all-gather slot
// and each reduce-scatter block are the parameters' shard_rows · cols elements one after
// another in plan order, in the buffer's dtype (own / param_dtype / reduce_dtype). The
// unsharded gradients hold each parameter's S · shard_rows rows (its n0 real rows first) one
// after another in the compute dtype.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/dtype.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/schedule/unit_sizes.h"

namespace shardscope::backend {

struct ParamLayout {
  std::string fqn;
  DType own_dtype = DType::kFloat32;     // the shard, the sharded gradient
  DType gather_dtype = DType::kFloat32;  // all-gather buffer, unsharded params and gradients
  DType reduce_dtype = DType::kFloat32;  // reduce-scatter input / output
  int64_t rows = 0;                      // n0: rows of the local tensor
  int64_t cols = 1;                      // elements per row
  int64_t shard_rows = 0;
  bool requires_grad = true;
  // Byte offsets of this parameter's part.
  int64_t shard_offset = 0;   // in the flat shard (own dtype)
  int64_t gather_offset = 0;  // in one all-gather slot (gather dtype)
  int64_t grad_offset = 0;    // in the unsharded gradients (gather dtype, S · shard_rows rows)
  int64_t reduce_offset = 0;  // in one reduce-scatter block (reduce dtype); -1: no grad
  int64_t optim_offset = 0;   // elements into the unit's optimizer state / sharded gradients
  // Rows of the local tensor this rank's shard holds: [first_row, first_row + valid_rows).
  int64_t first_row = 0;
  int64_t valid_rows = 0;
  int64_t shard_numel() const { return shard_rows * cols; }
};

struct UnitLayout {
  std::string label;  // UnitOpLabel of the unit (buffers' `unit`)
  UnitSizes sizes;
  int shard_index = 0;  // this rank's position in the shard group
  std::vector<ParamLayout> params;
  // Replicate params: whole tensors, one after another (own dtype in the shard buffer,
  // gather dtype in their gradients).
  std::vector<ParamLayout> replicate;
  int64_t shard_slot_bytes = 0;    // one all-gather slot
  int64_t reduce_block_bytes = 0;  // one reduce-scatter block
};

// A unit as the schedule holds it: its op_id label (Buffer::unit) and its plan. With
// pipelining the plan's root is one root per model chunk ("root.chunk<c>", each managing the
// root parameters of its chunk), split as the schedule builder splits it
// (core/schedule/model_chunks.h); otherwise the plan's units unchanged.
struct ScheduledUnit {
  std::string label;
  UnitPlan plan;
};
std::vector<ScheduledUnit> ScheduledUnits(const Plan& plan);

// The label of the unit `op` belongs to, as its buffers carry it: the unit part of its op_id,
// which names a chunk root ("root.chunk<c>") where ScheduleOp::unit holds only the root's
// FQN; step-level ops get the root's label.
std::string OpUnitLabel(const Schedule& schedule, const ScheduleOp& op);

// `unit` labelled `label` (UnitOpLabel of its FQN when empty).
UnitLayout MakeUnitLayout(const UnitPlan& unit, int shard_index, const std::string& label = "");

uint64_t ParamSeed(const std::string& fqn);
uint64_t GradSeed(int rank, const std::string& fqn, int micro = 0);
// Element `index` (row-major over the local tensor) of a parameter / of `rank`'s gradient.
float ParamValue(const std::string& fqn, int64_t index);
float GradValue(int rank, const std::string& fqn, int64_t index, int micro = 0);

}  // namespace shardscope::backend
