#include "core/schedule/step_builder.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <functional>
#include <map>
#include <string>
#include <variant>

#include "core/model/loss_region.h"

// FSDP2 behaviour modelled here (torch/distributed/fsdp/_fully_shard/, read for this file):
// - Issue timing (schedule.h rule 4). The host runs ahead of the GPU, so an all-gather waits
//   only for the stream events FSDP2 orders the all-gather streams after (ag_wait_): in
//   forward the copy-out of the output being released (two units back without explicit
//   prefetch: that is how FSDP2 overlaps forward all-gathers with no forward list), in
//   backward the latest copy-out. Reduce-scatters wait for the compute before their hook.
//   Allocations stay at their program-order point (the caching allocator's view).
// - Prefetch and retention (FSDPParamGroup.wait_for_unshard, FSDPState._pre_backward): a
//   forward unit keeps its all-gather output until the next unit's copy-out, so it holds two
//   unit-sized buffers, and an explicit forward list of depth F adds F (2 + F). In backward
//   an empty list keeps FSDP2's implicit one-ahead prefetch (the unit before in post-forward
//   order) and a non-empty one replaces it (1 + B); the root's pre-backward prefetches the
//   last unit as backward begins.
// - All-gather (foreach_all_gather): copy-in casts the local shard to param_dtype on the
//   all-gather lane, then one flat all-gather per unit into a padded S·shard buffer. That
//   buffer stands for the unsharded parameters until reshard (runtime.md). FSDP2's separate
//   copy-out into per-parameter tensors is its own compute-stream op (<phase>/<unit>/copy_out)
//   in the unit's pre-forward / pre-backward, after the all-gather; outside forward the
//   output and the parameters both exist during it (CopyOut). The reduce-scatter's
//   copy-in (chunk_cat of the unsharded gradients into the reduce-dtype input) is the op
//   bwd/<unit>/reduce_copy_in after the unit's last backward op. The cast copy exists only
//   when param_dtype differs from the stored dtype and lives until the all-gather ends.
// - Post-backward (FSDPParamGroup.post_backward): reshard, then the compute stream waits for
//   the previous reduce-scatter (comm_ctx.reduce_scatter_state) before this one's copy-in,
//   so at most one reduce-scatter is in flight and the next compute op waits for the one
//   before. The unsharded gradient and the reduce-scatter input live until the
//   reduce-scatter ends (runtime.md; FSDP2 frees the gradient after the copy-in, slightly
//   earlier). HSDP all-reduces the reduced shard on the all_reduce lane; replicate params are
//   all-reduced whole over replicate × shard.
// - Gradients: the training loop's zero_grad(set_to_none=True) leaves no sharded gradient at
//   the step's start; each unit's appears when its reduction lands and lives through the
//   optimizer step (whose end stands for the next zero_grad).
// - Root: gathered in its pre-forward, never resharded after forward, resharded and reduced
//   in its post-backward, which fires after the embedding's backward (the last use).
// - Gradient accumulation: every micro-step runs forward and backward. requires_grad_sync =
//   false skips the reduction on non-final micro-steps and keeps an unsharded accumulator in
//   the reduce dtype; reshard_after_backward = false keeps parameters gathered across
//   micro-steps (the final micro-step always reshards so the step ends clean).
// - Activations (runtime.md): saved per compute chunk in forward, freed by that chunk's
//   backward. full: a checkpointed unit saves its input; its forward is recomputed before its
//   backward into temporaries. selective_op: matmul / attention outputs saved, norms and
//   activations recomputed inside backward (added as recompute items); the unit's input is
//   kept too (the checkpoint wrapper saves its inputs), and during the unit's backward the
//   recomputation regenerates what the saved set lacks (temporaries: mode none's saved bytes
//   minus selective's, freed at post-backward). selective_op:K (torchtitan's op policy, K = 2:
//   torch/utils/checkpoint policy counting aten.mm per block, recompute when count % K == 0):
//   every K-th matmul of a unit in forward order is not saved but recomputed in backward
//   like the norms. selective_layer:k:
//   every k-th unit in execution order (torchtitan's counter) is fully checkpointed, the rest
//   keep everything. The root (embedding, final norm, head) is never checkpointed, as torchtitan
//   applies activation checkpointing to blocks only.
// - Pipelining (torch.distributed.pipelining, _PipelineStageBase.backward_maybe_with_nosync):
//   non-final micro-batches run backward with requires_gradient_sync and reshard_after_backward
//   off, so gradients accumulate unsharded and parameters stay gathered; PyTorch then calls
//   every group's post_backward after the chunk's last backward: each unit's reshard and
//   reduction wait for its chunk root's post-backward (deferred_post_backward_). With
//   gradient accumulation torchtitan calls schedule.step() once per accumulation step, so
//   that happens at the end of every pass (pass_micro_batches), the reductions adding into
//   the sharded gradients.
namespace shardscope {
namespace {

enum class Phase { kForward, kRecompute, kBackward };

// How many collectives of each kind (prefix + what) one unit's forward, backward or
// recomputation has emitted so far: the next one's op_id index. A unit has a handful of kinds,
// so a linear scan over views of the plan's own strings (a string-keyed map made a node and a
// key per kind, per unit and micro-batch, and a string per op).
class CommCounters {
 public:
  int Next(std::string_view prefix, std::string_view what) {
    for (Entry& e : entries_) {
      if (e.what == what && e.prefix == prefix) return e.count++;
    }
    entries_.push_back({prefix, what, 1});
    return 0;
  }

 private:
  struct Entry {
    std::string_view prefix, what;
    int count = 0;
  };
  std::vector<Entry> entries_;
};

struct UnitState {
  // The unit's explicit prefetch targets as unit indices (-1: in another chunk), at first use.
  std::vector<int> forward_targets, backward_targets;
  bool gathered = false;
  int params_buffer = -1;
  int ready_op = -1;     // compute waits for this op before using the parameters
  int grad_buffer = -1;  // the unsharded gradients of the first chunk to run backward
  std::vector<int> later_grad_buffers;     // those of the unit's later backward chunks
  std::vector<char> grad_group_allocated;  // per GradGroups entry, this micro-step
  int replicate_grad_buffer = -1;
  int accum_buffer = -1;
  int recompute_buffer = -1;
  // Per micro-batch (pipelining keeps several in flight): full checkpointing's saved input,
  // each chunk's saved activations and the loss's logits.
  std::map<int, int> input_buffer;
  std::map<int, std::vector<int>> chunk_activation_buffers;
  bool grads_allocated = false;
  bool copy_out_pending = false;  // an all-gather ran; its copy-out is not emitted yet
  // reshard_after_forward = d: the 1/d slice kept after forward (FSDP2's
  // _sharded_post_forward_param_data) and the op whose end resharded to it, which the backward
  // all-gather waits for (_reshard_after_forward_event).
  int post_forward_buffer = -1;
  int post_forward_op = -1;
  bool output_over_group = false;     // the last all-gather had peers (FSDP2's world_size > 1)
  bool sharded_grads_landed = false;  // the unit's reduced gradients exist on the device
  // The FSDP copies' items (CopyItems), shared by every micro-batch's copy op.
  ComputeItems copy_out_items;
  ComputeItems copy_in_items;
  // FSDP2's folds into the unsharded accumulator (AccumulateItems): the first micro-step's
  // cast, a later one's add, and a reduction's copy-in that adds the last micro-step's
  // gradients and reads the sum.
  ComputeItems cast_items;
  ComputeItems add_items;
  ComputeItems accumulated_copy_in_items;
};

// The element type and NCCL count of a call that moves `bytes` per rank.
CollectiveSpec CollectiveOf(DType dtype, int64_t bytes) {
  const Elements e = ElementsOf(dtype, bytes);
  CollectiveSpec c;
  c.dtype = e.dtype;
  c.count = e.numel;
  return c;
}

// How a unit's gradients are reduced over its n = S · R data-parallel ranks (schedule.h,
// CollectiveSpec: FSDP2's _get_gradient_divide_factors): the reduction op of every collective,
// the scale before the first one and the scale after the last one.
struct GradientReduction {
  CollectiveReduce op = CollectiveReduce::kSum;
  double pre_scale = 1.0;
  double post_scale = 1.0;
};
GradientReduction GradientReductionOf(const UnitPlan& unit, DType reduce_dtype, int n) {
  GradientReduction r;
  if (unit.reduce_op == ReduceOp::kSum) {
    r.pre_scale = unit.gradient_scaling_factor.value_or(1.0);
    return r;
  }
  if (n <= 1) return r;  // FSDP2 avoids ncclAvg on one rank
  if (reduce_dtype == DType::kFloat32 || reduce_dtype == DType::kBFloat16) {
    r.op = CollectiveReduce::kAvg;
    return r;
  }
  // Overflow risk (fp16): divide by p ≈ √n before and by n / p after.
  int p = 1;
  while (n % p == 0 && n / p > p) p *= 2;
  r.pre_scale = 1.0 / p;
  r.post_scale = static_cast<double>(p) / n;
  return r;
}

// An op as an emitter forms it: its dependencies and effects grow as vectors of its own (they
// hide ScheduleOp's ranges) until Push gives the op its index and its lists their ranges.
// Pushed, its vectors go back to the emitter for the next op: drafted ops allocate nothing.
struct OpDraft : ScheduleOp {
  std::vector<int> deps;
  std::vector<MemoryEffect> memory;
};

// Where an effect goes: the op being formed, or one pushed before (by index).
struct At {
  At(OpDraft& op) : draft(&op) {}  // NOLINT: a draft reads as its own target
  static At Pushed(int index) {
    At at;
    at.pushed = index;
    return at;
  }
  OpDraft* draft = nullptr;
  int pushed = -1;

