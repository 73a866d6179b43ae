// One training step as data: the operations every simulated (or executed) rank runs, on which
// lane, after what, moving how many bytes, computing what, allocating and freeing which memory
// (runtime.md). The simulator times it with a cost model; the backend executes it on GPUs.
// It holds nothing only a simulator understands: no durations, no cost-model figures.
//
// Contents:
//   Lane, OpType, MemCategory     the enums of runtime.md / formats.md §3
//   ProcessGroup                  ranks of one communicator + the mesh dims it spans
//   ComputeItem(s)                one piece of work inside a compute op (a Work description),
//                                 and an op's list of them (core/schedule/compute_items.h)
//   MemoryEffect                  an allocation or free tied to an op's start or end
//   Buffer                        one entry of the buffer table (what a MemoryEffect names)
//   CollectiveSpec                what a collective / p2p op runs: dtype, count, reduce op,
//                                 scaling, input and output buffers
//   OpRange                       an op's dependencies or memory effects: a range of one of
//                                 the schedule's shared lists (DepsOf, EffectsOf)
//   ScheduleOp                    one operation of one role
//   Schedule                      all ops of all simulated roles, plus groups and metadata
//   The execution contract        the rules a simulator and a backend both obey, and the
//                                 functions that state them (LaneKey, CommunicatorKey, ...)
// The builder (plan + tree + options → Schedule) is in core/schedule/schedule_builder.h, the
// consistency checks and per-step totals in core/schedule/schedule_check.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/model/descriptor.h"
#include "core/model/dtype.h"
#include "core/model/op_cost.h"
#include "core/model/op_work.h"
#include "core/schedule/compute_items.h"
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
  kCompute,    // forward / backward / recompute of a unit, loss
  kOptimizer,  // optimizer step (memory bound)
  kCopyIn,     // all-gather copy-in / cast of the local shard (on the all-gather lane)
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,  // EP token dispatch / combine, CP exchange
  kSend,      // PP activation / gradient send (carries the transfer's bytes)
  kRecv,      // its receiving side: a zero-byte join point that depends on the send
  kCopyH2D,   // offload
  kCopyD2H,
  kWait,  // zero-work join point (e.g. end-of-backward wait for all reductions)
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
  // Mesh dims the group spans (planning.md §1.2 names): {"fsdp_shard"}, {"fsdp_replicate"},
  // {"fsdp_replicate", "fsdp_shard"} (replicate params), {"edp_shard"}, {"tp"}, {"cp"},
  // {"ep"}, {"pp"} (a pipeline send / receive pair).
  std::vector<std::string> dims;
  int size() const { return static_cast<int>(ranks.size()); }
};

struct MemoryEffect {
  enum class When { kStart, kEnd };
  When when = When::kStart;
  MemCategory category = MemCategory::kTemporaries;
  int64_t bytes = 0;  // > 0 allocates, < 0 frees
  int buffer = -1;    // identity of the buffer, so a free matches its allocation
};

// One buffer of the step. Schedule::buffers[id] describes the buffer every MemoryEffect with
// `buffer == id` allocates or frees. Persistent state (sharded parameters, optimizer moments,
// ignored parameters) has entries too, with alloc_op = free_op = -1: it lives before and
// after the step, has no MemoryEffect, and its bytes are what Schedule::initial_memory
// (device) or initial_host_memory (host) sum per category and role.
struct Buffer {
  int id = -1;  // its index in Schedule::buffers
  int role = 0;
  MemCategory category = MemCategory::kTemporaries;
  // Element type and count; bytes == numel · DTypeBytes(dtype). kUInt8 stands for raw bytes:
  // kernel workspaces, and FSDP2 flat buffers over parameters of different dtypes (FSDP2
  // all-gathers those as uint8 too).
  DType dtype = DType::kUInt8;
  int64_t numel = 0;
  int64_t bytes = 0;
  std::string unit;   // owning unit's op_id label (UnitOpLabel: "root", "root.chunk1", an FQN)
  bool host = false;  // pinned host memory (offloaded units)
  int alloc_op = -1;  // op whose `alloc_when` allocates it; -1: live before the step
  MemoryEffect::When alloc_when = MemoryEffect::When::kStart;
  int free_op = -1;  // op whose `free_when` frees it; -1: live past the step
  MemoryEffect::When free_when = MemoryEffect::When::kEnd;
  // kUnshardedGrads: the FQNs (plan order) of the parameters whose unsharded gradients it
  // holds, one after another, each as UnshardedGradBytes sizes it (unit_sizes.h); a unit's
  // gradients may come in several buffers, one per backward chunk that produces them. The
  // replicate gradients list the unit's replicate params (whole tensors). Empty: the
  // accumulator of micro-steps without sync (reduce dtype, the whole unit).
  std::vector<std::string> grads_of;
};

