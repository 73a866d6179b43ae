// What a step's ops are made from, before its first op: the units (the plan's, with one root per
// pipeline model chunk), what each computes and communicates inside its forward (unit_work.h),
// their op_id labels, byte sizes and chunks, and the module names their work points to. It
// depends on the model tree, the plan and the shape of one micro-batch (StepBasisKey), not on
// the micro-batch count, activation checkpointing or the GPU, so the variants of a sweep that
// differ only in those share one (StepBasisCache) instead of walking the model's modules again
// for each: BuildUnitWork, SplitIntoChunks and the unit sizes were 9-11% of the 70B grid's time
// (perf, 2026-12-07, docs/sweep.md).
//
// Contents:
//   StepBasisKey    what a basis depends on besides the tree and the plan
//   WorkSegment     a unit's work cut where the emitters cut it into ops
//   GradGroup       a unit's parameters by the backward chunk that produces their gradients
//   StepBasis       the units, work, labels, sizes and chunks of one step, and module names
//   MakeStepBasis   builds one
//   StepBasisCache  bases by tree, plan and key, for several threads at once
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/model/op_cost.h"
#include "core/model/tree.h"
#include "core/plan/plan.h"
#include "core/schedule/model_chunks.h"
#include "core/schedule/schedule_builder.h"
#include "core/schedule/unit_sizes.h"
#include "core/schedule/unit_work.h"
#include "core/util/status.h"

namespace shardscope {

// Everything MakeStepBasis reads besides the tree and the plan: the micro-batch's shape
// (OpContext, loss parallelism included), the options the unit work reads, the number of model
// chunks and the process groups the work's collectives name (group indices into the schedule
// being built). The basis is made from the key alone, so nothing it reads can be left out.
struct StepBasisKey {
  OpContext ctx;
  bool sequence_parallel = true;  // ScheduleOptions::sequence_parallel (as given, not ctx's)
  OpEstimator estimator = nullptr;
  int chunks = 1;  // pp · pp_virtual_stages
  WorkGroups groups;

  // Field by field; the estimator by its address as an integer (`<` on unrelated function
  // pointers is unspecified).
  auto Tie() const {
    return std::make_tuple(ctx.batch, ctx.seq, ctx.tp, ctx.cp, ctx.ep, ctx.sequence_parallel,
                           ctx.loss_parallel, ctx.compute_dtype, ctx.implementation,
                           sequence_parallel, reinterpret_cast<std::uintptr_t>(estimator), chunks,
                           groups.tp, groups.cp, groups.ep);
  }
  bool operator<(const StepBasisKey& o) const { return Tie() < o.Tie(); }
  bool operator==(const StepBasisKey& o) const { return Tie() == o.Tie(); }
};
// A field added to either struct changes what a basis depends on: it belongs in Tie() (a
// cached basis would otherwise serve a context it was not made for), then here.
static_assert(sizeof(OpContext) == 40, "OpContext changed: key the new field in Tie()");
static_assert(sizeof(WorkGroups) == 12, "WorkGroups changed: key the new field in Tie()");

// A unit's work cut where the emitters cut it: a run of module items (a chunk, one compute op
// each way; the loss is a chunk of its own), a collective point, or a nested unit.
struct WorkSegment {
  enum class Kind { kChunk, kComm, kUnit };
  Kind kind = Kind::kChunk;
  std::vector<int> entries;  // kChunk: item entries; kComm: the one comm entry
  int unit = -1;             // kUnit: the nested unit
  int chunk = -1;            // kChunk: index among the unit's chunks
};

// Per chunk of a unit, its parameters (indices into UnitPlan::params) whose modules the chunk
// runs and the bytes of their unsharded gradients; the last group: those no item owns. A tied
// parameter belongs to the chunk that reaches it first in backward.
struct GradGroup {
  std::vector<int> params;
  int64_t bytes = 0;
};

struct StepBasis {
  // Plan units (the root replaced by one root per chunk), their work and op_id labels, with
  // each chunk's root, members and input activation (model_chunks.h).
  ModelChunks chunks;
  std::vector<UnitSizes> sizes;  // per unit
  std::vector<int> chunk_of;     // per unit: the model chunk it belongs to
  // Per unit: its work's segments, how many of them are chunks, and its gradient groups (one
  // per chunk, then the unowned parameters').
  std::vector<std::vector<WorkSegment>> segments;
  std::vector<int> chunk_counts;
  std::vector<std::vector<GradGroup>> grad_groups;
  // Schedule::modules as the unit work names them (ComputeItem::module indexes it); a schedule
  // starts from a copy and appends its own (FSDP copies).
  std::vector<std::string> modules;
  int64_t modules_with_op = 0;  // module visits with an op (schedule_size.h's estimate)
};

// The unit work of `tree` under `plan` for `key` (BuildUnitWork), split into key.chunks model
// chunks (SplitIntoChunks), with the units' sizes, segments and gradient groups.
Result<StepBasis> MakeStepBasis(const ModelTree& tree, const Plan& plan, const StepBasisKey& key);

class StepBasisCache {
 public:
  // At most this many bases are kept; past it, bases are made for each request and not kept.
  static constexpr size_t kMaxBases = 256;

  // MakeStepBasis(*tree, *plan, key), made at the first request for this tree, plan
  // and key. The cache holds the tree and the plan while it keeps their basis, so their
  // addresses, part of the key, cannot name another tree or plan later. An error is not kept.
  Result<std::shared_ptr<const StepBasis>> Get(const std::shared_ptr<const ModelTree>& tree,
                                               const std::shared_ptr<const Plan>& plan,
                                               const StepBasisKey& key);
  size_t size();

 private:
  struct Entry {
    std::shared_ptr<const ModelTree> tree;
    std::shared_ptr<const Plan> plan;
    std::shared_ptr<const StepBasis> basis;
  };
  std::mutex mu_;
  std::map<std::tuple<const ModelTree*, const Plan*, StepBasisKey>, Entry> bases_;
};

}  // namespace shardscope