 private:
  At() = default;
};

}  // namespace

class RoleEmitter::Impl {
 public:
  Impl(const StepInputs& in, std::vector<UnitGroups> groups, std::vector<int> units,
       std::map<int, int> remap, int role, Schedule& s, Words& words, EffectLog& effects)
      : in_(in),
        groups_(std::move(groups)),
        role_units_(std::move(units)),
        remap_(std::move(remap)),
        role_(role),
        s_(s),
        words_(words),
        effects_(effects) {
    const size_t n = in.units.size();
    label_words_.assign(in.labels.size(), -1);
    unit_words_.assign(in.units.size(), kNoWord);
    comm_templates_.resize(n);
    recomputed_mm_.resize(n);
    item_lists_.resize(n);
    for (int u : role_units_) {
      MarkRecomputedMatmuls(u);
      item_lists_[u].resize(in.chunk_counts[u]);
    }
    micro_steps_ = std::max(1, in.micro_batches);
    for (int u : role_units_) {
      if (!in.units[u].fqn.empty()) index_of_[in.units[u].fqn] = u;
    }
    state_.assign(n, UnitState{});
  }

  void ForwardChunk(int root, int micro, const std::vector<int>& waits) {
    micro_ = micro;
    for (int w : waits) barrier_.push_back(w);
    Forward(root);
  }
  void BackwardChunk(int root, int micro, const std::vector<int>& waits) {
    micro_ = micro;
    for (int w : waits) barrier_.push_back(w);
    Backward(root);
  }
  int SendOp(NamedOpId op_id, int group, int64_t bytes, int micro) {
    micro_ = micro;
    OpDraft op = NewOp(Lane::kP2P, OpType::kSend, std::move(op_id), "ncclSend", -1);
    op.group = group;
    op.bytes = bytes;
    op.collective = CollectiveOf(in_.compute_dtype, bytes);
    if (last_compute_ >= 0) op.deps.push_back(last_compute_);
    return Push(std::move(op));
  }
  int RecvOp(NamedOpId op_id, int group, int peer_send, int micro) {
    micro_ = micro;
    // The paired send carries the transfer; the receive is this rank's join point on it.
    OpDraft op = NewOp(Lane::kP2P, OpType::kRecv, std::move(op_id), "ncclRecv", -1);
    op.group = group;
    op.collective = s_.ops[peer_send].collective;  // what the matching send transfers
    op.deps.push_back(peer_send);
    return Push(std::move(op));
  }
  void Finish() { EmitOptimizer(); }

 private:
  // ----- structure -----
  // selective_op:K: which matrix multiplies (nn.Linear → aten.mm) of unit u the policy
  // recomputes.
  void MarkRecomputedMatmuls(int u) {
    const UnitWork& w = in_.work[u];
    const int every_mm = in_.options->activation_checkpoint.recompute_every_mm;
    recomputed_mm_[u].assign(w.entries.size(), 0);
    int mm_count = 0;
    for (size_t i = 0; i < w.entries.size(); ++i) {
      const WorkEntry& e = w.entries[i];
      if (e.kind != WorkEntry::Kind::kItem) continue;
      if (e.item.kind != OpKind::kLinear && e.item.kind != OpKind::kRouter) continue;
      ++mm_count;
      recomputed_mm_[u][i] = every_mm > 0 && mm_count % every_mm == 0;
    }
  }

  const UnitPlan& Unit(int u) const { return in_.units[u]; }
  bool IsRoot(int u) const { return Unit(u).is_root; }

  CheckpointMode ModeOf(int u) const {
    if (IsRoot(u)) return CheckpointMode::kNone;
    const ActivationCheckpoint& ac = in_.options->activation_checkpoint;
    if (ac.mode == CheckpointMode::kSelectiveLayer) {
      // torchtitan counts blocks from 1 and wraps every k-th: execution index k−1, 2k−1, ...
      return (Unit(u).execution_index.value_or(0) + 1) % ac.every_k == 0 ? CheckpointMode::kFull
                                                                         : CheckpointMode::kNone;
    }
    return ac.mode;
  }

  // The items of chunk `seg` of unit u in `phase`: the forward's in entry order; the
  // backward's in reverse, each module's backward preceded by its recomputation where
  // selective_op recomputes it; the recomputation's (full checkpointing) in entry order. Built
  // once per chunk and phase and shared by every micro-batch's op (compute_items.h): they
  // depend on the unit, the chunk and the unit's checkpoint mode only.
  const ComputeItems& Items(int u, const WorkSegment& seg, Phase phase) {
    ComputeItems& list = item_lists_[u][seg.chunk][static_cast<int>(phase)];
    if (!list.empty() || seg.entries.empty()) return list;
    const std::vector<WorkEntry>& entries = in_.work[u].entries;
    std::vector<ComputeItem> items;
    switch (phase) {
      case Phase::kForward:
        items.reserve(seg.entries.size());
        for (int e : seg.entries) items.push_back(entries[e].item);
        break;
      case Phase::kRecompute:
        items.reserve(seg.entries.size());
        for (int e : seg.entries) {
          items.push_back(entries[e].item);
          items.back().recompute = true;
        }
        break;
      case Phase::kBackward: {
        const bool selective = ModeOf(u) == CheckpointMode::kSelectiveOp;
        items.reserve((selective ? 2 : 1) * seg.entries.size());
        for (auto e = seg.entries.rbegin(); e != seg.entries.rend(); ++e) {
          const ComputeItem& fwd = entries[*e].item;
          // torchtitan's op SAC saves aten.mm, not the experts' aten._grouped_mm: the routed
          // experts' forward runs again (saved_tensors.cpp).
          if (selective && (fwd.kind == OpKind::kNorm || fwd.kind == OpKind::kActivation ||
                            fwd.kind == OpKind::kExperts || recomputed_mm_[u][*e])) {
            items.push_back(fwd);
            items.back().recompute = true;
          }
          items.push_back(fwd);
          items.back().backward = true;
        }
        break;
      }
    }
    list = std::move(items);
    return list;
  }

  // ----- op emission -----
  NamedOpId Id(OpPhase phase, int u, StaticWord what, int index = 0) {
    return IdOfWord(phase, u, words_.OfStatic(what), index);
  }
  // The same for a `what` formed at run time (a collective point's, CommTemplate).
  NamedOpId IdOfText(OpPhase phase, int u, std::string_view what) {
    return IdOfWord(phase, u, words_.Of(what), 0);
  }
  NamedOpId IdOfWord(OpPhase phase, int u, int32_t what, int index) {
    int32_t& label = label_words_[u];
    if (label < 0) label = words_.Of(in_.labels[u]);
    return {OpIdKey{label, what, index, micro_steps_ > 1 ? micro_ : -1}, phase};
  }
  static OpPhase PhaseOf(bool forward) { return forward ? OpPhase::kForward : OpPhase::kBackward; }
  // A step-level op_id ("step/<what>").
  NamedOpId StepId(StaticWord what) {
    return {OpIdKey{-1, words_.OfStatic(what), 0, -1}, OpPhase::kStep};
  }

  static MemoryEffect Effect(MemoryEffect::When when, MemCategory c, int64_t bytes, int buffer) {
    MemoryEffect m;
    m.when = when;
    m.category = c;
    m.bytes = bytes;
    m.buffer = buffer;
    return m;
  }
  // Allocates `bytes` (when > 0) of elements of `dtype` owned by unit u at `when` of `op`, and
  // returns the buffer id (an entry of the buffer table), or -1. A size that is not a whole
  // number of elements (a workspace) is typed as raw bytes.
  int Alloc(At op, MemoryEffect::When when, MemCategory c, int64_t bytes, DType dtype, int u) {
    if (bytes <= 0) return -1;
    const int id = static_cast<int>(s_.buffers.size());
    AddEffect(op, Effect(when, c, bytes, id));
    Buffer b;
    b.id = id;
    b.role = role_;
    b.category = c;
    const Elements e = ElementsOf(dtype, bytes);
    b.dtype = e.dtype;
    b.numel = e.numel;
    b.bytes = bytes;
    b.unit = in_.labels[u];
    b.alloc_op = op.pushed;  // a draft's: set when it is pushed
    b.alloc_when = when;
    s_.buffers.push_back(std::move(b));
    return id;
  }
  void Free(At op, MemoryEffect::When when, int& buffer) {
    if (buffer < 0) return;
    Buffer& b = s_.buffers[buffer];
    AddEffect(op, Effect(when, b.category, -b.bytes, buffer));
    b.free_op = op.pushed;
    b.free_when = when;
    buffer = -1;
  }
  void AddEffect(At op, const MemoryEffect& m) {
    if (op.draft != nullptr) {
      op.draft->memory.push_back(m);
    } else {
      effects_.Add(op.pushed, m);
    }
  }