// NCCL reduction of a collective; kNone for data movement (all-gather, all-to-all, p2p).
// kAvg is ncclAvg: the sum divided by the group size, inside the collective.
enum class CollectiveReduce : int { kNone, kSum, kAvg };
std::string_view CollectiveReduceName(CollectiveReduce op);  // "none", "sum", "avg"

// What a collective or p2p op runs, enough to issue the NCCL call.
//
// `count` is the element count of the NCCL call, per rank (NCCL's API; nccl-tests print the
// whole buffer instead): all-gather sendcount (each rank's shard; the output holds n·count),
// reduce-scatter recvcount (each rank's output shard; the input holds n·count), all-reduce
// count (input = output), all-to-all the elements this rank sends in all (n·count/n per peer
// on average: EP token splits follow the routing), send / recv the elements transferred.
// ScheduleOp::bytes keeps the nccl-tests size: n·count·size for all-gather, reduce-scatter
// and all-to-all, count·size for all-reduce and send (0 for the receive, the join point).
//
// Scaling (multipliers; 1 = none): the input is multiplied by `pre_scale` before the
// reduction (a backend may fold it into ncclRedOpCreatePreMulSum) and the output by
// `post_scale` after it. FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py,
// _get_gradient_divide_factors, and foreach_reduce) does, per unit with data-parallel size
// N = shard group · replicate group and reduce dtype d:
//   - plan reduce op sum with gradient_scaling_factor f (planning.md §2.6, f = 1/D):
//     reduce-scatter sum with pre_scale f (NCCL premul-sum 1/factor), all-reduce sum;
//   - plan reduce op sum without a factor: sum, no scaling;
//   - plan reduce op avg, d fp32 or bf16: ncclAvg on the reduce-scatter and on the HSDP
//     all-reduce (sum / S, then / R: the mean over N); sum when N == 1 (FSDP2 avoids ncclAvg
//     on one rank);
//   - plan reduce op avg, other d (fp16: overflow risk): sum, with pre_scale 1/p on the
//     reduce-scatter and post_scale p/N on the last reduction, p the power of two near √N
//     FSDP2 picks (its pre/post "divide factors").
// TP / CP reductions are sums (DTensor partial sums); all-gathers, all-to-alls and p2p none.
//
// Buffers (ids into Schedule::buffers; -1 where the data is an activation the table does not
// track one by one: TP / CP / EP / pipeline traffic): the FSDP all-gather runs in place, as
// FSDP2's does (the copy-in writes the shard at offset rank·count of the output), so its
// input and output are the gathered buffer; the reduce-scatter reads its padded input and
// writes the reduced shard; HSDP's all-reduce runs in place on that shard; the replicate
// params' all-reduce in place on their gradient (cast to the reduce dtype first when that
// differs: the cast copy has no buffer of its own). A referenced buffer is allocated by an op
// at or before the collective and freed by one at or after it.
struct CollectiveSpec {
  DType dtype = DType::kUInt8;
  int64_t count = 0;
  CollectiveReduce reduce = CollectiveReduce::kNone;
  double pre_scale = 1.0;
  double post_scale = 1.0;
  int input_buffer = -1;
  int output_buffer = -1;
};

