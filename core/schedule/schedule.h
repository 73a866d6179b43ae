// One training step as data: the operations every simulated (or executed) rank runs, on which
// lane, after what, moving how many bytes, computing what, allocating and freeing which memory
// (runtime.md). The simulator times it with a cost model; the backend executes it on GPUs.
// It holds nothing only a simulator understands: no durations, no cost-model figures.
//
// Contents:
//   Lane, OpType, MemCategory     the enums of runtime.md / formats.md §3
//   ProcessGroup                  ranks of one communicator (decides intra/inter-node links)
//   ComputeItem                   one module's work inside a compute op (kind + OpCost)
//   MemoryEffect                  an allocation or free tied to an op's start or end
//   ScheduleOp                    one operation of one role
//   Schedule                      all ops of all simulated roles, plus groups and metadata
// The builder (plan + tree + options → Schedule) is in core/schedule/schedule_builder.h, the
// consistency checks and per-step totals in core/schedule/schedule_check.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/descriptor.h"
#include "core/model/op_cost.h"
#include "core/trace/op_id.h"  // op_ids and their unit labels (UnitOpLabel)

namespace shardscope {

// Trace tids of formats.md §3; kP2P (pipeline sends/receives) is an addition.
enum class Lane : int {
  kCompute = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kAllReduce = 4,
  kH2D = 5,
  kD2H = 6,
  kP2P = 7,
};
constexpr int kNumLanes = 7;
std::string_view LaneName(Lane lane);  // "compute", "all_gather", ...

enum class OpType {
  kCompute,        // forward / backward / recompute of a unit, loss
  kOptimizer,      // optimizer step (memory bound)
  kCopyIn,         // all-gather copy-in / cast of the local shard (on the all-gather lane)
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,       // EP token dispatch / combine, CP exchange
  kSend,           // PP activation / gradient send (carries the transfer's bytes)
  kRecv,           // its receiving side: a zero-byte join point that depends on the send
  kCopyH2D,        // offload
  kCopyD2H,
  kWait,           // zero-work join point (e.g. end-of-backward wait for all reductions)
};
std::string_view OpTypeName(OpType type);
bool IsCollective(OpType type);

// runtime.md memory categories, in the order traces and summaries list them.
enum class MemCategory : int {
  kShardedParams,
  kOptimizer,
  kShardedGrads,
  kUnshardedParams,
  kUnshardedGrads,
  kCommBuffers,
  kActivations,
  kTemporaries,
};
constexpr int kNumMemCategories = 8;
std::string_view MemCategoryName(MemCategory c);  // "sharded_params", ... (trace key adds _bytes)

struct ProcessGroup {
  std::string name;        // e.g. "fsdp_shard", "edp_shard", "tp", "pp:0->1"
  std::vector<int> ranks;  // global ranks, ascending, including the simulated rank
  int size() const { return static_cast<int>(ranks.size()); }
};

// One module's work inside a compute op; the cost model prices each item on its own (a large
// GEMM and a norm have different efficiencies).
struct ComputeItem {
  OpKind kind = OpKind::kLinear;
  OpCost cost;           // per-rank figures of this module for one micro-batch
  bool backward = false; // price bwd_flops/bwd_bytes instead of the forward figures
  bool recompute = false;// forward work repeated in backward (activation checkpointing)
  // Work that is not a model module (optimizer step, casts): kind is kNorm so any cost model
  // prices it at memory bandwidth from fwd_bytes; `module` then names the work ("optimizer").
  bool elementwise = false;
  // An FSDP2 copy on the compute stream (elementwise too): the all-gather copy-out into the
  // per-parameter tensors, the reduce-scatter copy-in (chunk_cat of the gradients, cast to
  // the reduce dtype).
  bool fsdp_copy = false;
  int module = -1;       // index into Schedule::modules: the module's FQN or the work's name
};

struct MemoryEffect {
  enum class When { kStart, kEnd };
  When when = When::kStart;
  MemCategory category = MemCategory::kTemporaries;
  int64_t bytes = 0;     // > 0 allocates, < 0 frees
  int buffer = -1;       // identity of the buffer, so a free matches its allocation
};

struct ScheduleOp {
  int role = 0;                 // index into Schedule::roles
  Lane lane = Lane::kCompute;
  OpType type = OpType::kCompute;
  std::string op_id;            // stable key shared with measured traces, e.g.
                                // "fwd/model.layers.3/all_gather", "step/optimizer"
  std::string name;             // display name; collectives begin with "nccl"
  std::string unit;             // unit FQN ("" for the root or step-level ops)
  int micro_step = 0;           // gradient-accumulation / pipeline micro-batch index
  std::vector<int> deps;        // indices into Schedule::ops that must finish first
  int group = -1;               // index into Schedule::groups (collectives, p2p)
  int64_t bytes = 0;            // collective: nccl-tests size (gathered size for all-gather /
                                // reduce-scatter input size); copies: bytes moved
  std::vector<ComputeItem> items;  // compute / optimizer work
  std::vector<MemoryEffect> memory;
  bool on_host = false;         // runs on the CPU (offloaded optimizer step), not on a GPU lane
};

// One simulated rank standing for all ranks that behave alike (runtime.md "role").
struct Role {
  std::string name;     // e.g. "dense", "pp stage 3"
  int rank = 0;         // the global rank simulated
  int ranks_like = 1;   // how many ranks share this role
};

struct Schedule {
  std::vector<Role> roles;
  std::vector<ProcessGroup> groups;
  std::vector<ScheduleOp> ops;   // per role and lane, in issue order
  // Memory live before the step starts (sharded params, optimizer state, ...), per role.
  std::vector<std::array<int64_t, kNumMemCategories>> initial_memory;
  // Same, in pinned host memory (offload: sharded params, grads and optimizer state), per role.
  std::vector<std::array<int64_t, kNumMemCategories>> initial_host_memory;
  int64_t tokens_per_step = 0;   // global tokens per optimizer step
  int world_size = 1;
  std::vector<std::string> modules;  // names ComputeItem::module points to (interned once)
  std::vector<std::string> notes;  // what was modelled and how (shown by `simulate`)
};

}  // namespace shardscope