  OpDraft NewOp(Lane lane, OpType type, NamedOpId id, StaticWord name, int u) {
    return NewOpOfWord(lane, type, id, words_.OfStatic(name), u);
  }
  // The same for a name formed at run time (the optimizer's).
  OpDraft NewOpOfText(Lane lane, OpType type, NamedOpId id, std::string_view name, int u) {
    return NewOpOfWord(lane, type, id, words_.Of(name), u);
  }
  OpDraft NewOpOfWord(Lane lane, OpType type, NamedOpId id, int32_t name, int u) {
    OpDraft op = NewDraft();
    op.role = role_;
    op.lane = lane;
    op.type = type;
    op.id = id.key;
    op.id_phase = id.phase;
    op.name = name;
    if (u >= 0) {
      int32_t& unit = unit_words_[u];
      if (unit == kNoWord) unit = Unit(u).fqn.empty() ? -1 : words_.Of(Unit(u).fqn);
      op.unit = unit;
    }
    op.micro_step = micro_;
    return op;
  }

  // A draft whose vectors are spare ones (empty, their capacity kept).
  OpDraft NewDraft() {
    OpDraft op;
    if (!spare_deps_.empty()) {
      op.deps = std::move(spare_deps_.back());
      spare_deps_.pop_back();
    }
    if (!spare_memory_.empty()) {
      op.memory = std::move(spare_memory_.back());
      spare_memory_.pop_back();
    }
    return op;
  }

  int Push(OpDraft&& op) {
    if (op.lane == Lane::kCompute) {
      for (int d : barrier_) op.deps.push_back(d);
      barrier_.clear();
    }
    std::sort(op.deps.begin(), op.deps.end());
    op.deps.erase(std::unique(op.deps.begin(), op.deps.end()), op.deps.end());
    const int index = static_cast<int>(s_.ops.size());
    // Ops are pushed in index order: their dependencies go to the shared list in op order.
    op.ScheduleOp::deps =
        OpRange(static_cast<int32_t>(s_.dep_list.size()), static_cast<int32_t>(op.deps.size()));
    s_.dep_list.insert(s_.dep_list.end(), op.deps.begin(), op.deps.end());
    // The buffer table's sites of the effects added before the op had its index.
    for (const MemoryEffect& m : op.memory) {
      Buffer& b = s_.buffers[m.buffer];
      (m.bytes > 0 ? b.alloc_op : b.free_op) = index;
      effects_.Add(index, m);
    }
    op.deps.clear();
    op.memory.clear();
    spare_deps_.push_back(std::move(op.deps));
    spare_memory_.push_back(std::move(op.memory));
    s_.ops.push_back(std::move(static_cast<ScheduleOp&>(op)));
    if (s_.ops.back().lane == Lane::kCompute) last_compute_ = index;
    return index;
  }

  // A compute-lane op of unit u: waits for u's parameters when it is u's first use.
  int PushCompute(OpDraft&& op, int u) {
    UnitState& st = state_[u];
    if (st.ready_op >= 0) {
      op.deps.push_back(st.ready_op);
      st.ready_op = -1;
    }
    return Push(std::move(op));
  }

  // The items of an FSDP2 copy on the compute stream: one item, what it moves (sim/cost prices
  // it), named "<what>:<unit label>". Made, and its name interned, at the unit's first copy
  // into `cached`, which every micro-batch's copy op then shares. The copy-out splits the
  // all-gather output into the parameters (param_dtype); the reduce-scatter copy-in
  // concatenates the unsharded gradients (param_dtype) into the padded input (reduce dtype).
  const ComputeItems& CopyItems(ComputeItems& cached, std::string_view what, int u,
                                FsdpCopyWork::Which which) {
    if (!cached.empty()) return cached;
    const int module = static_cast<int>(s_.modules.size());
    s_.modules.push_back(fmt::format("{}:{}", what, in_.labels[u]));
    const UnitSizes& z = in_.sizes[u];
    const MixedPrecisionPlan& mp = Unit(u).mixed_precision;
    const DType own = Unit(u).params.empty() ? DType::kFloat32 : Unit(u).params.front().dtype;
    const DType gather = mp.param_dtype.value_or(own);
    FsdpCopyWork copy;
    copy.which = which;
    if (which == FsdpCopyWork::Which::kCopyOut) {
      copy.elements = z.shard_group * z.shard_numel;
      copy.src_bytes = copy.dst_bytes = z.gathered_bytes;
      copy.src_dtype = copy.dst_dtype = gather;
    } else {
      copy.elements = z.shard_group * z.grad_numel;
      copy.src_bytes = z.grad_bytes;
      copy.dst_bytes = z.reduce_in_bytes;
      copy.src_dtype = gather;
      copy.dst_dtype = mp.reduce_dtype.value_or(gather);
    }
    ComputeItem item;
    item.kind = OpKind::kNorm;
    item.work = copy;
    item.module = module;
    cached = {std::move(item)};
    return cached;
  }

  // The unsharded accumulator of micro-steps without sync: the unit's gradients (the part a
  // reduction's copy-in reads), then its replicate params' gradients, in the reduce dtype.
  static int64_t AccumulatorGradBytes(const UnitSizes& z) {
    return z.grad_numel * z.shard_group * z.reduce_dtype_bytes;
  }
  static int64_t AccumulatorBytes(const UnitSizes& z) {
    return AccumulatorGradBytes(z) + (z.replicate_grad_bytes > 0 ? z.replicate_reduce_bytes : 0);
  }

  // FSDP2's post_backward without gradient sync folds the gradients into the accumulator on
  // the compute stream, a Python loop over the group's parameters (one kernel each):
  // `first` casts them into it (to_accumulated_grad_if_needed; nothing when they are in the
  // reduce dtype already, autograd then keeps the gradient itself), a later micro-step adds
  // them (accumulate_unsharded_grad_if_needed, +=: both read, the accumulator written).
  // Cached per unit like CopyItems.
  const ComputeItems& AccumulateItems(int u, bool first) {
    UnitState& st = state_[u];
    ComputeItems& cached = first ? st.cast_items : st.add_items;
    if (!cached.empty()) return cached;
    cached = {AccumulateItem(u, first)};
    return cached;
  }
  ComputeItem AccumulateItem(int u, bool first) {
    const UnitSizes& z = in_.sizes[u];
    const UnitPlan& unit = Unit(u);
    FsdpCopyWork w;
    w.which = FsdpCopyWork::Which::kAccumulate;
    w.elements = z.shard_group * z.grad_numel + z.replicate_grad_numel;
    w.src_dtype = z.gather_dtype;
    w.dst_dtype = z.reduce_dtype;
    const int64_t grads = z.grad_bytes + z.replicate_grad_bytes;
    const int64_t accum = AccumulatorBytes(z);
    const auto grad_params = [](const std::vector<ParamPlan>& ps) {
      return static_cast<int>(
          std::count_if(ps.begin(), ps.end(), [](const ParamPlan& p) { return p.requires_grad; }));
    };
    w.kernels = grad_params(unit.params) + grad_params(unit.replicate_params);
    if (first && z.gather_dtype == z.reduce_dtype) {
      w.kernels = 0;
    } else {
      w.src_bytes = first ? grads : grads + accum;
      w.dst_bytes = accum;
    }
    ComputeItem item;
    item.kind = OpKind::kNorm;
    item.work = w;
    item.module = static_cast<int>(s_.modules.size());
    s_.modules.push_back(fmt::format("fsdp_accumulate_grad:{}", in_.labels[u]));
    return item;
  }
  // A reduction's copy-in after micro-steps without sync: the last micro-step's gradients
  // added to the accumulator (FSDP2's post_backward_accumulate), then chunk_cat reading the sum
  // in the reduce dtype.
  const ComputeItems& AccumulatedCopyInItems(int u) {
    UnitState& st = state_[u];
    if (!st.accumulated_copy_in_items.empty()) return st.accumulated_copy_in_items;
    ComputeItems items = {AccumulateItem(u, false)};
    ComputeItem copy =
        CopyItems(st.copy_in_items, "fsdp_reduce_copy_in", u, FsdpCopyWork::Which::kReduceCopyIn)
            .front();
    auto& work = std::get<FsdpCopyWork>(copy.work);
    work.src_bytes = AccumulatorGradBytes(in_.sizes[u]);
    work.src_dtype = in_.sizes[u].reduce_dtype;
    items.push_back(std::move(copy));
    st.accumulated_copy_in_items = std::move(items);
    return st.accumulated_copy_in_items;
  }