// Where an op's op_id comes from. A builder-made op (ScheduleOp::id_phase set) keeps the
// parts FormatOpId joins, its unit label and `what` as indices into Schedule::words, and
// OpIdOf forms the text where it is read (and an op's name and unit are words too): a text per op,
// formed and freed with every schedule, cost TP 8 x PP 8 x 17 micro-batches' build 7.0-7.5 ms
// against 6.2-6.8 without (bench/explore_benchmark, BM_StagesOfTheLongerRun, three interleaved
// pairs). An op made elsewhere (tests, SetOpId) has no phase and its whole op_id at words[what].
struct OpIdKey {
  int32_t unit = -1;   // words index of the unit label; -1: a step-level op (no unit part)
  int32_t what = -1;   // words index of the `what`, or of the whole op_id (see above)
  int32_t index = 0;   // the ":k" suffix; 0: none
  int32_t micro = -1;  // the "mb<k>/" prefix; -1: none
};

// [first, first + count) of Schedule::dep_list or Schedule::effect_list. An op's lists are
// ranges of lists the whole schedule shares, not vectors of its own: a step of tens of
// thousands of ops allocated, freed and scattered two heap blocks per op (the builder's
// largest cost after its own work on a 70B sweep, with the schedule's destruction).
// Explicit: `op.deps = {1}` reads as a list of one dependency and must not compile.
struct OpRange {
  OpRange() = default;
  explicit OpRange(int32_t first_, int32_t count_) : first(first_), count(count_) {}
  int32_t first = 0;
  int32_t count = 0;
};

struct ScheduleOp {
  int role = 0;  // index into Schedule::roles
  Lane lane = Lane::kCompute;
  OpType type = OpType::kCompute;
  // The op_id, the stable key shared with measured traces ("fwd/model.layers.3/all_gather",
  // "step/optimizer"): read it with OpIdOf.
  OpIdKey id;
  int32_t name = -1;   // Schedule::words index of the display name (NameOf): a collective's
                       // begins with "nccl"
  int32_t unit = -1;   // Schedule::words index of the unit FQN (UnitOf); -1: none ("", the root
                       // or a step-level op)
  int micro_step = 0;  // gradient-accumulation / pipeline micro-batch index
  OpRange deps;        // DepsOf: indices into Schedule::ops that must finish first
  int group = -1;      // index into Schedule::groups (collectives, p2p)
  int64_t bytes = 0;   // collective: nccl-tests size (gathered size for all-gather /
                       // reduce-scatter input size); copies: bytes moved
  CollectiveSpec collective;  // collectives and p2p (IsCollective(type)); unset otherwise
  ComputeItems items;         // compute / optimizer work (shared by ops running the same)
  OpRange memory;             // EffectsOf: its allocations and frees
  bool on_host = false;       // runs on the CPU (offloaded optimizer step), not on a GPU lane
  // op_id's phase part, where a builder formed `id` from parts (OpIdKey); StepPhaseOf reads
  // it without forming the text. Unset for ops made elsewhere (SetOpId): StepPhaseOf parses.
  // Two bytes beside on_host, in the record's padding (see the size check below).
  std::optional<OpPhase> id_phase;
};
// A step holds tens of thousands of ops, and every stage of a prediction walks them: with this
// record at 264 bytes instead of 256 (an 8-byte field between op_id and name), the builder of
// TP 8 x PP 8 x 17 micro-batches took 11.7-12.1 ms against 7.4-7.6 (bench/explore_benchmark,
// BM_StagesOfTheLongerRun, two interleaved pairs). A new field goes into padding or pays for
// itself in a measurement. At 176 bytes (name and unit as words) the same build ran alike
// unaligned and padded to 192 on 64-byte boundaries (three interleaved rounds, 5.5-6.1 ms), and
// so did the fields every stage reads moved to the front (168 bytes, or 192 aligned: two
// interleaved rounds, 2026-12-05). 144 bytes since dependencies and effects are ranges.
static_assert(sizeof(ScheduleOp) <= 144, "ScheduleOp grew: measure the builder before it does");

