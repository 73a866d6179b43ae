#include "core/schedule/schedule_builder.h"

#include <fmt/core.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <memory>
#include <string_view>
#include <tuple>
#include <utility>

#include "core/schedule/model_chunks.h"
#include "core/schedule/pipeline_order.h"
#include "core/schedule/rank_layout.h"
#include "core/schedule/schedule_size.h"
#include "core/schedule/step_basis.h"
#include "core/schedule/step_builder.h"
#include "core/schedule/unit_sizes.h"
#include "core/schedule/unit_work.h"

namespace shardscope {
namespace {

class GroupTable {
 public:
  explicit GroupTable(Schedule& s) : s_(s) {}
  // Index of the group `name` spanning mesh `dims`, whose ranks `make` computes the first time
  // the name is seen, or -1 for a group of one rank (nothing to talk to).
  // `dims` are copied only for a new group (this runs per role and unit of every schedule).
  template <typename MakeRanks>
  int Get(const std::string& name, std::initializer_list<std::string_view> dims, MakeRanks make) {
    auto it = index_.find(name);
    if (it != index_.end()) return it->second;
    std::vector<int> ranks = make();
    if (ranks.size() <= 1) return index_[name] = -1;
    ProcessGroup g;
    g.name = name;
    g.ranks = std::move(ranks);
    g.dims.assign(dims.begin(), dims.end());
    s_.groups.push_back(std::move(g));
    return index_[name] = static_cast<int>(s_.groups.size()) - 1;
  }
  // Size of the group `name` if known (-1 groups count as 1), else 0.
  int Size(const std::string& name) const {
    auto it = index_.find(name);
    if (it == index_.end()) return 0;
    return it->second < 0 ? 1 : s_.groups[it->second].size();
  }

