// The plan: what `shardscope plan` computes and everything downstream consumes
// (planning.md §3, JSON in formats.md §1b).
//
// Contents:
//   MeshSpec           the dims a unit shards over, with their sizes
//   ParamPlan          one managed parameter: shapes, rows per rank, padding
//   MixedPrecisionPlan the effective dtypes after the §2.5 drop rules
//   UnitPlan           one fully_shard unit (or the root)
//   PlanWarning        a diagnostic of planning.md §4
//   PlanTotals         counts and bytes per rank
//   PlanMeshInfo       the mesh sizes the plan was made for
//   ChunkRootPlan      the FSDP root of one pipeline chunk (pp > 1)
//   Plan               units in wrapping order + execution order + diagnostics
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/dtype.h"

namespace shardscope {

struct MeshSpec {
  std::vector<std::string> dims;  // e.g. {"fsdp_replicate", "fsdp_shard"} or {"edp_shard"}
  std::vector<int> sizes;
  // Product of the sizes of the dims whose name ends in "shard" (the shard-group size S).
  int shard_size() const;
  // Product of the sizes of the dims whose name ends in "replicate" (1 when absent).
  int replicate_size() const;
  bool operator==(const MeshSpec&) const = default;
};

struct ParamPlan {
  std::string fqn;                   // canonical (first pre-order) FQN
  std::vector<std::string> aliases;  // every FQN, fqns[0] == fqn
  std::vector<int64_t> global_shape;
  std::vector<int64_t> local_shape;  // after the source layout (tp / ep)
  int64_t shard_rows = 0;            // ceil(local_shape[0] / S); whole rows when replicated
  int64_t padded_rows = 0;           // S * shard_rows - local_shape[0]
  int64_t sharded_numel = 0;         // elements each rank holds, padding included
  int64_t unsharded_numel = 0;       // elements of the local (post-layout) tensor
  DType dtype = DType::kFloat32;
  bool requires_grad = true;
  bool replicated = false;  // in replicate_params: kept whole, all-reduced
  bool expert = false;      // on an `ep` source mesh
};

struct MixedPrecisionPlan {
  std::optional<DType> param_dtype;   // null: parameters are used in their own dtype
  std::optional<DType> reduce_dtype;  // null: gradients reduced in param dtype
  std::optional<DType> output_dtype;
  bool cast_forward_inputs = true;
};

enum class ReduceOp { kAvg, kSum };

struct UnitPlan {
  std::string fqn;  // "" for the root
  bool is_root = false;
  int module = 0;                      // index into ModelTree::modules
  int depth = 0;                       // dots in fqn + 1; root 0
  int wrap_index = 0;                  // position in wrapping order (deepest first)
  std::optional<int> execution_index;  // null for the root
  bool expert = false;                 // shards over the expert mesh
  MeshSpec mesh;
  std::vector<ParamPlan> params;            // managed, sharded
  std::vector<ParamPlan> replicate_params;  // managed, kept whole
  std::vector<std::string> ignored_params;  // canonical FQNs
  ReduceOp reduce_op = ReduceOp::kAvg;
  std::optional<double> gradient_scaling_factor;  // 1/D when source metadata is present
  bool reshard_after_forward = true;
  // FSDP2's int form, as resolved for this unit: > 1 keeps a 1/d slice of the parameters after
  // forward and all-gathers it over d ranks (a divisor of the shard size) in backward; 0 when
  // the unit reshards to its full shard group or not at all.
  int reshard_after_forward_ranks = 0;
  MixedPrecisionPlan mixed_precision;
  bool offload = false;
  bool comm_fusion = false;
  bool comm_fusion_zero_copy = false;
  std::vector<std::string> forward_prefetch;   // unit FQNs, nearest first
  std::vector<std::string> backward_prefetch;  // unit FQNs, nearest first

  // Sums over `params` (+ replicate_params for the unsharded figures).
  int64_t sharded_numel() const;
  int64_t unsharded_numel() const;
  int64_t sharded_bytes() const;    // in each parameter's own dtype
  int64_t unsharded_bytes() const;  // in each parameter's own dtype
};

struct PlanWarning {
  std::string code;     // stable, e.g. "tied_across_units", "empty_unit", "tp_all_replicated"
  std::string message;  // names the FQN(s) concerned
};

struct PlanTotals {
  int64_t params = 0;                  // distinct parameters (tied counted once), elements
  int64_t managed_params = 0;          // elements managed by some unit (not ignored)
  int64_t sharded_bytes_per_rank = 0;  // local shards incl. padding, own dtype (sum of
                                       // UnitPlan::sharded_bytes: replicate params excluded)
  int64_t unsharded_bytes_per_rank = 0;
  int scaled_units = 0;                   // units with a gradient scaling factor
  int64_t replicated_bytes_per_rank = 0;  // replicate_params, whole local tensors
  int64_t ignored_bytes_per_rank = 0;     // ignored params, whole local tensors
  // What a rank holds between steps: sharded + replicated + ignored.
  int64_t persistent_bytes_per_rank() const {
    return sharded_bytes_per_rank + replicated_bytes_per_rank + ignored_bytes_per_rank;
  }
};

// The mesh sizes the plan was made for (planning.md §1.2), so consumers need no scenario.
struct PlanMeshInfo {
  int world_size = 1;
  int tp = 1;
  int cp = 1;
  int pp = 1;
  int ep = 1;
  int dp = 1;
  int dp_replicate = 1;
  int dp_shard = 1;  // FSDP shard size (CP folded in)
  int edp = 0;       // 0 when there is no expert mesh (ep == 1)
  int edp_replicate = 0;
  int edp_shard = 0;
  bool loss_parallel = false;
};

// Under pipeline parallelism torchtitan applies fully_shard to every stage's model chunk, so
// each of the pp · pp_virtual_stages chunks has its own root (planning.md §2, pipeline
// extension). Chunk roots take the root's policies (mesh, reduction, mixed precision, ...) and
// manage the root parameters of the modules they run.
struct ChunkRootPlan {
  int chunk = 0;                     // 0 .. pp·v − 1, in model order
  int stage = 0;                     // the stage that runs it: chunk % pp
  std::string label;                 // op_id unit label: "root.chunk<c>" (core/trace/op_id.h)
  std::vector<std::string> units;    // top-level units (FQNs) it runs, in execution order
  std::vector<std::string> modules;  // root-owned modules (FQNs) whose compute it runs
  std::vector<std::string> params;   // root-managed parameters it manages (canonical FQNs)
  std::vector<std::string> replicate_params;  // root replicate params it manages
};

struct Plan {
  std::vector<UnitPlan> units;       // wrapping order; the root is last
  std::vector<int> execution_order;  // indices into `units`, first-forward order, no root
  std::vector<PlanWarning> warnings;
  PlanTotals totals;
  bool source_metadata_present = false;
  PlanMeshInfo mesh;
  std::string adapter;             // adapter used ("" when none)
  int forward_prefetch_depth = 1;  // configured depths (the lists are in the units)
  int backward_prefetch_depth = 1;
  // pp > 1: one per pipeline chunk, in chunk order; empty without pipelining.
  std::vector<ChunkRootPlan> pipeline_chunks;

  const UnitPlan& root() const { return units.back(); }
  // Index into `units` of the unit with this FQN, or -1.
  int FindUnit(const std::string& fqn) const;
};

}  // namespace shardscope