// One simulated rank standing for all ranks that behave alike (runtime.md "role"), or, in a
// schedule built for one given rank (ScheduleOptions::rank), that rank alone.
struct Role {
  std::string name;    // e.g. "dense", "pp stage 3", "rank 5"
  int rank = 0;        // the global rank simulated
  int ranks_like = 1;  // how many ranks share this role
};

struct Schedule {
  std::vector<Role> roles;
  std::vector<ProcessGroup> groups;
  std::vector<ScheduleOp> ops;            // per role and lane, in issue order
  std::vector<Buffer> buffers;            // the buffer table, by buffer id
  std::vector<int> dep_list;              // ScheduleOp::deps ranges
  std::vector<MemoryEffect> effect_list;  // ScheduleOp::memory ranges
  // Memory live before the step starts (sharded params, optimizer state, ...), per role.
  std::vector<std::array<int64_t, kNumMemCategories>> initial_memory;
  // Same, in pinned host memory (offload: sharded params, grads and optimizer state), per role.
  std::vector<std::array<int64_t, kNumMemCategories>> initial_host_memory;
  int64_t tokens_per_step = 0;  // global tokens per optimizer step
  int world_size = 1;
  std::vector<std::string> modules;  // names ComputeItem::module points to (interned once)
  // The strings ops point to (each once): op_id parts (OpIdKey), names, unit FQNs.
  std::vector<std::string> words;
  std::vector<std::string> notes;  // what was modelled and how (shown by `simulate`)
};

// ----- The execution contract -----
// The rules a simulator (sim/engine) and a backend executing the schedule both obey. The
// engine takes them from the functions below; a backend issues in the same order.
//  1. Lanes. Each (role, lane) is one in-order stream: its ops start in the order they appear
//     in Schedule::ops (issue order), one at a time (LaneKey). The compute lane is the
//     compute stream; collectives on it (TP / CP / EP) block it.
//  2. Start. An op starts when its lane is free (the previous op of the lane ended) and every
//     op in `deps` ended. Nothing else orders ops: a dep on another role's op (a receive on
//     its send) is a cross-rank event.
//  3. Communicators. A role's collectives on one group share one NCCL communicator
//     (CommunicatorKey), which runs one collective at a time in issue order whatever lane
//     issued it (NCCL chains them on its internal stream): SerializesOnCommunicator.
//     Point-to-point sends and receives keep only their issue order on the group (they go
//     out as batched groups), they do not hold the communicator.
//  4. Host run-ahead. The CPU issues FSDP2's hooks far ahead of the GPU (H200 traces in
//     bench/device/results, one rank: at layer k's pre-forward about k · 5 ms of GPU work
//     was still queued, 80 ms by layer 15, 110-210 ms in backward; FSDP2's all-gather path
//     has no host sync), so what orders a hook's op on the GPU is FSDP2's stream waits: an
//     all-gather (copy-in and collective) waits only for the copy-out its streams were
//     last ordered after (wait_all_gather_streams_on_event, release_all_gather_state_for_
//     comm_reuse), the root's pre-forward (wait_stream on the compute stream) and an int
//     reshard's event; a reduce-scatter waits for the compute-lane op before its hook
//     (reduce_scatter_stream.wait_stream). Memory is counted in program order, as the
//     caching allocator counts it: a hook's allocation is an effect of the compute-lane op
//     before the hook, even when the op using the buffer runs earlier on the GPU.
//  5. Collectives are IsCollective(type): all-gather, reduce-scatter, all-reduce, all-to-all,
//     send, receive. Each carries a CollectiveSpec; every rank of a group issues the group's
//     collectives in the same order with the same dtype and count.
//  6. Memory. A MemoryEffect applies when its op starts (kStart) or ends (kEnd); buffers are
//     the table's ids, each allocated once and freed at most once.