  // ----- FSDP hooks -----
  void Unshard(int u) {
    UnitState& st = state_[u];
    if (st.gathered) return;
    const UnitSizes& z = in_.sizes[u];
    if (z.shard_numel == 0) {  // nothing to gather (FSDP2 skips empty groups)
      st.gathered = true;
      return;
    }
    const UnitPlan& unit = Unit(u);
    const OpPhase phase = PhaseOf(phase_ == Phase::kForward);
    // The host runs ahead of the GPU (schedule.h rule 4): the all-gather streams wait only for
    // the events FSDP2 orders them after, the copy-out in ag_wait_ and, after an int reshard,
    // the reshard (_reshard_after_forward_event).
    std::vector<int> issue;
    if (ag_wait_ >= 0) issue.push_back(ag_wait_);
    const bool post_forward = st.post_forward_buffer >= 0;
    if (post_forward) issue.push_back(st.post_forward_op);
    int device_shard = -1;
    int h2d = -1;
    if (unit.offload && !post_forward) {
      OpDraft copy =
          NewOp(Lane::kH2D, OpType::kCopyH2D, Id(phase, u, op_what::kH2D), "Memcpy HtoD", u);
      copy.bytes = z.shard_bytes;
      copy.deps = issue;
      device_shard = Alloc(copy, MemoryEffect::When::kStart, MemCategory::kShardedParams,
                           z.shard_bytes, z.own_dtype, u);
      h2d = Push(std::move(copy));
    }
    OpDraft copy_in = NewOp(Lane::kAllGather, OpType::kCopyIn, Id(phase, u, op_what::kCopyIn),
                            "all_gather_copy_in", u);
    // Resharded to d ranks, each rank's input is the 1/d slice kept after forward, already in
    // param_dtype.
    const int d = post_forward ? Unit(u).reshard_after_forward_ranks : 0;
    const int64_t input_bytes = post_forward ? z.gathered_bytes / d : z.shard_gather_bytes;
    copy_in.bytes = input_bytes;
    copy_in.deps = issue;
    if (h2d >= 0) copy_in.deps.push_back(h2d);
    // The caching allocator counts in program order, where the host allocates: right after
    // the compute op before the hook, even when the all-gather then runs earlier on the GPU.
    if (last_compute_ >= 0) {
      st.params_buffer = Alloc(At::Pushed(last_compute_), MemoryEffect::When::kEnd,
                               MemCategory::kUnshardedParams, z.gathered_bytes, z.gather_dtype, u);
    } else {
      st.params_buffer = Alloc(copy_in, MemoryEffect::When::kStart, MemCategory::kUnshardedParams,
                               z.gathered_bytes, z.gather_dtype, u);
    }
    int cast = -1;
    if (z.cast_in_copy_in && !post_forward) {
      cast = Alloc(copy_in, MemoryEffect::When::kStart, MemCategory::kUnshardedParams,
                   z.shard_gather_bytes, z.gather_dtype, u);
    }
    if (device_shard >= 0) Free(copy_in, MemoryEffect::When::kEnd, device_shard);
    const int group = post_forward ? groups_[u].post_forward : groups_[u].shard;
    st.output_over_group = group >= 0;
    if (group < 0) {
      // Without peers FSDP2 skips the all-gather: it casts the parameters on the compute
      // stream, then copies them into the unsharded parameters like a copy-out (measured on
      // one H200: bench/device/README.md).
      copy_in.lane = Lane::kCompute;
      Free(copy_in, MemoryEffect::When::kEnd, cast);
      st.ready_op = Push(std::move(copy_in));
    } else {
      const int copy_in_index = Push(std::move(copy_in));
      OpDraft ag = NewOp(Lane::kAllGather, OpType::kAllGather, Id(phase, u, op_what::kAllGather),
                         "ncclAllGather", u);
      ag.group = group;
      ag.bytes = z.gathered_bytes;
      ag.collective = CollectiveOf(z.gather_dtype, input_bytes);
      ag.collective.input_buffer = ag.collective.output_buffer = st.params_buffer;  // in place
      ag.deps = {copy_in_index};
      Free(ag, MemoryEffect::When::kEnd, cast);
      st.ready_op = Push(std::move(ag));
    }
    st.copy_out_pending = true;
    st.gathered = true;
  }

  // Prefetch targets in another pipeline chunk (another rank, or a later action of this one)
  // are left to their own pre-forward / pre-backward.
  void Prefetch(int u, const std::vector<std::string>& targets, std::vector<int>& resolved) {
    // Resolved once per unit: an FQN-keyed lookup per target, unit and micro-batch compared
    // long common prefixes ("model.layers.1" against "model.layers.12"), 2% of a 70B sweep's
    // time (perf).
    if (resolved.size() != targets.size()) {
      resolved.clear();
      for (const std::string& target : targets) {
        auto t = index_of_.find(target);
        resolved.push_back(
            t != index_of_.end() && in_.chunk_of[t->second] == in_.chunk_of[u] ? t->second : -1);
      }
    }
    for (int t : resolved) {
      if (t >= 0) Unshard(t);
    }
  }

  // The implicit backward prefetch (FSDPParamGroup._backward_prefetch, used when u's explicit
  // list is empty: default_prefetch): the unit whose post-forward came just before u's.
  void ImplicitBackwardPrefetch(int u) {
    const std::vector<int>& order = post_forward_order_[in_.chunk_of[u]];
    auto at = std::find(order.rbegin(), order.rend(), u);
    if (at == order.rend() || std::next(at) == order.rend()) return;
    Unshard(*std::next(at));
  }

  // wait_for_unshard: the copy-out (foreach_all_gather_copy_out, split_with_sizes_copy from
  // the all-gather output into the parameters) on the compute stream, and the all-gather
  // output's fate. In forward FSDP2 keeps it until the next unit's copy-out
  // (comm_ctx.all_gather_state), which first releases the previous one and orders the
  // all-gather streams after that one's copy-out: so a forward unit holds two unit-sized
  // buffers (params_buffer and retained_buffer_ here; the counts match FSDP2's output and
  // parameters at every point). Otherwise the output is freed after the copy-out (both exist
  // during it) and the all-gather streams wait for this copy-out.
  void CopyOut(int u) {
    UnitState& st = state_[u];
    if (!st.copy_out_pending) return;
    st.copy_out_pending = false;
    const UnitSizes& z = in_.sizes[u];
    const bool forward = phase_ == Phase::kForward;
    const bool retain = forward && st.output_over_group;
    OpDraft copy =
        NewOp(Lane::kCompute, OpType::kCompute, Id(PhaseOf(forward), u, op_what::kCopyOut),
              "FSDP::all_gather_copy_out", u);
    copy.items = CopyItems(st.copy_out_items, "fsdp_copy_out", u, FsdpCopyWork::Which::kCopyOut);
    if (st.ready_op >= 0) copy.deps.push_back(st.ready_op);
    st.ready_op = -1;
    if (retain) {
      Free(copy, MemoryEffect::When::kStart, retained_buffer_);
      if (retained_copy_out_ >= 0) ag_wait_ = retained_copy_out_;
      retained_buffer_ = Alloc(copy, MemoryEffect::When::kStart, MemCategory::kUnshardedParams,
                               z.gathered_bytes, z.gather_dtype, u);
    } else if (st.output_over_group) {
      int output = Alloc(copy, MemoryEffect::When::kStart, MemCategory::kUnshardedParams,
                         z.gathered_bytes, z.gather_dtype, u);
      Free(copy, MemoryEffect::When::kEnd, output);
    }
    Free(copy, MemoryEffect::When::kEnd, st.post_forward_buffer);  // to_unsharded
    const int index = Push(std::move(copy));
    (retain ? retained_copy_out_ : ag_wait_) = index;
  }

  void Reshard(int u, At at) {
    UnitState& st = state_[u];
    if (!st.gathered) return;
    Free(at, MemoryEffect::When::kEnd, st.params_buffer);
    st.gathered = false;
    st.ready_op = -1;
  }