 private:
  Schedule& s_;
  std::map<std::string, int> index_;
};

Status CheckOptions(const ScheduleOptions& o) {
  if (o.local_batch < 1) {
    return InvalidInput(fmt::format("training.local_batch = {}: expected >= 1", o.local_batch));
  }
  if (o.seq_len < 1) {
    return InvalidInput(fmt::format("training.seq_len = {}: expected >= 1", o.seq_len));
  }
  if (o.grad_accum < 1) {
    return InvalidInput(fmt::format("training.grad_accum = {}: expected >= 1", o.grad_accum));
  }
  if (o.optimizer != "adamw" && o.optimizer != "adam" && o.optimizer != "sgd") {
    return InvalidInput(fmt::format(
        "training.optimizer = '{}': the schedule models adamw, adam or sgd", o.optimizer));
  }
  if (o.ep < 1) return InvalidInput(fmt::format("parallelism.ep = {}: expected >= 1", o.ep));
  if (o.gpus_per_node < 1) {
    return InvalidInput(fmt::format("cluster.gpus_per_node = {}: expected >= 1", o.gpus_per_node));
  }
  if (o.rank && (*o.rank < 0 || *o.rank >= o.world_size)) {
    return InvalidInput(
        fmt::format("schedule rank {}: expected a global rank in [0, {})", *o.rank, o.world_size));
  }
  if (o.pp_microbatches < 1) {
    return InvalidInput(
        fmt::format("parallelism.pp_microbatches = {}: expected >= 1", o.pp_microbatches));
  }
  if (o.pp > 1 && o.local_batch % o.pp_microbatches != 0) {
    return InvalidInput(fmt::format(
        "training.local_batch = {} does not split into parallelism.pp_microbatches = {} equal "
        "micro-batches",
        o.local_batch, o.pp_microbatches));
  }
  return Status::Ok();
}

std::string JoinDims(const MeshSpec& m) {
  std::string out;
  for (size_t i = 0; i < m.dims.size(); ++i) {
    if (i) out += ", ";
    out += fmt::format("{}={}", m.dims[i], i < m.sizes.size() ? m.sizes[i] : 0);
  }
  return "(" + out + ")";
}

int MeshSize(const MeshSpec& m, const std::string& dim) {
  for (size_t i = 0; i < m.dims.size() && i < m.sizes.size(); ++i) {
    if (m.dims[i] == dim) return m.sizes[i];
  }
  return 1;
}

// The shard / replicate / flattened groups of one unit for rank `rank`, checked against the
// sizes the plan recorded.
Result<UnitGroups> GroupsOf(const UnitPlan& unit, const UnitSizes& z, const WorldLayout& w,
                            const ScheduleOptions& o, int rank, int stage, GroupTable& table) {
  // Formed for an error only: this runs per role and unit of every schedule.
  const auto what = [&] {
    return fmt::format("plan: unit '{}' mesh {}", UnitOpLabel(unit.fqn), JoinDims(unit.mesh));
  };
  bool dense = false, expert = false;
  for (const std::string& d : unit.mesh.dims) {
    if (d == "fsdp_shard" || d == "fsdp_replicate") {
      dense = true;
    } else if (d == "edp_shard" || d == "edp_replicate") {
      expert = true;
    } else {
      return InvalidInput(
          fmt::format("{}: dim '{}' is not one the schedule knows (expected "
                      "fsdp_shard, fsdp_replicate, edp_shard, edp_replicate)",
                      what(), d));
    }
  }
  if (dense == expert) {
    return InvalidInput(fmt::format("{}: expected dense (fsdp_*) or expert (edp_*) dims", what()));
  }
  std::string prefix = dense ? "fsdp" : "edp";
  if (o.pp > 1) prefix = fmt::format("stage{}/{}", stage, prefix);
  const int edp_shard = MeshSize(unit.mesh, "edp_shard");
  const int edp_replicate = MeshSize(unit.mesh, "edp_replicate");
  if (expert && int64_t{edp_replicate} * edp_shard * o.ep != w.stage_size()) {
    return InvalidInput(fmt::format(
        "{}: expert mesh edp_replicate {} × edp_shard {} × ep {} does not cover the {} ranks of "
        "a stage; plan and schedule options disagree",
        what(), edp_replicate, edp_shard, o.ep, w.stage_size()));
  }
  // Group of `rank` along dense world dims or expert-mesh dims (made only for a new group).
  static const std::vector<WorldDim> kShardDims = {WorldDim::kDpShard, WorldDim::kCp};
  static const std::vector<WorldDim> kReplicateDims = {WorldDim::kDpReplicate};
  static const std::vector<WorldDim> kFlatDims = {WorldDim::kDpReplicate, WorldDim::kDpShard,
                                                  WorldDim::kCp};
  static const std::vector<ExpertDim> kEdpShardDims = {ExpertDim::kEdpShard};
  static const std::vector<ExpertDim> kEdpReplicateDims = {ExpertDim::kEdpReplicate};
  static const std::vector<ExpertDim> kEdpFlatDims = {ExpertDim::kEdpReplicate,
                                                      ExpertDim::kEdpShard};
  auto group = [&](const std::vector<WorldDim>& dense_dims,
                   const std::vector<ExpertDim>& expert_dims) {
    return [&] {
      if (dense) return w.Group(rank, dense_dims);
      return ExpertGroup(w, rank, edp_replicate, edp_shard, o.ep, expert_dims).value();
    };
  };
  const std::string base = dense ? "fsdp" : "edp";
  UnitGroups g;
  g.shard = table.Get(prefix + "_shard", {base + "_shard"}, group(kShardDims, kEdpShardDims));
  g.replicate = table.Get(prefix + "_replicate", {base + "_replicate"},
                          group(kReplicateDims, kEdpReplicateDims));
  if (table.Size(prefix + "_shard") != z.shard_group ||
      table.Size(prefix + "_replicate") != z.replicate_group) {
    return InvalidInput(fmt::format(
        "{}: shard {} × replicate {} does not match the scenario's layout (shard group of {} "
        "ranks, replicate group of {}); plan and schedule options disagree",
        what(), z.shard_group, z.replicate_group, table.Size(prefix + "_shard"),
        table.Size(prefix + "_replicate")));
  }
  if (const int d = unit.reshard_after_forward_ranks; d > 1) {
    if (z.shard_group % d != 0) {
      return InvalidInput(
          fmt::format("{}: reshard_after_forward = {} does not divide the shard group of {} ranks",
                      what(), d, z.shard_group));
    }
    // FSDP2's post-forward mesh: the shard group cut into blocks of d consecutive ranks.
    std::vector<int> shard = group(kShardDims, kEdpShardDims)();
    const size_t at = std::find(shard.begin(), shard.end(), rank) - shard.begin();
    const size_t first = at / d * d;
    g.post_forward = table.Get(
        fmt::format("{}_shard_post_forward{}:{}", prefix, d, first / d), {base + "_shard"},
        [&] { return std::vector<int>(shard.begin() + first, shard.begin() + first + d); });
  }
  if (z.replicate_grad_bytes > 0) {
    g.flat =
        table.Get(prefix, {base + "_replicate", base + "_shard"}, group(kFlatDims, kEdpFlatDims));
  }
  return g;
}

// Compute dtype: the root's param_dtype, else the dtype of its first managed parameter.
DType ComputeDType(const Plan& plan) {
  for (const UnitPlan& u : plan.units) {
    if (u.mixed_precision.param_dtype) return *u.mixed_precision.param_dtype;
  }
  for (const UnitPlan& u : plan.units) {
    if (!u.params.empty()) return u.params.front().dtype;
  }
  return DType::kFloat32;
}

// Drives every role through its pipeline actions, emitting in an order where each receive
// comes after its send (deps always point to earlier ops).
Status EmitPipeline(const std::vector<std::vector<PipeAction>>& order, const ModelChunks& chunks,
                    const StepInputs& in, const WorldLayout& world, const ScheduleOptions& o,
                    GroupTable& table, Words& words,
                    std::vector<std::unique_ptr<RoleEmitter>>& emitters) {
  const int num_chunks = static_cast<int>(chunks.roots.size());
  const int pp = o.pp;
  // Each chunk's label word and each stage pair's group, formed at first use (the order words
  // and groups are added in) and kept: per action they were a text and a lookup each.
  std::vector<int32_t> chunk_word(static_cast<size_t>(num_chunks), -1);
  auto id = [&](const PipeAction& a, StaticWord what) {
    const OpPhase phase = a.forward ? OpPhase::kForward : OpPhase::kBackward;
    int32_t& label = chunk_word[static_cast<size_t>(a.chunk)];
    if (label < 0) label = words.Of(ChunkLabel(a.chunk));
    return NamedOpId{OpIdKey{label, words.OfStatic(what), 0, in.micro_batches > 1 ? a.micro : -1},
                     phase};
  };
  // The roles' ranks sit at the same place in their stages (`local`).
  const int local = o.rank ? *o.rank % world.stage_size() : 0;
  constexpr int kUnknown = -2;  // group indices are >= -1
  std::vector<int> p2p_group(static_cast<size_t>(pp) * pp, kUnknown);
  auto p2p = [&](int from_chunk, int to_chunk) {
    int& group = p2p_group[static_cast<size_t>(from_chunk % pp) * pp + to_chunk % pp];
    if (group != kUnknown) return group;
    const int a = (from_chunk % pp) * world.stage_size() + local;
    const int b = (to_chunk % pp) * world.stage_size() + local;
    group = table.Get(fmt::format("pp:{}->{}", from_chunk % pp, to_chunk % pp), {"pp"}, [&] {
      return a < b ? std::vector<int>{a, b} : std::vector<int>{b, a};
    });
    return group;
  };
  std::map<std::tuple<bool, int, int>, int> sends;  // (forward, chunk, micro) → send op
  std::vector<size_t> next(order.size(), 0);
  size_t remaining = 0;
  for (const auto& actions : order) remaining += actions.size();
  while (remaining > 0) {
    bool progressed = false;
    for (size_t stage = 0; stage < order.size(); ++stage) {
      while (next[stage] < order[stage].size()) {
        const PipeAction& a = order[stage][next[stage]];
        const int from = a.forward ? a.chunk - 1 : a.chunk + 1;
        const bool needs = from >= 0 && from < num_chunks;
        auto sent = sends.find({a.forward, from, a.micro});
        if (needs && sent == sends.end()) break;
        RoleEmitter& e = *emitters[stage];
        std::vector<int> waits;
        if (needs) {
          waits.push_back(e.Recv(id(a, op_what::kRecv), p2p(from, a.chunk), sent->second, a.micro));
        }
        if (a.forward) {
          e.Forward(chunks.roots[a.chunk], a.micro, waits);
        } else {
          e.Backward(chunks.roots[a.chunk], a.micro, waits);
        }
        const int to = a.forward ? a.chunk + 1 : a.chunk - 1;
        if (to >= 0 && to < num_chunks) {
          // Activations forward, their gradient backward: the receiving chunk's input size.
          const int64_t bytes = chunks.input_bytes[a.forward ? to : a.chunk];
          sends[{a.forward, a.chunk, a.micro}] =
              e.Send(id(a, op_what::kSend), p2p(a.chunk, to), bytes, a.micro);
        }
        ++next[stage];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      return RuntimeError("pipeline: the stage orders wait on each other (internal error)");
    }
  }
  return Status::Ok();
}

// A buffer live before and after the step (Schedule::buffers); the caller sets its id.
Buffer PersistentBuffer(int role, MemCategory c, DType dtype, int64_t bytes, std::string unit,
                        bool host) {
  Buffer b;
  b.role = role;
  b.category = c;
  const Elements e = ElementsOf(dtype, bytes);
  b.dtype = e.dtype;
  b.numel = e.numel;
  b.bytes = bytes;
  b.unit = std::move(unit);
  b.host = host;
  return b;
}

// The schedule of role `keep` alone (one-rank mode): its ops, buffers and the groups they use,
// renumbered. Dependencies on other roles' ops (a receive on its send) are dropped: across
// ranks the communicator orders the transfer.
Schedule KeepRole(Schedule s, int keep) {
  Schedule out;
  std::vector<int> op_index(s.ops.size(), -1), buffer_index(s.buffers.size(), -1),
      group_index(s.groups.size(), -1);
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (s.ops[i].role == keep) op_index[i] = static_cast<int>(i);
  }
  int next = 0;
  for (int& i : op_index) {
    if (i >= 0) i = next++;
  }
  for (Buffer& b : s.buffers) {
    if (b.role != keep) continue;
    buffer_index[b.id] = static_cast<int>(out.buffers.size());
    b.id = buffer_index[b.id];
    b.role = 0;
    if (b.alloc_op >= 0) b.alloc_op = op_index[b.alloc_op];
    if (b.free_op >= 0) b.free_op = op_index[b.free_op];
    out.buffers.push_back(std::move(b));
  }
  auto buffer = [&](int id) { return id < 0 ? -1 : buffer_index[id]; };
  out.ops.reserve(next);
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (op_index[i] < 0) continue;
    ScheduleOp& op = s.ops[i];
    op.role = 0;
    std::vector<int> deps;
    for (int d : DepsOf(s, op)) {
      if (op_index[d] >= 0) deps.push_back(op_index[d]);
    }
    SetDeps(out, op, deps);
    std::vector<MemoryEffect> effects(EffectsOf(s, op).begin(), EffectsOf(s, op).end());
    for (MemoryEffect& m : effects) m.buffer = buffer(m.buffer);
    SetEffects(out, op, effects);
    op.collective.input_buffer = buffer(op.collective.input_buffer);
    op.collective.output_buffer = buffer(op.collective.output_buffer);
    if (op.group >= 0) {
      if (group_index[op.group] < 0) {
        group_index[op.group] = static_cast<int>(out.groups.size());
        out.groups.push_back(s.groups[op.group]);
      }
      op.group = group_index[op.group];
    }
    out.ops.push_back(std::move(op));
  }
  out.roles = {s.roles[keep]};
  out.initial_memory = {s.initial_memory[keep]};
  out.initial_host_memory = {s.initial_host_memory[keep]};
  out.world_size = s.world_size;
  out.modules = std::move(s.modules);
  out.words = std::move(s.words);
  return out;
}

void AddNotes(const ScheduleOptions& o, Schedule& s) {
  if (o.rank) {
    s.notes.push_back(fmt::format(
        "ranks row-major on (pp, dp_replicate, dp_shard, cp, tp) = ({}, {}, {}, {}, {}); the "
        "schedule of global rank {} alone",
        o.pp, o.dp_replicate, o.dp_shard, o.cp, o.tp, *o.rank));
  } else {
    s.notes.push_back(fmt::format(
        "ranks row-major on (pp, dp_replicate, dp_shard, cp, tp) = ({}, {}, {}, {}, {}); one "
        "simulated rank per pipeline stage stands for the {} ranks of its stage",
        o.pp, o.dp_replicate, o.dp_shard, o.cp, o.tp, o.world_size / o.pp));
  }
  s.notes.push_back(
      "FSDP2's prefetch rules: a forward unit keeps its all-gather output until the next "
      "unit's copy-out (2 + forward depth buffers), an empty backward list keeps the implicit "
      "one-ahead prefetch (depth 0 = FSDP2's default), the root prefetches the last unit as "
      "backward begins; the host runs ahead of the GPU, so all-gathers wait only for FSDP2's "
      "stream events while memory is counted in program order");
  s.notes.push_back(fmt::format(
      "activation checkpointing '{}' applied to non-root units; the root is never checkpointed",
      ActivationCheckpointName(o.activation_checkpoint)));
  if (o.tp > 1 || o.cp > 1 || o.ep > 1) {
    s.notes.push_back(
        "TP/CP/EP collectives run on the compute lane (blocking); CP as all-gather of K/V, "
        "ring overlap not modelled");
  }
  if (o.pp > 1) {
    s.notes.push_back(fmt::format(
        "pipeline '{}' with {} micro-batches per pass{}: each stage chunk is its own FSDP root; "
        "gradients reduce and parameters reshard only after a pass's last micro-batch "
        "(torch.distributed.pipelining's no-sync backward); a send carries the transfer, the "
        "receive is a zero-byte join point",
        o.pp_schedule, o.pp_microbatches,
        o.grad_accum > 1
            ? fmt::format(", {} passes per step (one schedule.step() per accumulation step, "
                          "each filling and draining the pipeline and reducing gradients)",
                          o.grad_accum)
            : std::string()));
  }
}

// BuildSchedule's body, with the step's basis from `basis_of(key)`: made for this schedule, or
// a cache's (step_basis.h).
template <typename BasisOf>
Result<Schedule> Build(const Plan& plan, const ScheduleOptions& options, BasisOf basis_of) {
  SS_RETURN_IF_ERROR(CheckOptions(options));
  if (plan.units.empty() || !plan.units.back().is_root) {
    return InvalidInput("plan: expected the root unit last in `units` (planning.md §3)");
  }
  SS_ASSIGN_OR_RETURN(WorldLayout world,
                      MakeWorldLayout(options.world_size, options.pp, options.dp_replicate,
                                      options.dp_shard, options.cp, options.tp));
  if (options.ep > 1 && (world.stage_size() % options.ep) != 0) {
    return InvalidInput(fmt::format("parallelism.ep = {} does not divide the {} ranks of a stage",
                                    options.ep, world.stage_size()));
  }
  const bool pipelined = options.pp > 1;
  const int v = pipelined ? options.pp_virtual_stages : 1;
  const int micro_batches = options.grad_accum * (pipelined ? options.pp_microbatches : 1);
  // torchtitan runs one schedule.step() per accumulation step: grad_accum passes of
  // pp_microbatches each, every pass filling and draining the pipeline.
  SS_ASSIGN_OR_RETURN(auto order,
                      RepeatedPipelineOrder(options.pp_schedule, options.pp, v,
                                            pipelined ? options.pp_microbatches : micro_batches,
                                            pipelined ? options.grad_accum : 1));
  Schedule s;
  s.world_size = options.world_size;
  GroupTable table(s);
  const int stage_size = world.stage_size();
  auto stage_name = [&](int stage, const std::string& name) {
    return pipelined ? fmt::format("stage{}/{}", stage, name) : name;
  };

  // The rank each stage's role simulates: the first of its stage, or in one-rank mode the
  // rank at the same place in its stage as the one asked for (only that one is kept).
  const int local = options.rank ? *options.rank % stage_size : 0;
  auto role_rank = [&](int stage) { return stage * stage_size + local; };

  // TP / CP / EP groups of stage 0, used while building the unit work.
  auto work_groups = [&](int stage) {
    const int rank = role_rank(stage);
    WorkGroups g;
    g.tp = table.Get(stage_name(stage, "tp"), {"tp"},
                     [&] { return world.Group(rank, {WorldDim::kTp}); });
    g.cp = table.Get(stage_name(stage, "cp"), {"cp"},
                     [&] { return world.Group(rank, {WorldDim::kCp}); });
    if (options.ep > 1) {
      g.ep = table.Get(stage_name(stage, "ep"), {"ep"}, [&] {
        // The expert mesh's last dim: ep consecutive ranks (rank_layout.h).
        std::vector<int> ep;
        for (int r = rank - rank % options.ep; ep.size() < static_cast<size_t>(options.ep); ++r)
          ep.push_back(r);
        return ep;
      });
    }
    return g;
  };
  const WorkGroups wg0 = work_groups(0);

  OpContext ctx;
  ctx.batch = pipelined ? options.local_batch / options.pp_microbatches : options.local_batch;
  ctx.seq = options.seq_len;
  ctx.tp = options.tp;
  ctx.cp = options.cp;
  ctx.ep = options.ep;
  ctx.sequence_parallel = options.sequence_parallel && options.tp > 1;
  ctx.loss_parallel = options.loss_parallel;
  ctx.compute_dtype = ComputeDType(plan);
  ctx.implementation = options.implementation;
  StepBasisKey key;
  key.ctx = ctx;
  key.sequence_parallel = options.sequence_parallel;
  key.estimator = options.estimator;
  key.chunks = options.pp * v;
  key.groups = wg0;
  SS_ASSIGN_OR_RETURN(const std::shared_ptr<const StepBasis> basis, basis_of(key));
  SS_RETURN_IF_ERROR(CheckScheduleSize(basis->modules_with_op, plan, options));
  const ModelChunks& chunks = basis->chunks;
  s.modules = basis->modules;

  StepInputs in;
  in.options = &options;
  in.units = chunks.units;
  in.work = chunks.work;
  in.labels = chunks.labels;
  in.sizes = basis->sizes;
  in.chunk_of = basis->chunk_of;
  in.segments = basis->segments;
  in.chunk_counts = basis->chunk_counts;
  in.grad_groups = basis->grad_groups;
  in.micro_batches = micro_batches;
  in.sync_every_micro = !pipelined && options.requires_grad_sync;
  in.reshard_every_micro = !pipelined && options.reshard_after_backward;
  in.pass_micro_batches = pipelined ? options.pp_microbatches : 0;
  in.compute_dtype = ctx.compute_dtype;

  // Reserve the ops up front: growing a vector of ops moves every op (strings, vectors).
  size_t estimate = 0;
  for (const UnitWork& w : in.work) estimate += 3 * w.entries.size() + 12;
  s.ops.reserve(estimate * static_cast<size_t>(micro_batches) + 16 * options.pp);
  s.buffers.reserve(s.ops.capacity());  // an op allocates about one buffer, most ops fewer
  // About two dependencies and two effects per op (an allocation and its free).
  s.dep_list.reserve(2 * s.ops.capacity());
  Words words(s);
  EffectLog effects;
  effects.Reserve(2 * s.ops.capacity());
  std::vector<std::unique_ptr<RoleEmitter>> emitters;
  std::vector<Buffer> persistent_buffers;  // appended after the step's own buffers
  for (int stage = 0; stage < options.pp; ++stage) {
    const int rank = role_rank(stage);
    Role role;
    role.name = options.rank ? fmt::format("rank {}", rank)
                             : (pipelined ? fmt::format("pp stage {}", stage) : "fsdp");
    role.rank = rank;
    role.ranks_like = options.rank ? 1 : stage_size;
    s.roles.push_back(role);
    std::vector<int> units;
    for (int c = stage; c < options.pp * v; c += options.pp) {
      for (int u : chunks.members[c]) units.push_back(u);
    }
    std::vector<UnitGroups> groups(in.units.size());
    std::array<int64_t, kNumMemCategories> device{}, host{};
    for (int u : units) {
      const UnitPlan& unit = in.units[u];
      const UnitSizes& z = in.sizes[u];
      SS_ASSIGN_OR_RETURN(groups[u], GroupsOf(unit, z, world, options, rank, stage, table));
      auto& persistent = unit.offload ? host : device;
      persistent[static_cast<int>(MemCategory::kShardedParams)] +=
          z.shard_bytes + z.replicate_bytes;
      // On the device, sharded gradients appear as each unit's reduction lands (the training
      // loop's zero_grad(set_to_none=True) dropped them at the step's start): step_builder.cpp.
      if (unit.offload) host[static_cast<int>(MemCategory::kShardedGrads)] += z.sharded_grad_bytes;
      if (options.optimizer != "sgd") {
        persistent[static_cast<int>(MemCategory::kOptimizer)] += 2 * 4 * z.optimizer_numel;
      }
      auto keep = [&](MemCategory c, DType d, int64_t bytes, bool on_host) {
        if (bytes > 0) {
          persistent_buffers.push_back(PersistentBuffer(stage, c, d, bytes, in.labels[u], on_host));
        }
      };
      keep(MemCategory::kShardedParams, z.own_dtype, z.shard_bytes, unit.offload);
      keep(MemCategory::kShardedParams, z.own_dtype, z.replicate_bytes, unit.offload);
      if (unit.offload) keep(MemCategory::kShardedGrads, z.own_dtype, z.sharded_grad_bytes, true);
      if (options.optimizer != "sgd") {  // exp_avg and exp_avg_sq, fp32
        keep(MemCategory::kOptimizer, DType::kFloat32, 4 * z.optimizer_numel, unit.offload);
        keep(MemCategory::kOptimizer, DType::kFloat32, 4 * z.optimizer_numel, unit.offload);
      }
    }
    s.initial_memory.push_back(device);
    s.initial_host_memory.push_back(host);
    std::map<int, int> remap;
    if (stage > 0) {
      const WorkGroups g = work_groups(stage);
      for (auto [from, to] : {std::pair{wg0.tp, g.tp}, {wg0.cp, g.cp}, {wg0.ep, g.ep}}) {
        if (from >= 0) remap[from] = to;
      }
    }
    emitters.push_back(std::make_unique<RoleEmitter>(in, std::move(groups), std::move(units),
                                                     std::move(remap), stage, s, words, effects));
  }
  SS_RETURN_IF_ERROR(EmitPipeline(order, chunks, in, world, options, table, words, emitters));
  for (auto& e : emitters) e->Finish();
  effects.Commit(s);
  for (Buffer& b : persistent_buffers) {
    b.id = static_cast<int>(s.buffers.size());
    s.buffers.push_back(std::move(b));
  }
  if (options.rank) s = KeepRole(std::move(s), *options.rank / stage_size);

  s.tokens_per_step = options.local_batch * options.seq_len * options.grad_accum *
                      options.dp_replicate * options.dp_shard;
  AddNotes(options, s);
  if (pipelined && std::any_of(plan.units.begin(), plan.units.end(), [](const UnitPlan& u) {
        return !u.is_root && u.reshard_after_forward && u.reshard_after_forward_ranks == 0;
      })) {
    // The planning contract's default is true; torchtitan's differs under pp, and the choice
    // moves both the all-gather count and the memory peak.
    s.notes.push_back(
        "fsdp.reshard_after_forward = true under a pipeline: every micro-batch's forward and "
        "backward gather the stage's parameters again; torchtitan's default policy keeps them "
        "gathered under pp (reshard_after_forward = not pp): set fsdp.reshard_after_forward="
        "false to model that");
  }
  // Ignored parameters are whole tensors FSDP never touches: no collective, but memory.
  if (plan.totals.ignored_bytes_per_rank > 0) {
    s.initial_memory[0][static_cast<int>(MemCategory::kShardedParams)] +=
        plan.totals.ignored_bytes_per_rank;
    s.buffers.push_back(PersistentBuffer(0, MemCategory::kShardedParams, DType::kUInt8,
                                         plan.totals.ignored_bytes_per_rank, "", false));
    s.buffers.back().id = static_cast<int>(s.buffers.size()) - 1;
    s.notes.push_back(fmt::format(
        "{} bytes of ignored parameters counted as sharded_params of the first role; their "
        "gradients and optimizer state are not modelled",
        plan.totals.ignored_bytes_per_rank));
  }
  for (const UnitPlan& u : plan.units) {
    if (u.comm_fusion) {
      s.notes.push_back(
          "comm_fusion: FSDP2 already issues one flat all-gather and reduce-scatter per unit, "
          "which is what the schedule models; the zero-copy variant's memory saving is not "
          "modelled");
      break;
    }
  }
  return s;
}

}  // namespace

Result<Schedule> BuildSchedule(const ModelTree& tree, const Plan& plan,
                               const ScheduleOptions& options) {
  return Build(plan, options,
               [&](const StepBasisKey& key) -> Result<std::shared_ptr<const StepBasis>> {
                 SS_ASSIGN_OR_RETURN(StepBasis made, MakeStepBasis(tree, plan, key));
                 return std::make_shared<const StepBasis>(std::move(made));
               });
}

Result<Schedule> BuildSchedule(const std::shared_ptr<const ModelTree>& tree,
                               const std::shared_ptr<const Plan>& plan,
                               const ScheduleOptions& options, StepBasisCache& bases) {
  return Build(*plan, options, [&](const StepBasisKey& key) { return bases.Get(tree, plan, key); });
}

}  // namespace shardscope