// op's op_id (OpIdKey): formed from its parts, or the text an op made elsewhere was given.
std::string OpIdOf(const Schedule& schedule, const ScheduleOp& op);
// The phase part of op's op_id: the builder's (id_phase), or parsed from the text; nullopt
// where the text is no schedule op_id.
std::optional<OpPhase> OpIdPhaseOf(const Schedule& schedule, const ScheduleOp& op);
// Gives `op`, an op made outside a builder, the op_id `text` (kept in schedule.words).
void SetOpId(Schedule& schedule, ScheduleOp& op, std::string_view text);
// op's display name and unit FQN ("" where it has none).
const std::string& NameOf(const Schedule& schedule, const ScheduleOp& op);
const std::string& UnitOf(const Schedule& schedule, const ScheduleOp& op);
// Adds `text` to schedule.words and returns its index, for an op's name or unit (ops made
// outside a builder).
int32_t AddWord(Schedule& schedule, std::string_view text);

// Whether op's ranges lie inside the schedule's lists (a builder's always do; a schedule made
// by hand is checked before DepsOf / EffectsOf read them, which do not check).
inline bool OpListsInRange(const Schedule& schedule, const ScheduleOp& op) {
  const auto inside = [](const OpRange& r, size_t size) {
    return r.first >= 0 && r.count >= 0 &&
           static_cast<size_t>(r.first) + static_cast<size_t>(r.count) <= size;
  };
  return inside(op.deps, schedule.dep_list.size()) &&
         inside(op.memory, schedule.effect_list.size());
}
// An error for an op whose ranges do not (`where` names the op).
std::string OpListsRangeError(const Schedule& schedule, const ScheduleOp& op,
                              std::string_view where);
// op's dependencies and memory effects.
inline std::span<const int> DepsOf(const Schedule& schedule, const ScheduleOp& op) {
  return {schedule.dep_list.data() + op.deps.first, static_cast<size_t>(op.deps.count)};
}
inline std::span<const MemoryEffect> EffectsOf(const Schedule& schedule, const ScheduleOp& op) {
  return {schedule.effect_list.data() + op.memory.first, static_cast<size_t>(op.memory.count)};
}
inline std::span<MemoryEffect> MutableEffectsOf(Schedule& schedule, const ScheduleOp& op) {
  return {schedule.effect_list.data() + op.memory.first, static_cast<size_t>(op.memory.count)};
}
// Where a list is written op by op (ops made outside a builder): `op`'s list becomes a copy of
// `deps` / `effects` at the end of the schedule's list, or gains one more entry (moved to the
// end first unless it is there already). What a list held before stays in the shared list,
// unread.
void SetDeps(Schedule& schedule, ScheduleOp& op, std::span<const int> deps);
void SetDeps(Schedule& schedule, ScheduleOp& op, std::initializer_list<int> deps);
void AddDep(Schedule& schedule, ScheduleOp& op, int dep);
void SetEffects(Schedule& schedule, ScheduleOp& op, std::span<const MemoryEffect> effects);
void AddEffect(Schedule& schedule, ScheduleOp& op, const MemoryEffect& effect);

// Index of the (role, lane) stream op runs on: role · kNumLanes + lane − 1.
inline int LaneKey(const ScheduleOp& op) {
  return op.role * kNumLanes + (static_cast<int>(op.lane) - 1);
}
// The (role, group) communicator of a collective or p2p op, as role · num_groups + group;
// -1 for an op without a group.
inline int64_t CommunicatorKey(const ScheduleOp& op, size_t num_groups) {
  if (op.group < 0) return -1;
  return static_cast<int64_t>(op.role) * static_cast<int64_t>(num_groups) + op.group;
}
// Whether ops of this type hold their communicator while they run (rule 3): collectives
// other than send / receive.
bool SerializesOnCommunicator(OpType type);

}  // namespace shardscope