  // ----- forward -----
  void Forward(int u) {
    const Phase saved = phase_;
    phase_ = Phase::kForward;
    if (IsRoot(u)) {
      // Root pre-forward: the all-gather streams wait for the current stream once.
      ag_wait_ = last_compute_;
      post_forward_order_[in_.chunk_of[u]].clear();
    }
    // Pre-forward: unshard, copy out, then the explicit forward list on top of that.
    Unshard(u);
    CopyOut(u);
    Prefetch(u, Unit(u).forward_prefetch, state_[u].forward_targets);
    UnitState& st = state_[u];
    std::vector<int>& act = st.chunk_activation_buffers[micro_];
    act.assign(in_.chunk_counts[u], -1);
    CommCounters counters;
    const CheckpointMode mode = ModeOf(u);
    bool root_post_forward = false;
    for (const WorkSegment& seg : in_.segments[u]) {
      if (seg.kind == WorkSegment::Kind::kUnit) {
        Forward(seg.unit);
        continue;
      }
      if (seg.kind == WorkSegment::Kind::kComm) {
        EmitComms(u, seg.entries[0], kFwd, counters);
        continue;
      }
      // A loss outside the model runs after the root's forward has returned.
      if (LossOutsideRoot(u) && LossOnly(u, seg)) root_post_forward = RootPostForward(u);
      OpDraft op = NewOp(Lane::kCompute, OpType::kCompute,
                         Id(OpPhase::kForward, u, op_what::kCompute, seg.chunk), "forward", u);
      int64_t saved_bytes = 0, workspace = 0;
      op.items = Items(u, seg, Phase::kForward);
      for (int e : seg.entries) {
        const ComputeItem& item = in_.work[u].entries[e].item;
        if (mode != CheckpointMode::kSelectiveOp) {
          saved_bytes += item.cost.saved_bytes_none;
        } else if (!recomputed_mm_[u][e]) {
          saved_bytes += item.cost.saved_bytes_selective;
        }
        // The loss's logits and their fp32 copy are transient, one buffer each (what the
        // allocator sees); what it keeps for backward (the fp32 log-probabilities) is in its
        // saved bytes.
        if (item.kind == OpKind::kLoss) continue;
        workspace = std::max(workspace, item.cost.workspace_bytes);
      }
      if (mode == CheckpointMode::kFull) saved_bytes = 0;
      if (mode == CheckpointMode::kFull || mode == CheckpointMode::kSelectiveOp) {
        if (!st.input_buffer.count(micro_)) {
          st.input_buffer[micro_] = Alloc(op, MemoryEffect::When::kStart, MemCategory::kActivations,
                                          in_.work[u].input_bytes, in_.compute_dtype, u);
        }
      }
      act[seg.chunk] = Alloc(op, MemoryEffect::When::kStart, MemCategory::kActivations, saved_bytes,
                             in_.compute_dtype, u);
      int ws = Alloc(op, MemoryEffect::When::kStart, MemCategory::kTemporaries, workspace,
                     DType::kUInt8, u);
      Free(op, MemoryEffect::When::kEnd, ws);
      AllocLossTensors(u, seg, op, /*backward=*/false);
      PushCompute(std::move(op), u);
    }
    // Post-forward: reshard (the root keeps its parameters into backward), to the full shard
    // group or, for reshard_after_forward = d, to a 1/d slice cloned out of the parameters.
    const bool keep = IsRoot(u) || !Unit(u).reshard_after_forward;
    if (!keep && last_compute_ >= 0) {
      const At end = At::Pushed(last_compute_);
      const int d = Unit(u).reshard_after_forward_ranks;
      if (d > 1 && st.gathered && st.params_buffer >= 0) {
        const UnitSizes& z = in_.sizes[u];
        st.post_forward_buffer = Alloc(end, MemoryEffect::When::kEnd, MemCategory::kUnshardedParams,
                                       z.gathered_bytes / d, z.gather_dtype, u);
        st.post_forward_op = last_compute_;
      }
      Reshard(u, end);
    }
    post_forward_order_[in_.chunk_of[u]].push_back(u);
    if (!root_post_forward) RootPostForward(u);
    phase_ = saved;
  }

  // The forward root's post-forward releases the last retained all-gather output; true when
  // u is the root.
  bool RootPostForward(int u) {
    if (!IsRoot(u) || last_compute_ < 0) return false;
    Free(At::Pushed(last_compute_), MemoryEffect::When::kEnd, retained_buffer_);
    if (retained_copy_out_ >= 0) ag_wait_ = retained_copy_out_;
    retained_copy_out_ = -1;
    return true;
  }

  // Where the loss runs (model.implementation): transformers computes it inside the root's
  // forward (from labels), torchtitan outside the model, on its output. FSDP2's root hooks
  // follow: the post-forward comes after the loss or before it, and the pre-backward hook,
  // registered on the root's outputs, fires on the loss or on the logits' gradient, after the
  // loss backward.
  bool LossOutsideRoot(int u) const {
    return IsRoot(u) && in_.options->implementation == Implementation::kTorchtitan;
  }
  bool LossOnly(int u, const WorkSegment& seg) const {
    if (seg.kind != WorkSegment::Kind::kChunk || seg.entries.empty()) return false;
    return std::all_of(seg.entries.begin(), seg.entries.end(),
                       [&](int e) { return in_.work[u].entries[e].item.kind == OpKind::kLoss; });
  }

  // The collectives of entry `e` of unit u: its forward list in forward (`kFwd`) or in
  // recomputation (`kRecompute`, op_ids "recompute_<what>"), its backward list in backward.
  enum CommPass { kFwd, kBwd, kRecompute, kCommPasses };
  void EmitComms(int u, int e, CommPass pass, CommCounters& counters) {
    const WorkEntry& entry = in_.work[u].entries[e];
    const std::vector<CommSpec>& comms = pass == kBwd ? entry.bwd : entry.fwd;
    const std::string_view prefix = pass == kRecompute ? "recompute_" : "";
    std::vector<ScheduleOp>& made = CommTemplates(u, e, pass);
    for (size_t i = 0; i < comms.size(); ++i) {
      const CommSpec& c = comms[i];
      const int k = counters.Next(prefix, c.what);
      if (i == made.size()) made.push_back(CommTemplate(u, pass, c, prefix));

      // Only the op_id's index (the counters') and micro-batch differ from one emission of the
      // list to the next.
      OpDraft op = NewDraft();
      static_cast<ScheduleOp&>(op) = made[i];
      op.id.index = k;
      op.id.micro = micro_steps_ > 1 ? micro_ : -1;
      op.micro_step = micro_;
      PushCompute(std::move(op), u);
    }
  }

  // The op of collective `c` of unit u, less what EmitComms sets per emission: made once per
  // unit, entry and pass and copied for every micro-batch. Forming it (its words, its group,
  // its collective) per op was a tenth of the builder's instructions with tensor parallelism,
  // whose collectives are most of a step's ops (callgrind, TP 8 x PP 8 x 64).
  ScheduleOp CommTemplate(int u, CommPass pass, const CommSpec& c, std::string_view prefix) {
    std::string_view what = c.what;
    if (!prefix.empty()) {
      comm_what_.assign(prefix);
      comm_what_ += c.what;
      what = comm_what_;
    }
    OpDraft op = NewOp(Lane::kCompute, c.type, IdOfText(PhaseOf(pass == kFwd), u, what),
                       NcclName(c.type), u);
    auto mapped = remap_.find(c.group);
    op.group = mapped == remap_.end() ? c.group : mapped->second;
    op.bytes = c.bytes;
    // Activations in the compute dtype; all-gather and reduce-scatter sizes are n shards.
    const bool sharded = c.type == OpType::kAllGather || c.type == OpType::kReduceScatter;
    const int n = op.group >= 0 ? s_.groups[op.group].size() : 1;
    op.collective = CollectiveOf(in_.compute_dtype, sharded ? c.bytes / n : c.bytes);
    if (c.type == OpType::kAllReduce || c.type == OpType::kReduceScatter) {
      op.collective.reduce = CollectiveReduce::kSum;  // partial sums
    }
    return std::move(static_cast<ScheduleOp&>(op));
  }
  std::vector<ScheduleOp>& CommTemplates(int u, int e, CommPass pass) {
    std::vector<std::array<std::vector<ScheduleOp>, kCommPasses>>& unit = comm_templates_[u];
    if (unit.empty()) unit.resize(in_.work[u].entries.size());
    return unit[e][pass];
  }

  static StaticWord NcclName(OpType t) {
    switch (t) {
      case OpType::kAllGather:
        return "ncclAllGather";
      case OpType::kReduceScatter:
        return "ncclReduceScatter";
      case OpType::kAllReduce:
        return "ncclAllReduce";
      case OpType::kAllToAll:
        return "ncclAllToAll";
      case OpType::kSend:
        return "ncclSend";
      case OpType::kRecv:
        return "ncclRecv";
      default:
        return "nccl";
    }
  }

  // ----- backward -----
  void Backward(int u) {
    phase_ = Phase::kBackward;
    const auto& segs = in_.segments[u];
    auto it = segs.rbegin();
    int bwd_chunk = 0;
    // A loss outside the model runs its backward before the root's pre-backward hook fires.
    if (LossOutsideRoot(u)) {
      for (; it != segs.rend() && LossOnly(u, *it); ++it) BackwardChunk(u, *it, bwd_chunk++);
    }
    // Pre-backward: unshard, copy out, then prefetch: the explicit list replaces the implicit
    // one-ahead prefetch, an empty one keeps it (FSDPState._pre_backward's default_prefetch),
    // so depth 0 is FSDP2's default and backward prefetch never stops. The root's list is
    // empty: its hook prefetches the last unit as backward begins (before the loss backward
    // when the loss is inside the root).
    Unshard(u);
    CopyOut(u);
    if (Unit(u).backward_prefetch.empty()) {
      ImplicitBackwardPrefetch(u);
    } else {
      Prefetch(u, Unit(u).backward_prefetch, state_[u].backward_targets);
    }
    if (ModeOf(u) == CheckpointMode::kFull) Recompute(u);
    CommCounters counters;
    for (; it != segs.rend(); ++it) {
      if (it->kind == WorkSegment::Kind::kUnit) {
        Backward(it->unit);
        phase_ = Phase::kBackward;
        continue;
      }
      if (it->kind == WorkSegment::Kind::kComm) {
        EmitComms(u, it->entries[0], kBwd, counters);
        continue;
      }
      BackwardChunk(u, *it, bwd_chunk++);
    }
    PostBackward(u);
  }

