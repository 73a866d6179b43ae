#include "backend/exec/param_state.h"

#include <fmt/format.h>

#include <algorithm>

#include "backend/device/deterministic.h"
#include "core/schedule/model_chunks.h"
#include "core/trace/op_id.h"

namespace shardscope::backend {

std::vector<ScheduledUnit> ScheduledUnits(const Plan& plan) {
  std::vector<ScheduledUnit> out;
  const int chunks = std::max<int>(1, static_cast<int>(plan.pipeline_chunks.size()));
  // Only the split of units and root parameters is wanted here: no work to split with it.
  Result<ModelChunks> split =
      plan.units.empty()
          ? Result<ModelChunks>(InvalidInput("plan: no units"))
          : SplitIntoChunks(plan, std::vector<UnitWork>(plan.units.size()), {}, chunks);
  if (!split.ok()) {
    // A plan the schedule builder could not have split either: its units as they are.
    for (const UnitPlan& u : plan.units) out.push_back({UnitOpLabel(u.fqn), u});
    return out;
  }
  ModelChunks& m = split.value();
  for (size_t i = 0; i < m.units.size(); ++i) {
    out.push_back({m.labels[i], std::move(m.units[i])});
  }
  return out;
}

std::string OpUnitLabel(const Schedule& schedule, const ScheduleOp& op) {
  if (const std::string& unit = UnitOf(schedule, op); !unit.empty()) return UnitOpLabel(unit);
  Result<OpId> id = ParseOpId(OpIdOf(schedule, op));
  return id.ok() && !id.value().unit.empty() ? id.value().unit : UnitOpLabel("");
}

UnitLayout MakeUnitLayout(const UnitPlan& unit, int shard_index, const std::string& label) {
  UnitLayout u;
  u.label = label.empty() ? UnitOpLabel(unit.fqn) : label;
  u.sizes = ComputeUnitSizes(unit);
  u.shard_index = shard_index;
  const int S = std::max(1, u.sizes.shard_group);
  const MixedPrecisionPlan& mp = unit.mixed_precision;
  int64_t shard = 0, gather = 0, grad = 0, reduce = 0, optim = 0;
  auto make = [&](const ParamPlan& p) {
    ParamLayout l;
    l.fqn = p.fqn;
    l.own_dtype = p.dtype;
    l.gather_dtype = mp.param_dtype.value_or(p.dtype);
    l.reduce_dtype = mp.reduce_dtype.value_or(l.gather_dtype);
    l.rows = p.local_shape.empty() ? 1 : p.local_shape[0];
    l.cols = 1;
    for (size_t d = 1; d < p.local_shape.size(); ++d) l.cols *= p.local_shape[d];
    l.requires_grad = p.requires_grad;
    return l;
  };
  for (const ParamPlan& p : unit.params) {
    ParamLayout l = make(p);
    l.shard_rows = p.shard_rows;
    l.first_row = std::min(l.rows, static_cast<int64_t>(shard_index) * l.shard_rows);
    l.valid_rows = std::clamp<int64_t>(l.rows - l.first_row, 0, l.shard_rows);
    l.shard_offset = shard;
    l.gather_offset = gather;
    shard += l.shard_numel() * DTypeBytes(l.own_dtype);
    gather += l.shard_numel() * DTypeBytes(l.gather_dtype);
    if (l.requires_grad) {
      l.grad_offset = grad;
      l.reduce_offset = reduce;
      l.optim_offset = optim;
      grad += S * l.shard_numel() * DTypeBytes(l.gather_dtype);
      reduce += l.shard_numel() * DTypeBytes(l.reduce_dtype);
      optim += l.shard_numel();
    } else {
      l.grad_offset = l.reduce_offset = l.optim_offset = -1;
    }
    u.params.push_back(std::move(l));
  }
  u.shard_slot_bytes = gather;
  u.reduce_block_bytes = reduce;
  int64_t rep = 0, rep_grad = 0;
  for (const ParamPlan& p : unit.replicate_params) {
    ParamLayout l = make(p);
    l.shard_rows = l.rows;
    l.valid_rows = l.rows;
    l.shard_offset = rep;
    rep += l.rows * l.cols * DTypeBytes(l.own_dtype);
    if (l.requires_grad) {
      l.grad_offset = rep_grad;
      l.optim_offset = optim;
      rep_grad += l.rows * l.cols * DTypeBytes(l.gather_dtype);
      optim += l.rows * l.cols;
    } else {
      l.grad_offset = l.optim_offset = -1;
    }
    l.reduce_offset = -1;
    u.replicate.push_back(std::move(l));
  }
  return u;
}

uint64_t ParamSeed(const std::string& fqn) { return SeedOf(fqn); }
uint64_t GradSeed(int rank, const std::string& fqn, int micro) {
  return SeedOf(micro == 0 ? fmt::format("grad:{}:{}", rank, fqn)
                           : fmt::format("grad:{}:{}:mb{}", rank, fqn, micro));
}
float ParamValue(const std::string& fqn, int64_t index) {
  return DeterministicValue(ParamSeed(fqn), index);
}
float GradValue(int rank, const std::string& fqn, int64_t index, int micro) {
  return DeterministicValue(GradSeed(rank, fqn, micro), index);
}

}  // namespace shardscope::backend