  // The backward of one chunk of u's own items (`index`: its position in u's backward).
  void BackwardChunk(int u, const WorkSegment& seg, int index) {
    UnitState& st = state_[u];
    const CheckpointMode mode = ModeOf(u);
    OpDraft op = NewOp(Lane::kCompute, OpType::kCompute,
                       Id(OpPhase::kBackward, u, op_what::kCompute, index), "backward", u);
    int64_t workspace = 0;
    op.items = Items(u, seg, Phase::kBackward);
    bool only_loss = true;  // the loss region: no parameter gradient exists yet
    for (auto e = seg.entries.rbegin(); e != seg.entries.rend(); ++e) {
      const ComputeItem& fwd = in_.work[u].entries[*e].item;
      if (fwd.kind != OpKind::kLoss) {
        workspace = std::max(workspace,
                             std::max(fwd.cost.workspace_bytes, fwd.cost.backward_workspace_bytes));
      }
      only_loss = only_loss && fwd.kind == OpKind::kLoss;
    }
    if (!only_loss) AllocGrads(u, op, MemoryEffect::When::kStart, seg.chunk);
    if (mode == CheckpointMode::kSelectiveOp && index == 0) {
      st.recompute_buffer = Alloc(op, MemoryEffect::When::kStart, MemCategory::kTemporaries,
                                  SelectiveRegeneratedBytes(u), in_.compute_dtype, u);
    }
    int ws = Alloc(op, MemoryEffect::When::kStart, MemCategory::kTemporaries, workspace,
                   DType::kUInt8, u);
    Free(op, MemoryEffect::When::kEnd, ws);
    AllocLossTensors(u, seg, op, /*backward=*/true);
    Free(op, MemoryEffect::When::kEnd, st.chunk_activation_buffers[micro_][seg.chunk]);
    PushCompute(std::move(op), u);
  }

  // The loss region's transients (loss_region.h) of the chunk's loss items, one buffer per
  // tensor, live while the op runs.
  void AllocLossTensors(int u, const WorkSegment& seg, At op, bool backward) {
    for (int e : seg.entries) {
      const ComputeItem& item = in_.work[u].entries[e].item;
      const auto* loss = std::get_if<LossWork>(&item.work);
      if (item.kind != OpKind::kLoss || loss == nullptr) continue;
      const LossRegion region = LossRegionTensors(*loss);
      for (int64_t bytes : backward ? region.backward : region.forward) {
        int b = Alloc(op, MemoryEffect::When::kStart, MemCategory::kTemporaries, bytes,
                      DType::kUInt8, u);
        Free(op, MemoryEffect::When::kEnd, b);
      }
    }
  }

  // What selective_op's recomputation regenerates for u's backward: everything mode none
  // would have saved, less what the selective policy did save.
  int64_t SelectiveRegeneratedBytes(int u) const {
    int64_t none = 0, kept = 0;
    const std::vector<WorkEntry>& entries = in_.work[u].entries;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].kind != WorkEntry::Kind::kItem) continue;
      none += entries[i].item.cost.saved_bytes_none;
      if (!recomputed_mm_[u][i]) kept += entries[i].item.cost.saved_bytes_selective;
    }
    return std::max<int64_t>(0, none - kept);
  }

  void Recompute(int u) {
    UnitState& st = state_[u];
    CommCounters counters;
    bool first = true;
    for (const WorkSegment& seg : in_.segments[u]) {
      if (seg.kind == WorkSegment::Kind::kUnit) continue;  // nested units recompute on their own
      if (seg.kind == WorkSegment::Kind::kComm) {
        EmitComms(u, seg.entries[0], kRecompute, counters);
        continue;
      }
      OpDraft op = NewOp(Lane::kCompute, OpType::kCompute,
                         Id(OpPhase::kBackward, u, op_what::kRecompute, seg.chunk), "recompute", u);
      int64_t workspace = 0;
      op.items = Items(u, seg, Phase::kRecompute);
      for (int e : seg.entries) {
        workspace = std::max(workspace, in_.work[u].entries[e].item.cost.workspace_bytes);
      }
      if (first) {
        // The whole unit's saved tensors, regenerated chunk by chunk, freed after backward.
        int64_t total = 0;
        for (const WorkEntry& e : in_.work[u].entries) {
          if (e.kind == WorkEntry::Kind::kItem) total += e.item.cost.saved_bytes_none;
        }
        st.recompute_buffer = Alloc(op, MemoryEffect::When::kStart, MemCategory::kTemporaries,
                                    total, in_.compute_dtype, u);
        first = false;
      }
      int ws = Alloc(op, MemoryEffect::When::kStart, MemCategory::kTemporaries, workspace,
                     DType::kUInt8, u);
      Free(op, MemoryEffect::When::kEnd, ws);
      PushCompute(std::move(op), u);
    }
  }

  // Unsharded gradients appear as autograd produces them (FSDP2 leaves each parameter's .grad
  // to autograd until post-backward): a chunk's backward allocates the gradients of the
  // parameters its modules own; the unit's first allocation also takes those of parameters no
  // item owns and the replicate gradients; chunk -1 (post-backward) whatever is left. A unit
  // of one chunk (a decoder layer) allocates all at its backward's start, as before; the root
  // allocates its head's gradients at the head's backward and the embedding's at the end.
  // Each buffer names the parameters it holds (Buffer::grads_of), which the executor follows.
  void AllocGrads(int u, At op, MemoryEffect::When when, int chunk = -1) {
    UnitState& st = state_[u];
    if (st.grads_allocated) return;
    const UnitSizes& z = in_.sizes[u];
    const std::vector<GradGroup>& groups = in_.grad_groups[u];
    std::vector<char>& taken = st.grad_group_allocated;
    taken.resize(groups.size(), 0);
    const bool first = std::none_of(taken.begin(), taken.end(), [](char t) { return t != 0; });
    // The parameters' names only when the schedule is to carry them (the executor's); the
    // simulator's schedules skip the list (one per backward chunk and micro-batch).
    const bool names = in_.options->grad_param_names;
    std::vector<int> params;
    int64_t bytes = 0;
    auto take = [&](size_t g) {
      if (taken[g]) return;
      taken[g] = 1;
      if (names) params.insert(params.end(), groups[g].params.begin(), groups[g].params.end());
      bytes += groups[g].bytes;
    };
    if (chunk >= 0) {
      take(static_cast<size_t>(chunk));
      if (first) take(groups.size() - 1);
    } else {
      for (size_t g = 0; g < groups.size(); ++g) take(g);
    }
    std::sort(params.begin(), params.end());
    const int buffer = Alloc(op, when, MemCategory::kUnshardedGrads, bytes, z.gather_dtype, u);
    if (buffer >= 0) {
      if (names) {
        for (int p : params) s_.buffers[buffer].grads_of.push_back(Unit(u).params[p].fqn);
      }
      (st.grad_buffer < 0 ? st.grad_buffer : st.later_grad_buffers.emplace_back()) = buffer;
    }
    if (first) {
      st.replicate_grad_buffer =
          Alloc(op, when, MemCategory::kUnshardedGrads, z.replicate_grad_bytes, z.gather_dtype, u);
      if (st.replicate_grad_buffer >= 0 && names) {
        for (const ParamPlan& p : Unit(u).replicate_params) {
          if (p.requires_grad) s_.buffers[st.replicate_grad_buffer].grads_of.push_back(p.fqn);
        }
      }
    }
    st.grads_allocated = std::all_of(taken.begin(), taken.end(), [](char t) { return t != 0; });
  }
  void FreeGrads(int u, At op, MemoryEffect::When when) {
    UnitState& st = state_[u];
    Free(op, when, st.grad_buffer);
    for (int& b : st.later_grad_buffers) Free(op, when, b);
    st.later_grad_buffers.clear();
    st.grad_group_allocated.clear();
  }

  void PostBackward(int u) {
    UnitState& st = state_[u];
    const UnitSizes& z = in_.sizes[u];
    const bool final_micro =
        micro_ == micro_steps_ - 1 ||
        (in_.pass_micro_batches > 0 && (micro_ + 1) % in_.pass_micro_batches == 0);
    const bool reduce = final_micro || in_.sync_every_micro;
    const bool reshard = final_micro || in_.reshard_every_micro;
    if (last_compute_ < 0) return;
    int last = last_compute_;  // the unit's last backward op, then its reduce copy-in
    const At end = At::Pushed(last);
    AllocGrads(u, end, MemoryEffect::When::kEnd);
    Free(end, MemoryEffect::When::kEnd, st.recompute_buffer);
    if (auto in = st.input_buffer.find(micro_); in != st.input_buffer.end()) {
      Free(end, MemoryEffect::When::kEnd, in->second);
      st.input_buffer.erase(in);
    }
    st.chunk_activation_buffers.erase(micro_);
    // A pass's last micro-batch under a pipeline: its backward too runs with gradient sync and
    // reshard after backward off, and the stage calls every group's post_backward once the
    // chunk's backward is done (torch.distributed.pipelining, backward_maybe_with_nosync's
    // run_post_backward): each unit's reshard and reduction wait for its chunk root's.
    const bool defer = final_micro && in_.pass_micro_batches > 0 && !IsRoot(u);
    if (reshard && !defer) Reshard(u, end);
    st.grads_allocated = false;
    if (defer) {
      deferred_post_backward_.push_back(u);
      return;
    }
    if (!reduce) {
      // Non-final micro-step without sync: the gradients folded into the unsharded accumulator
      // (allocated by the first fold) by their own op after the unit's last backward op, then
      // dropped.
      const int64_t accum = AccumulatorBytes(z);
      if (accum <= 0) {
        FreeGrads(u, At::Pushed(last), MemoryEffect::When::kEnd);
        Free(At::Pushed(last), MemoryEffect::When::kEnd, st.replicate_grad_buffer);
        return;
      }
      const bool first = st.accum_buffer < 0;
      OpDraft fold =
          NewOp(Lane::kCompute, OpType::kCompute,
                Id(OpPhase::kBackward, u, op_what::kAccumulateGrad), "fsdp::accumulate_grad", u);
      fold.items = AccumulateItems(u, first);
      fold.deps = {last};
      if (first) {
        st.accum_buffer = Alloc(fold, MemoryEffect::When::kStart, MemCategory::kUnshardedGrads,
                                accum, z.reduce_dtype, u);
      }
      FreeGrads(u, fold, MemoryEffect::When::kEnd);
      Free(fold, MemoryEffect::When::kEnd, st.replicate_grad_buffer);
      Push(std::move(fold));
      return;
    }
    if (IsRoot(u)) {
      // The chunk's deferred post_backwards, in the order their backwards ended, after the
      // root's own backward; the root's reduction follows them.
      std::vector<int> deferred;
      deferred.swap(deferred_post_backward_);
      for (int v : deferred) {
        Reshard(v, At::Pushed(last_compute_));
        Reduce(v, last_compute_);
      }
      last = last_compute_;
    }
    Reduce(u, last);
  }

  // The unit's gradient reduction after `last` (its last backward op, or under a pipeline
  // the chunk's): the copy-in on the compute lane, the reduce-scatter, HSDP's all-reduce, the
  // replicate params' all-reduce; the unsharded gradients and accumulator freed with it.
  void Reduce(int u, int last) {
    UnitState& st = state_[u];
    const UnitSizes& z = in_.sizes[u];
    const UnitGroups& g = groups_[u];
    int reduced = -1;  // op after which the reduced shard exists
    int out_buffer = -1;
    const GradientReduction reduction =
        GradientReductionOf(Unit(u), z.reduce_dtype, z.shard_group * z.replicate_group);
    if (z.grad_numel > 0 && s_.ops[last].type == OpType::kCompute) {
      // foreach_reduce_scatter_copy_in (chunk_cat) runs on the compute stream before the
      // reduce-scatter stream waits on it (with S = 1 too): read the unsharded gradients,
      // write the reduce-scatter input in the reduce dtype. Its own op after the unit's last
      // backward op; the reduction below waits for it.
      OpDraft copy = NewOp(Lane::kCompute, OpType::kCompute,
                           Id(OpPhase::kBackward, u, op_what::kReduceCopyIn), "fsdp::chunk_cat", u);
      copy.items = st.accum_buffer >= 0 ? AccumulatedCopyInItems(u)
                                        : CopyItems(st.copy_in_items, "fsdp_reduce_copy_in", u,
                                                    FsdpCopyWork::Which::kReduceCopyIn);
      last = Push(std::move(copy));
    }
    if (z.grad_numel > 0) {
      if (g.shard >= 0) {
        OpDraft rs =
            NewOp(Lane::kReduceScatter, OpType::kReduceScatter,
                  Id(OpPhase::kBackward, u, op_what::kReduceScatter), "ncclReduceScatter", u);
        rs.group = g.shard;
        rs.bytes = z.reduce_in_bytes;
        rs.collective = CollectiveOf(z.reduce_dtype, z.reduce_out_bytes);
        rs.collective.reduce = reduction.op;
        rs.collective.pre_scale = reduction.pre_scale;
        if (g.replicate < 0) rs.collective.post_scale = reduction.post_scale;
        rs.deps = {last};
        if (prev_reduce_scatter_ >= 0) rs.deps.push_back(prev_reduce_scatter_);
        int in_buffer = Alloc(rs, MemoryEffect::When::kStart, MemCategory::kCommBuffers,
                              z.reduce_in_bytes, z.reduce_dtype, u);
        out_buffer = Alloc(rs, MemoryEffect::When::kStart, MemCategory::kCommBuffers,
                           z.reduce_out_bytes, z.reduce_dtype, u);
        rs.collective.input_buffer = in_buffer;
        rs.collective.output_buffer = out_buffer;
        Free(rs, MemoryEffect::When::kEnd, in_buffer);
        FreeGrads(u, rs, MemoryEffect::When::kEnd);
        Free(rs, MemoryEffect::When::kEnd, st.accum_buffer);
        // The compute stream waits for the previous reduce-scatter before issuing this one.
        if (prev_reduce_scatter_ >= 0) barrier_.push_back(prev_reduce_scatter_);
        reduced = Push(std::move(rs));
        prev_reduce_scatter_ = reduced;
      } else {
        // S == 1: the "reduction" is a local cast into the output buffer.
        const At e = At::Pushed(last);
        out_buffer = Alloc(e, MemoryEffect::When::kEnd, MemCategory::kCommBuffers,
                           z.reduce_out_bytes, z.reduce_dtype, u);
        FreeGrads(u, e, MemoryEffect::When::kEnd);
        Free(e, MemoryEffect::When::kEnd, st.accum_buffer);
        reduced = last;
      }
      if (g.replicate >= 0) {
        OpDraft ar = NewOp(Lane::kAllReduce, OpType::kAllReduce,
                           Id(OpPhase::kBackward, u, op_what::kAllReduce), "ncclAllReduce", u);
        ar.group = g.replicate;
        ar.bytes = z.reduce_out_bytes;
        ar.collective = CollectiveOf(z.reduce_dtype, z.reduce_out_bytes);
        ar.collective.reduce = reduction.op;
        ar.collective.post_scale = reduction.post_scale;
        if (g.shard < 0) ar.collective.pre_scale = reduction.pre_scale;
        ar.collective.input_buffer = ar.collective.output_buffer = out_buffer;  // in place
        ar.deps = {reduced};
        reduced = Push(std::move(ar));
      }
      reduced = FinishReduced(u, reduced, out_buffer, z.reduce_out_bytes, op_what::kD2H);
    } else {
      FreeGrads(u, At::Pushed(last), MemoryEffect::When::kEnd);
      Free(At::Pushed(last), MemoryEffect::When::kEnd, st.accum_buffer);
    }
    // Freed with the reduction: a later pass (pipeline accumulation) starts its own.
    st.accum_buffer = -1;
    if (z.replicate_grad_bytes > 0) {
      int rep = -1;
      if (g.flat >= 0) {
        OpDraft ar =
            NewOp(Lane::kAllReduce, OpType::kAllReduce,
                  Id(OpPhase::kBackward, u, op_what::kAllReduceReplicate), "ncclAllReduce", u);
        ar.group = g.flat;
        ar.bytes = z.replicate_reduce_bytes;
        const GradientReduction whole =
            GradientReductionOf(Unit(u), z.reduce_dtype, s_.groups[g.flat].size());
        ar.collective = CollectiveOf(z.reduce_dtype, z.replicate_reduce_bytes);
        ar.collective.reduce = whole.op;
        ar.collective.pre_scale = whole.pre_scale;
        ar.collective.post_scale = whole.post_scale;
        ar.collective.input_buffer = ar.collective.output_buffer = st.replicate_grad_buffer;
        ar.deps = {last};
        Free(ar, MemoryEffect::When::kEnd, st.replicate_grad_buffer);
        rep = Push(std::move(ar));
      } else {
        Free(At::Pushed(last), MemoryEffect::When::kEnd, st.replicate_grad_buffer);
        rep = last;
      }
      int none = -1;
      rep = FinishReduced(u, rep, none, 0, op_what::kD2HReplicate);
      reductions_.push_back(rep);
    }
    if (reduced >= 0) reductions_.push_back(reduced);
  }

  // The unit's reduced gradient lands at `reduced`: its sharded gradients appear on the device
  // (once per step), and the transient reduction output is freed there, or, with offload,
  // copied to the host first.
  int FinishReduced(int u, int reduced, int& out_buffer, int64_t bytes, StaticWord what) {
    UnitState& st = state_[u];
    if (!Unit(u).offload && !st.sharded_grads_landed) {
      // FSDP2 assigns the reduced shard as the parameter's .grad (set_to_none: a new tensor),
      // kept until the next step's zero_grad, which the optimizer's end stands for.
      sharded_grads_.push_back(Alloc(At::Pushed(reduced), MemoryEffect::When::kEnd,
                                     MemCategory::kShardedGrads, in_.sizes[u].sharded_grad_bytes,
                                     in_.sizes[u].own_dtype, u));
      st.sharded_grads_landed = true;
    }
    if (Unit(u).offload) {
      OpDraft d2h =
          NewOp(Lane::kD2H, OpType::kCopyD2H, Id(OpPhase::kBackward, u, what), "Memcpy DtoH", u);
      d2h.bytes = bytes > 0 ? bytes : in_.sizes[u].replicate_reduce_bytes;
      d2h.deps = {reduced};
      Free(d2h, MemoryEffect::When::kEnd, out_buffer);
      return Push(std::move(d2h));
    }
    Free(At::Pushed(reduced), MemoryEffect::When::kEnd, out_buffer);
    return reduced;
  }

  // ----- step end -----
  void EmitOptimizer() {
    micro_ = micro_steps_ - 1;
    OpDraft wait = NewOp(Lane::kCompute, OpType::kWait, StepId(op_what::kWaitReductions),
                         "wait_for_reductions", -1);
    wait.deps = reductions_;
    const int wait_index = Push(std::move(wait));
    bool host = false;
    OpDraft opt = NewOpOfText(Lane::kCompute, OpType::kOptimizer, StepId(op_what::kOptimizer),
                              "Optimizer.step#" + in_.options->optimizer, -1);
    const bool moments = in_.options->optimizer != "sgd";
    std::vector<int> temps;
    for (int u : role_units_) {
      const UnitSizes& z = in_.sizes[u];
      if (z.optimizer_numel == 0) continue;
      host = host || Unit(u).offload;
      // The step over this unit's parameters after torchtitan's gradient-norm clipping, as
      // PyTorch's default implementation runs it (foreach: multi-tensor kernels, one per
      // elementwise step; torchtitan's default too: fused off). Gradients are stored in the
      // parameter's dtype; sim/cost prices the kernels' traffic and launches.
      const UnitPlan& plan = Unit(u);
      OptimizerWork work;
      work.kind = in_.options->optimizer == "sgd"    ? OptimizerKind::kSgd
                  : in_.options->optimizer == "adam" ? OptimizerKind::kAdam
                                                     : OptimizerKind::kAdamW;
      work.impl = OptimizerImpl::kForeach;
      work.elements = z.optimizer_numel;
      work.param_bytes = work.grad_bytes = z.optimizer_param_bytes;
      work.param_dtype = work.grad_dtype = !plan.params.empty() ? plan.params.front().dtype
                                           : !plan.replicate_params.empty()
                                               ? plan.replicate_params.front().dtype
                                               : DType::kFloat32;
      work.state_dtype = DType::kFloat32;
      ComputeItem item;
      item.kind = OpKind::kNorm;
      item.work = work;
      item.module = static_cast<int>(s_.modules.size());
      s_.modules.push_back("optimizer:" + in_.labels[u]);
      opt.items.push_back(std::move(item));
      // _multi_tensor_adamw's denominator: torch._foreach_sqrt(exp_avg_sqs) allocates a
      // state-dtype tensor per parameter for the whole step (confirmed on an H200:
      // bench/device/README.md).
      if (moments && !Unit(u).offload) {
        const int denom =
            Alloc(opt, MemoryEffect::When::kStart, MemCategory::kTemporaries,
                  DTypeBytes(work.state_dtype) * z.optimizer_numel, work.state_dtype, u);
        temps.push_back(denom);
      }
    }
    for (int t : temps) Free(opt, MemoryEffect::When::kEnd, t);
    for (int g : sharded_grads_) Free(opt, MemoryEffect::When::kEnd, g);
    opt.on_host = host;
    opt.deps = {wait_index};
    Push(std::move(opt));
  }

  const StepInputs& in_;
  std::vector<UnitGroups> groups_;
  std::vector<int> role_units_;
  std::map<int, int> remap_;
  std::string comm_what_;  // CommTemplate: the prefixed kind, its buffer reused op to op
  // Per unit (filled at its first collective), entry and CommPass: CommTemplate's ops.
  std::vector<std::vector<std::array<std::vector<ScheduleOp>, kCommPasses>>> comm_templates_;
  int role_ = 0;
  Schedule& s_;
  Words& words_;
  EffectLog& effects_;
  // Vectors of pushed drafts, emptied, for the next drafts (NewOp).
  std::vector<std::vector<int>> spare_deps_;
  std::vector<std::vector<MemoryEffect>> spare_memory_;
  std::vector<int32_t> label_words_;  // per unit: its label's index in words_ (-1: not yet)
  static constexpr int32_t kNoWord = -2;
  std::vector<int32_t> unit_words_;  // per unit: its FQN's (-1: the root's ""; kNoWord: not yet)
  std::vector<std::vector<char>>
      recomputed_mm_;  // per unit, per entry: selective_op:K recomputes it
  std::vector<UnitState> state_;
  // Per unit and chunk, the item lists of the forward, recompute and backward (Items).
  std::vector<std::vector<std::array<ComputeItems, 3>>> item_lists_;
  std::map<std::string, int> index_of_;  // unit FQN → index
  std::vector<int> barrier_;             // deps for the next compute-lane op
  std::vector<int> reductions_;          // ops the end-of-backward wait joins
  std::vector<int> sharded_grads_;       // reduced gradients, live until the optimizer's end
  int prev_reduce_scatter_ = -1;
  int last_compute_ = -1;
  int ag_wait_ = -1;  // the op the all-gather streams were last ordered after (a copy-out)
  // Forward: the all-gather output FSDP2 keeps until the next copy-out, and that copy-out.
  int retained_buffer_ = -1;
  int retained_copy_out_ = -1;
  std::map<int, std::vector<int>> post_forward_order_;  // per model chunk, its last forward
  int micro_ = 0;
  int micro_steps_ = 1;
  // Units whose post_backward waits for their chunk root's (a pipeline pass's last
  // micro-batch), in the order their backwards ended.
  std::vector<int> deferred_post_backward_;
  Phase phase_ = Phase::kForward;
};

RoleEmitter::RoleEmitter(const StepInputs& in, std::vector<UnitGroups> groups,
                         std::vector<int> units, std::map<int, int> group_remap, int role,
                         Schedule& schedule, Words& words, EffectLog& effects)
    : impl_(std::make_unique<Impl>(in, std::move(groups), std::move(units), std::move(group_remap),
                                   role, schedule, words, effects)) {}
RoleEmitter::~RoleEmitter() = default;

void RoleEmitter::Forward(int chunk_root, int micro, const std::vector<int>& waits) {
  impl_->ForwardChunk(chunk_root, micro, waits);
}
void RoleEmitter::Backward(int chunk_root, int micro, const std::vector<int>& waits) {
  impl_->BackwardChunk(chunk_root, micro, waits);
}
int RoleEmitter::Send(NamedOpId op_id, int group, int64_t bytes, int micro) {
  return impl_->SendOp(std::move(op_id), group, bytes, micro);
}
int RoleEmitter::Recv(NamedOpId op_id, int group, int peer_send, int micro) {
  return impl_->RecvOp(std::move(op_id), group, peer_send, micro);
}
void RoleEmitter::Finish() { impl_->Finish(); }

void EffectLog::Commit(Schedule& schedule) {
  // Counted, then placed: each op's effects in the order they were added.
  const size_t n = schedule.ops.size();
  std::vector<int32_t> first(n + 1, 0);
  for (const Entry& e : log_) ++first[static_cast<size_t>(e.op) + 1];
  for (size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  for (size_t i = 0; i < n; ++i)
    schedule.ops[i].memory = OpRange(first[i], first[i + 1] - first[i]);
  schedule.effect_list.resize(log_.size());
  for (const Entry& e : log_) schedule.effect_list[first[e.op]++] = e.effect;
  log_.clear();
}

int32_t Words::OfStatic(StaticWord word) {
  const std::string_view text = word.text();
  Seen& k = known_[(reinterpret_cast<uintptr_t>(text.data()) >> 3 ^ text.size()) % kKnown];
  if (k.data == text.data() && k.size == text.size()) {
    assert(schedule_.words[k.index] == text);
    return k.index;
  }
  const int32_t index = Of(text);
  k = {text.data(), text.size(), index};
  return index;
}

int32_t Words::Of(std::string_view word) {
  Seen& r = recent_[(reinterpret_cast<uintptr_t>(word.data()) >> 3 ^ word.size()) % kRecent];
  // The same address may hold another word by now (a reused buffer): the text decides.
  if (r.data == word.data() && r.size == word.size() && r.index >= 0 &&
      schedule_.words[r.index] == word) {
    return r.index;
  }
  int32_t k;
  if (const auto it = index_.find(word); it != index_.end()) {
    k = it->second;
  } else {
    k = static_cast<int32_t>(schedule_.words.size());
    schedule_.words.emplace_back(word);
    index_.emplace(keys_.emplace_back(word), k);
  }
  r = {word.data(), word.size(), k};
  return k;
}

}  // namespace shardscope
