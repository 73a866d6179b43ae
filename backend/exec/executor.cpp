#include "backend/exec/executor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include "backend/exec/issue_order.h"
#include "backend/exec/measured_memory.h"
#include "backend/exec/param_state.h"
#include "backend/exec/work_kernels.h"
#include "core/trace/op_id.h"
#include "core/util/units.h"

namespace shardscope::backend {
namespace {

// CPU time of the calling thread: the issue overhead, whatever else competes for the cores.
int64_t ThreadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// The peer of a pipeline send / receive: its position in the pair's group. The schedule
// builder (EmitPipeline) gives each hop "pp:<from>-><to>" the two ranks at this rank's place
// in the two stages; a send goes to the other one, a receive comes from it (a hop within one
// stage, pp = 1 with virtual stages, is this rank itself).
Result<int> PipelinePeer(const Schedule& s, const ScheduleOp& op, const ProcessGroup& g, int rank) {
  const auto me = std::find(g.ranks.begin(), g.ranks.end(), rank);
  if (me == g.ranks.end() || g.size() > 2) {
    return InvalidInput(fmt::format(
        "schedule: {} '{}' on group '{}' (ranks [{}]): a pipeline hop is rank {} and its peer",
        OpTypeName(op.type), OpIdOf(s, op), g.name, fmt::join(g.ranks, ", "), rank));
  }
  const auto peer = std::find_if(g.ranks.begin(), g.ranks.end(), [&](int r) { return r != rank; });
  return static_cast<int>((peer == g.ranks.end() ? me : peer) - g.ranks.begin());
}

// FsdpCopy's segments grouped by (source dtype, destination dtype): one launch per pair, as
// the copy kernels take one dtype pair each (FSDP2's foreach copies are per dtype too).
class GroupedCopies {
 public:
  explicit GroupedCopies(bool accumulate = false) : accumulate_(accumulate) {}
  void Add(DType from, DType to, CopySegment segment) {
    FsdpCopyArgs& a = by_dtype_[{from, to}];
    a.src_dtype = from;
    a.dst_dtype = to;
    a.accumulate = accumulate_;
    a.segments.push_back(segment);
  }
  Status Issue(Device& dev, Lane lane) const {
    for (const auto& [key, a] : by_dtype_) SS_RETURN_IF_ERROR(dev.FsdpCopy(lane, a));
    return Status::Ok();
  }

 private:
  bool accumulate_;
  std::map<std::pair<DType, DType>, FsdpCopyArgs> by_dtype_;
};

// Where one parameter's unsharded gradient lies: a buffer id and a byte offset into it.
struct GradSlot {
  int buffer = -1;
  int64_t offset = 0;
};

// One plan unit on this rank: its layout and the buffers of its data path.
struct UnitData {
  UnitLayout layout;
  int shard = -1, replicate = -1, exp_avg = -1, exp_avg_sq = -1;  // persistent buffer ids
  int host_grads = -1;                                            // offload: host gradients
  int gathered = -1;                                              // the live all-gather buffer
  int device_shard = -1;  // offload: the shard copied to the device
  // Unsharded gradients of the current micro-step: the buffers that hold them (one per
  // backward chunk that produced some, as the schedule declares them: Buffer::grads_of) and,
  // per layout.params entry, where its gradient lies.
  std::vector<int> grads;
  std::vector<GradSlot> grad_at;
  int replicate_grads = -1;
  // Replicate params' gradients held in a dtype other than the reduce dtype: the unit's own
  // reduce-dtype buffer for their all-reduce (the schedule has none), whether the last
  // micro-step of an accumulation left their sum there (so the all-reduce reduces it as it
  // is), and the all-reduce's result there until it lands.
  DeviceBuffer replicate_reduce;
  bool replicate_summed = false;
  const char* replicate_reduced = nullptr;
  int accum = -1;          // the unsharded accumulator of micro-steps without sync (reduce dtype)
  int reduced = -1;        // the reduction's output (reduce dtype)
  int sharded_grads = -1;  // landed gradients (own dtype)
  // Whether a reduction landed this step in the offloaded host gradients / in the replicate
  // params' part of the sharded gradients: later ones add to it (FSDP2's `.grad +=`; the
  // optimizer's end stands for zero_grad(set_to_none)).
  bool host_grads_landed = false, replicate_landed = false;
};

class Runner {
 public:
  Runner(const Schedule& s, const Plan& plan, Device& dev,
         std::vector<std::unique_ptr<Communicator>>& comms, const ExecOptions& o)
      : s_(s), plan_(plan), dev_(dev), comms_(comms), o_(o) {}

  Status Prepare();
  Status Materialise();
  // Runs one step; false in `ok` when it failed (run_.failure says why).
  Status Step(int step);
  Status Release();
  StepRun& run() { return run_; }

 private:
  DeviceBuffer& Live(int id) { return live_[id]; }
  UnitData* UnitOf(const std::string& label) {
    auto it = unit_by_label_.find(label);
    return it == unit_by_label_.end() ? nullptr : &units_[it->second];
  }
  UnitData* UnitOfOp(const ScheduleOp& op) {
    const int u = unit_of_op_[&op - s_.ops.data()];
    return u < 0 ? nullptr : &units_[u];
  }
  // The op of group `group` whose op_id is `op_id` (a communicator's failed call); -1 if none.
  int FailedOpOf(int group, const std::string& op_id) const {
    if (op_id.empty()) return -1;
    for (int i : order_) {
      const ScheduleOp& op = s_.ops[static_cast<size_t>(i)];
      if (op.group == group && OpIdOf(s_, op) == op_id) return i;
    }
    return -1;
  }
  // Per op, whether it comes after op `failed` (-1: none): depends on it through the schedule's
  // dependencies, or follows it on its lane (a lane runs in issue order), transitively.
  std::vector<char> AfterOp(int failed) const {
    const size_t n = s_.ops.size();
    std::vector<char> after(n, 0);
    if (failed < 0 || static_cast<size_t>(failed) >= n) return after;
    std::vector<std::vector<int>> next(n);  // dependents, then the next op of the same lane
    std::map<int, int> last_on_lane;
    for (size_t i = 0; i < n; ++i) {
      const ScheduleOp& op = s_.ops[i];
      for (int d : DepsOf(s_, op)) {
        if (d >= 0 && static_cast<size_t>(d) < n)
          next[static_cast<size_t>(d)].push_back(static_cast<int>(i));
      }
      const auto [it, first] = last_on_lane.try_emplace(LaneKey(op), static_cast<int>(i));
      if (!first) {
        next[static_cast<size_t>(it->second)].push_back(static_cast<int>(i));
        it->second = static_cast<int>(i);
      }
    }
    std::vector<int> stack = {failed};
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      for (int j : next[static_cast<size_t>(i)]) {
        if (after[static_cast<size_t>(j)]) continue;
        after[static_cast<size_t>(j)] = 1;
        stack.push_back(j);
      }
    }
    return after;
  }
  // Allocations or frees (`allocs`) of the op's effects at `when`.
  Status ApplyEffects(int op, MemoryEffect::When when, bool allocs,
                      std::shared_ptr<DeviceEvent> ready);
  // The effects at `when` in the schedule's order (how the simulator applies them).
  void LogEffects(int op, MemoryEffect::When when);
  // An op in two parts: its start and its work (IssueOp), then its end event, the observer,
  // its end effects and the data that follows (FinishOp). A send issued in one group with
  // the receive after it finishes after that receive's IssueOp, which closes the group: NCCL
  // enqueues a group's calls only at ncclGroupEnd, so an end event recorded inside the
  // group would precede the send's kernel on the stream (its buffers freed, its dependents
  // started, while NCCL still reads them).
  Status IssueOp(int op);
  Status FinishOp(int op);
  void PairSendsWithReceives();
  Status EndP2PGroup();  // closes the open point-to-point group, if any
  Status IssueCompute(int op);
  Status IssueCollective(int op);
  Status IssueCopyIn(int op);
  Status IssueOptimizer(int op);
  Status AfterEnd(int op);
  // Whether the unit's unsharded accumulator (micro-steps without sync) is live.
  bool Accumulating(const UnitData& u) const {
    return u.accum >= 0 && live_[u.accum].data != nullptr;
  }
  // Where parameter `p`'s sum lies in the accumulator (reduce dtype; replicate params after
  // the unit's padded gradients, UnitSizes::replicate_reduce_bytes of them).
  char* AccumAt(const UnitData& u, const ParamLayout& p, bool replicate) const;
  // accumulator += this micro-step's gradients that live buffers hold (FSDP2's
  // unsharded_accumulated_grad += grad): with `params` the parameters', with `replicate` the
  // replicate parameters'.
  Status Fold(UnitData& u, Lane lane, bool params, bool replicate);
  // The unsharded-gradient buffers `op` allocates at `when`, noted in its unit's UnitData
  // (the accumulator of micro-steps without sync apart): appended to `fresh`.
  Status NoteGradients(int op, MemoryEffect::When when, std::vector<int>& fresh);
  // Parameter `p`'s unsharded gradient (index into layout.params), nullptr when no live
  // buffer holds it.
  const char* GradOf(const UnitData& u, size_t p) const;
  // The reduction's input: this micro-step's gradients, or with an accumulator their sum over
  // the micro-steps (this one folded in first).
  Status ChunkCat(UnitData& u, void* dst, Lane lane);
  // Writes this rank's gradient values into the `fresh` buffers (at micro-step `micro`).
  Status FillGradients(const std::vector<int>& fresh, Lane lane, int micro);
  // The reduced shard into `dst` (the sharded gradients, or an offloaded unit's host ones);
  // with `accumulate` added to what a reduction of an earlier micro-step left there.
  Status LandGradients(UnitData& u, char* dst, Lane lane, bool accumulate = false);
  // The replicate params' reduced gradients into their part of the sharded gradients, added
  // to an earlier micro-step's (sync every micro-step).
  Status LandReplicateGradients(UnitData& u, Lane lane);
  ExecContext Context(int step) const {
    ExecContext c;
    c.schedule = &s_;
    c.plan = &plan_;
    c.device = &dev_;
    c.step = step;
    c.buffers = &live_;
    return c;
  }

  const Schedule& s_;
  const Plan& plan_;
  Device& dev_;
  std::vector<std::unique_ptr<Communicator>>& comms_;
  const ExecOptions& o_;
  int rank_ = 0;
  int step_ = 0;
  int last_micro_ = 0;  // the step's last micro-step (accumulation, pipeline micro-batches)
  std::vector<int> order_;
  std::vector<DeviceBuffer> live_;
  std::vector<UnitData> units_;
  std::map<std::string, int> unit_by_label_;
  std::vector<int> unit_of_op_;     // per op: index into units_, -1 for step-level ops
  std::vector<int> gather_target_;  // per copy-in: the buffer its all-gather gathers into
  std::vector<int> arena_buffer_;   // per op: its own buffer that holds its kernels' operands
  std::vector<int64_t> arena_need_;
  // One workspace per lane: ops of two lanes run concurrently (threads on the host, streams
  // on a GPU), and two writers of one buffer would be a data race even for filler outputs.
  std::array<DeviceBuffer, kNumLanes> workspace_;
  char* Workspace(int i) {
    return static_cast<char*>(arena_buffer_[i] >= 0 ? live_[arena_buffer_[i]].data
                                                    : workspace_[LaneIndex(s_.ops[i].lane)].data);
  }
  static int LaneIndex(Lane lane) { return static_cast<int>(lane) - 1; }
  std::vector<std::shared_ptr<DeviceEvent>> start_, end_;
  // After the op's end and the data AfterEnd enqueued behind it (landed gradients): what
  // dependent ops on other lanes wait for (end_ times the op).
  std::vector<std::shared_ptr<DeviceEvent>> ready_;
  std::vector<int> comm_last_;  // per group: the last collective issued that holds it
  // Per send: the receive issued with it as one point-to-point group (-1: alone); per
  // receive, whether it is such a send's partner (issued with it, skipped in order).
  std::vector<int> p2p_partner_;
  std::vector<char> p2p_paired_recv_;
  Communicator* p2p_group_ = nullptr;  // the open group's communicator (its send's)
  std::vector<MemoryLogEntry> log_;
  StepRun run_;
  // Whether op `i` frees buffer `id` at its end.
  bool FreesAtEnd(int i, int id) const {
    const std::span<const MemoryEffect> m = EffectsOf(s_, s_.ops[i]);
    return id >= 0 && std::any_of(m.begin(), m.end(), [&](const MemoryEffect& e) {
             return e.when == MemoryEffect::When::kEnd && e.bytes < 0 && e.buffer == id;
           });
  }
};

Status Runner::Prepare() {
  if (s_.roles.size() != 1) {
    return InvalidInput(
        fmt::format("run: the schedule holds {} roles; the executor runs one rank's schedule "
                    "(ScheduleOptions::rank)",
                    s_.roles.size()));
  }
  if (comms_.size() != s_.groups.size()) {
    return InvalidInput(fmt::format("run: {} communicators for {} process groups", comms_.size(),
                                    s_.groups.size()));
  }
  rank_ = s_.roles[0].rank;
  for (const ScheduleOp& op : s_.ops) last_micro_ = std::max(last_micro_, op.micro_step);
  SS_ASSIGN_OR_RETURN(order_, IssueOrder(s_, 0));
  live_.assign(s_.buffers.size(), DeviceBuffer{});
  // Units and the shard index of this rank in each (its all-gather's communicator).
  std::map<std::string, int> shard_index;
  for (const ScheduleOp& op : s_.ops) {
    if (op.type == OpType::kAllGather && op.group >= 0 && op.collective.output_buffer >= 0) {
      shard_index.emplace(OpUnitLabel(s_, op), comms_[op.group]->rank());
    }
  }
  for (const ScheduledUnit& u : ScheduledUnits(plan_)) {
    auto it = shard_index.find(u.label);
    unit_by_label_[u.label] = static_cast<int>(units_.size());
    UnitData d;
    d.layout = MakeUnitLayout(u.plan, it == shard_index.end() ? 0 : it->second, u.label);
    units_.push_back(std::move(d));
  }
  unit_of_op_.assign(s_.ops.size(), -1);
  for (size_t i = 0; i < s_.ops.size(); ++i) {
    auto it = unit_by_label_.find(OpUnitLabel(s_, s_.ops[i]));
    if (it != unit_by_label_.end()) unit_of_op_[i] = it->second;  // "" is the root's
  }
  // Persistent state, matched by unit and size (schedule_builder.cpp's order per unit:
  // shard, replicate params, exp_avg, exp_avg_sq; offload: host gradients).
  for (const Buffer& b : s_.buffers) {
    if (b.alloc_op >= 0) continue;
    UnitData* u = UnitOf(b.unit);
    if (u == nullptr) continue;
    const UnitSizes& z = u->layout.sizes;
    if (b.category == MemCategory::kShardedParams) {
      if (u->shard < 0 && b.bytes == z.shard_bytes) {
        u->shard = b.id;
      } else if (u->replicate < 0 && b.bytes == z.replicate_bytes) {
        u->replicate = b.id;
      }
    } else if (b.category == MemCategory::kOptimizer) {
      (u->exp_avg < 0 ? u->exp_avg : u->exp_avg_sq) = b.id;
    } else if (b.category == MemCategory::kShardedGrads && b.host) {
      u->host_grads = b.id;
    }
  }
  // Arenas: the largest buffer an op allocates at its start, when its kernels' operands fit;
  // the others share their lane's workspace.
  const size_t n = s_.ops.size();
  arena_buffer_.assign(n, -1);
  arena_need_.assign(n, 0);
  std::array<int64_t, kNumLanes> workspace{};
  int64_t replicate_reduce_bytes = 0;
  std::vector<int64_t> replicate_reduce(units_.size(), 0);  // per unit
  for (size_t i = 0; i < n; ++i) {
    const ScheduleOp& op = s_.ops[i];
    int64_t need = 0;
    if (op.type == OpType::kCompute) {
      // Weights may have to come from the arena (no gathered buffer live, or too small).
      for (const ComputeItem& item : op.items) need = std::max(need, ArenaBytes(item, 0));
    } else if (IsCollective(op.type) &&
               (op.collective.input_buffer < 0 || op.collective.output_buffer < 0)) {
      const int g = op.group >= 0 ? s_.groups[op.group].size() : 1;
      need = 2 * op.collective.count * g * DTypeBytes(op.collective.dtype);
    } else if (op.type == OpType::kAllReduce && op.collective.output_buffer >= 0 &&
               s_.buffers[op.collective.output_buffer].dtype != op.collective.dtype) {
      // Replicate params' gradients held in a dtype other than the reduce dtype: reduced in
      // their unit's buffer (UnitData::replicate_reduce), not in the workspace the compute
      // lane shares.
      if (unit_of_op_[i] >= 0) {
        int64_t& bytes = replicate_reduce[unit_of_op_[i]];
        bytes = std::max(bytes, op.collective.count * DTypeBytes(op.collective.dtype));
      }
    }
    arena_need_[i] = need;
    if (need == 0) continue;
    int best = -1;
    for (const MemoryEffect& e : EffectsOf(s_, op)) {
      if (e.when != MemoryEffect::When::kStart || e.bytes <= 0 || e.buffer < 0) continue;
      if (s_.buffers[e.buffer].host) continue;
      if (best < 0 || s_.buffers[e.buffer].bytes > s_.buffers[best].bytes) best = e.buffer;
    }
    if (best >= 0 && s_.buffers[best].bytes >= need) {
      arena_buffer_[i] = best;
    } else {
      int64_t& lane = workspace[LaneIndex(op.lane)];
      lane = std::max(lane, need);
    }
  }
  int64_t workspace_bytes = 0;
  for (int l = 0; l < kNumLanes; ++l) {
    if (workspace[l] == 0) continue;
    const Lane lane = static_cast<Lane>(l + 1);
    Result<DeviceBuffer> ws = dev_.Allocate(workspace[l], MemCategory::kTemporaries, lane);
    if (!ws.ok()) {
      return ws.status().WithContext(
          fmt::format("the {} lane's kernel workspace, before the step", LaneName(lane)));
    }
    workspace_[l] = std::move(ws).value();
    workspace_bytes += workspace[l];
    run_.workspace_by_lane[l] = workspace[l];
  }
  for (size_t k = 0; k < units_.size(); ++k) {
    if (replicate_reduce[k] == 0) continue;
    Result<DeviceBuffer> rb =
        dev_.Allocate(replicate_reduce[k], MemCategory::kCommBuffers, Lane::kAllReduce);
    if (!rb.ok()) {
      return rb.status().WithContext(
          fmt::format("unit '{}': its replicate params' reduce-dtype buffer, before the step",
                      units_[k].layout.label));
    }
    units_[k].replicate_reduce = std::move(rb).value();
    replicate_reduce_bytes += replicate_reduce[k];
  }
  run_.workspace_bytes = workspace_bytes + replicate_reduce_bytes;
  comm_last_.assign(s_.groups.size(), -1);
  // The all-gather buffer a copy-in fills is its all-gather's output (the schedule's link;
  // under host run-ahead another op allocates it, in program order).
  gather_target_.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const ScheduleOp& op = s_.ops[i];
    if (op.type != OpType::kAllGather || op.collective.output_buffer < 0) continue;
    for (int d : DepsOf(s_, op)) {
      if (s_.ops[d].type == OpType::kCopyIn) gather_target_[d] = op.collective.output_buffer;
    }
  }
  PairSendsWithReceives();
  return Status::Ok();
}

void Runner::PairSendsWithReceives() {
  // A send whose lane's next op is a receive goes out with it as one group (1F1B's
  // send-forward / receive-backward pair, as torch's batch_isend_irecv): the two stages of a
  // hop each send before they receive, and NCCL's sends wait for the peer's receive. The
  // receive may be issued right after the send when nothing of this rank that it depends on
  // comes later in the order (its deps are the peer's send; its lane predecessor is the send).
  const size_t n = s_.ops.size();
  p2p_partner_.assign(n, -1);
  p2p_paired_recv_.assign(n, 0);
  std::vector<int> position(n, -1);
  for (size_t k = 0; k < order_.size(); ++k) position[order_[k]] = static_cast<int>(k);
  std::vector<int> next_on_lane(n, -1), last_on_lane(kNumLanes + 1, -1);
  for (int i : order_) {
    const int lane = static_cast<int>(s_.ops[i].lane);
    if (last_on_lane[lane] >= 0) next_on_lane[last_on_lane[lane]] = i;
    last_on_lane[lane] = i;
  }
  for (int i : order_) {
    const int j = next_on_lane[i];
    if (s_.ops[i].type != OpType::kSend || j < 0 || s_.ops[j].type != OpType::kRecv) continue;
    const std::span<const int> deps = DepsOf(s_, s_.ops[j]);
    const bool ready = std::all_of(deps.begin(), deps.end(), [&](int d) {
      return position[d] < 0 || position[d] < position[i];  // another role's, or issued
    });
    if (!ready) continue;
    p2p_partner_[i] = j;
    p2p_paired_recv_[j] = 1;
  }
}

Status Runner::Materialise() {
  for (const Buffer& b : s_.buffers) {
    if (b.alloc_op >= 0) continue;
    SS_ASSIGN_OR_RETURN(live_[b.id], dev_.Allocate(b.bytes, b.category, Lane::kCompute, b.host));
    SS_RETURN_IF_ERROR(dev_.Memset(Lane::kCompute, live_[b.id].data, 0, b.bytes));
  }
  // Parameters: each one's rows of the local tensor this rank's shard holds (padding zero).
  for (UnitData& u : units_) {
    if (u.shard >= 0) {
      char* base = static_cast<char*>(live_[u.shard].data);
      for (const ParamLayout& p : u.layout.params) {
        if (p.valid_rows == 0) continue;
        SS_RETURN_IF_ERROR(dev_.Fill(
            Lane::kCompute, FillArgs{base + p.shard_offset, p.own_dtype, p.valid_rows * p.cols,
                                     ParamSeed(p.fqn), p.first_row * p.cols, 1.0f}));
      }
    }
    if (u.replicate >= 0) {
      char* base = static_cast<char*>(live_[u.replicate].data);
      for (const ParamLayout& p : u.layout.replicate) {
        SS_RETURN_IF_ERROR(
            dev_.Fill(Lane::kCompute, FillArgs{base + p.shard_offset, p.own_dtype, p.rows * p.cols,
                                               ParamSeed(p.fqn), 0, 1.0f}));
      }
    }
  }
  return dev_.Synchronize(o_.timeout);
}

Status Runner::ApplyEffects(int i, MemoryEffect::When when, bool allocs,
                            std::shared_ptr<DeviceEvent> ready) {
  const ScheduleOp& op = s_.ops[i];
  for (const MemoryEffect& e : EffectsOf(s_, op)) {
    if (e.when != when || e.buffer < 0 || (e.bytes > 0) != allocs) continue;
    const Buffer& b = s_.buffers[e.buffer];
    if (e.bytes > 0) {
      Result<DeviceBuffer> got = dev_.Allocate(b.bytes, b.category, op.lane, b.host);
      if (!got.ok()) {
        log_.push_back({i, when == MemoryEffect::When::kStart, b.category, b.bytes,
                        dev_.memory().reserved_bytes, true});
        const MemoryCounters m = dev_.memory();
        std::string breakdown;
        for (int c = 0; c < kNumMemCategories; ++c) {
          breakdown +=
              fmt::format("{}{} {:.3f} GiB", c ? ", " : "",
                          MemCategoryName(static_cast<MemCategory>(c)), ToGiB(m.allocated[c]));
        }
        return RuntimeError(fmt::format(
            "out of memory at op '{}' allocating {} bytes of {}: {}; allocated by category: {}",
            OpIdOf(s_, op), b.bytes, MemCategoryName(b.category), got.status().message(),
            breakdown));
      }
      live_[e.buffer] = std::move(got).value();
      // A unit's gathered parameters, whichever op allocates them (host run-ahead).
      if (b.category == MemCategory::kUnshardedParams) {
        UnitData* u = UnitOf(b.unit);
        if (u != nullptr && b.bytes == u->layout.sizes.gathered_bytes) u->gathered = e.buffer;
      }
    } else if (e.bytes < 0) {
      if (live_[e.buffer].data == nullptr) {
        return InvalidInput(fmt::format("schedule: op '{}' frees buffer {}, which is not live",
                                        OpIdOf(s_, op), e.buffer));
      }
      dev_.Free(live_[e.buffer], ready);
      live_[e.buffer] = DeviceBuffer{};
    }
  }
  return Status::Ok();
}

void Runner::LogEffects(int i, MemoryEffect::When when) {
  const int64_t reserved = dev_.memory().reserved_bytes;
  for (const MemoryEffect& e : EffectsOf(s_, s_.ops[i])) {
    if (e.when != when || e.bytes == 0 || (e.buffer >= 0 && s_.buffers[e.buffer].host)) continue;
    log_.push_back({i, when == MemoryEffect::When::kStart, e.category, e.bytes, reserved, false});
  }
}

Status Runner::ChunkCat(UnitData& u, void* dst, Lane lane) {
  // FSDP2's chunk_cat: per rank block i, each parameter's rows [i·shard_rows, (i+1)·shard_rows)
  // of its gradient, cast to the reduce dtype, zero beyond its n0 rows. With an accumulator
  // (micro-steps without sync) FSDP2 first adds this micro-step's gradient to it and reduces
  // the sum, already in the reduce dtype.
  const bool accumulated = Accumulating(u);
  if (accumulated) SS_RETURN_IF_ERROR(Fold(u, lane, true, false));
  GroupedCopies copies;
  const int S = std::max(1, u.layout.sizes.shard_group);
  for (size_t k = 0; k < u.layout.params.size(); ++k) {
    const ParamLayout& p = u.layout.params[k];
    if (!p.requires_grad) continue;
    const char* grad = accumulated ? AccumAt(u, p, false) : GradOf(u, k);
    if (grad == nullptr) {
      return InvalidInput(
          fmt::format("schedule: unit '{}' reduces the gradient of {}, which no live buffer holds",
                      u.layout.label, p.fqn));
    }
    const DType from = accumulated ? p.reduce_dtype : p.gather_dtype;
    for (int i = 0; i < S; ++i) {
      char* block = static_cast<char*>(dst) + i * u.layout.reduce_block_bytes + p.reduce_offset;
      const int64_t first = i * p.shard_rows;
      const int64_t valid = std::clamp<int64_t>(p.rows - first, 0, p.shard_rows);
      if (valid > 0) {
        copies.Add(from, p.reduce_dtype,
                   {grad + first * p.cols * DTypeBytes(from), block, valid * p.cols});
      }
      if (valid < p.shard_rows) {
        copies.Add(from, p.reduce_dtype,
                   {nullptr, block + valid * p.cols * DTypeBytes(p.reduce_dtype),
                    (p.shard_rows - valid) * p.cols});
      }
    }
  }
  return copies.Issue(dev_, lane);
}

const char* Runner::GradOf(const UnitData& u, size_t p) const {
  if (p >= u.grad_at.size()) return nullptr;
  const GradSlot& slot = u.grad_at[p];
  if (slot.buffer < 0 || live_[slot.buffer].data == nullptr) return nullptr;
  return static_cast<const char*>(live_[slot.buffer].data) + slot.offset;
}

Status Runner::FillGradients(const std::vector<int>& fresh, Lane lane, int micro) {
  for (int id : fresh) {
    char* base = static_cast<char*>(live_[id].data);
    UnitData* found = UnitOf(s_.buffers[id].unit);
    if (base == nullptr || found == nullptr) continue;
    const UnitData& u = *found;
    // Padding rows zero: the buffer first, then each parameter's n0 real rows.
    SS_RETURN_IF_ERROR(dev_.Memset(lane, base, 0, live_[id].bytes));
    const bool replicate = id == u.replicate_grads;
    const std::vector<ParamLayout>& params = replicate ? u.layout.replicate : u.layout.params;
    for (size_t k = 0; k < params.size(); ++k) {
      const ParamLayout& p = params[k];
      if (!p.requires_grad) continue;
      int64_t offset = p.grad_offset;
      if (!replicate) {
        if (u.grad_at[k].buffer != id) continue;
        offset = u.grad_at[k].offset;
      }
      SS_RETURN_IF_ERROR(dev_.Fill(lane, FillArgs{base + offset, p.gather_dtype, p.rows * p.cols,
                                                  GradSeed(rank_, p.fqn, micro), 0, 1.0f}));
    }
    if (replicate && micro == last_micro_ && Accumulating(u)) {
      // The last micro-step of an accumulation: the replicate params' gradients, which the
      // schedule reduces where they lie, become the sum over the micro-steps (summed in the
      // accumulator's reduce dtype, then held in theirs).
      UnitData& w = *found;
      SS_RETURN_IF_ERROR(Fold(w, lane, false, true));
      // When they are held in another dtype than the sum, the sum also goes to their
      // all-reduce's own buffer as it is, so it is reduced without a rounding to theirs
      // between (the accumulator is freed before that all-reduce may run).
      GroupedCopies copies;
      char* reduce = static_cast<char*>(w.replicate_reduce.data);
      for (const ParamLayout& p : u.layout.replicate) {
        if (!p.requires_grad) continue;
        copies.Add(p.reduce_dtype, p.gather_dtype,
                   {AccumAt(w, p, true), base + p.grad_offset, p.rows * p.cols});
        if (reduce != nullptr) {
          const int64_t at =
              p.grad_offset / DTypeBytes(p.gather_dtype) * DTypeBytes(p.reduce_dtype);
          copies.Add(p.reduce_dtype, p.reduce_dtype,
                     {AccumAt(w, p, true), reduce + at, p.rows * p.cols});
        }
      }
      SS_RETURN_IF_ERROR(copies.Issue(dev_, lane));
      w.replicate_summed = reduce != nullptr;
    }
  }
  return Status::Ok();
}

Status Runner::LandGradients(UnitData& u, char* dst, Lane lane, bool accumulate) {
  // The reduced shard (reduce dtype) becomes the parameter's .grad in its own dtype.
  if (dst == nullptr || u.reduced < 0 || live_[u.reduced].data == nullptr) return Status::Ok();
  const char* src = static_cast<const char*>(live_[u.reduced].data);
  GroupedCopies copies(accumulate);
  int64_t out = 0;
  for (const ParamLayout& p : u.layout.params) {
    if (!p.requires_grad) continue;
    copies.Add(p.reduce_dtype, p.own_dtype, {src + p.reduce_offset, dst + out, p.shard_numel()});
    out += p.shard_numel() * DTypeBytes(p.own_dtype);
  }
  return copies.Issue(dev_, lane);
}

Status Runner::LandReplicateGradients(UnitData& u, Lane lane) {
  // Replicate params' reduced gradients (whole) become their .grad in their own dtype, after
  // the shard's in the unit's sharded gradients (UnitSizes::sharded_grad_bytes): from the
  // all-reduce's reduce-dtype result when it has one (their buffer holds a rounding of it to
  // the gather dtype), else from their buffer.
  const char* reduced_at = std::exchange(u.replicate_reduced, nullptr);
  if (u.sharded_grads < 0 || live_[u.sharded_grads].data == nullptr || u.replicate_grads < 0 ||
      live_[u.replicate_grads].data == nullptr) {
    return Status::Ok();
  }
  const bool reduced = reduced_at != nullptr;
  const char* src = reduced ? reduced_at : static_cast<const char*>(live_[u.replicate_grads].data);
  char* dst = static_cast<char*>(live_[u.sharded_grads].data);
  int64_t out = 0;
  for (const ParamLayout& p : u.layout.params) {
    if (p.requires_grad) out += p.shard_numel() * DTypeBytes(p.own_dtype);
  }
  GroupedCopies copies(/*accumulate=*/u.replicate_landed);
  u.replicate_landed = true;
  for (const ParamLayout& p : u.layout.replicate) {
    if (!p.requires_grad) continue;
    const DType from = reduced ? p.reduce_dtype : p.gather_dtype;
    const int64_t at = p.grad_offset / DTypeBytes(p.gather_dtype) * DTypeBytes(from);
    copies.Add(from, p.own_dtype, {src + at, dst + out, p.rows * p.cols});
    out += p.rows * p.cols * DTypeBytes(p.own_dtype);
  }
  return copies.Issue(dev_, lane);
}

Status Runner::IssueCopyIn(int i) {
  const ScheduleOp& op = s_.ops[i];
  UnitData* u = UnitOfOp(op);
  if (u == nullptr) return Status::Ok();
  if (gather_target_[i] >= 0) u->gathered = gather_target_[i];
  // Without an all-gather (no peers): the largest unsharded-params buffer it allocates.
  for (const MemoryEffect& e : EffectsOf(s_, op)) {
    if (gather_target_[i] >= 0) break;
    if (e.bytes > 0 && e.category == MemCategory::kUnshardedParams &&
        (u->gathered < 0 || live_[u->gathered].data == nullptr ||
         s_.buffers[e.buffer].bytes > live_[u->gathered].bytes)) {
      u->gathered = e.buffer;
    }
  }
  const int src_id = u->device_shard >= 0 ? u->device_shard : u->shard;
  if (u->gathered < 0 || src_id < 0 || live_[src_id].data == nullptr) return Status::Ok();
  const char* src = static_cast<const char*>(live_[src_id].data);
  const int64_t slot = op.lane == Lane::kAllGather ? u->layout.shard_index : 0;
  char* dst = static_cast<char*>(live_[u->gathered].data) + slot * u->layout.shard_slot_bytes;
  GroupedCopies copies;
  for (const ParamLayout& p : u->layout.params) {
    copies.Add(p.own_dtype, p.gather_dtype,
               {src + p.shard_offset, dst + p.gather_offset, p.shard_numel()});
  }
  return copies.Issue(dev_, op.lane);
}

Status Runner::IssueCollective(int i) {
  const ScheduleOp& op = s_.ops[i];
  if (op.group < 0)
    return InvalidInput(fmt::format("schedule: collective '{}' has no group", OpIdOf(s_, op)));
  Communicator& comm = *comms_[op.group];
  CollectiveCall c = CollectiveCallOf(s_, op);
  const int64_t elem = DTypeBytes(c.dtype);
  char* ws = Workspace(i);
  auto buffer = [&](int id) -> char* {
    return id >= 0 && live_[id].data != nullptr ? static_cast<char*>(live_[id].data) : nullptr;
  };
  char* in = buffer(op.collective.input_buffer);
  char* out = buffer(op.collective.output_buffer);
  UnitData* u = UnitOfOp(op);
  switch (op.type) {
    case OpType::kAllGather:
      if (out == nullptr) out = ws;
      c.output = out;
      c.input =
          in != nullptr ? in + comm.rank() * c.count * elem : out + comm.rank() * c.count * elem;
      break;
    case OpType::kReduceScatter:
      if (in != nullptr && u != nullptr && !u->grads.empty()) {
        // chunk_cat into the input the schedule allocates at the reduce-scatter's start.
        SS_RETURN_IF_ERROR(ChunkCat(*u, in, op.lane));
      }
      c.input = in != nullptr ? in : ws;
      c.output = out != nullptr ? out : ws + comm.size() * c.count * elem;
      if (u != nullptr && out != nullptr) u->reduced = op.collective.output_buffer;
      break;
    case OpType::kAllReduce: {
      const DType from = out != nullptr ? s_.buffers[op.collective.output_buffer].dtype : c.dtype;
      if (out != nullptr && from == c.dtype) {
        c.input = c.output = out;
      } else if (out != nullptr) {
        // Replicate params' gradients held in another dtype: cast to the reduce dtype once
        // (their own buffer: the schedule has none), reduce there; the gradients land from
        // that result, cast once to the parameters' dtype (FSDP2's rounding: reduce dtype
        // before the reduction, the result to the grad dtype). Their buffer gets the result
        // too, in its dtype.
        char* reduce = u != nullptr ? static_cast<char*>(u->replicate_reduce.data) : nullptr;
        const int64_t n = std::min(c.count, live_[op.collective.output_buffer].bytes /
                                                std::max<int64_t>(1, DTypeBytes(from)));
        if (reduce == nullptr || c.count * elem > u->replicate_reduce.bytes) {
          return InvalidInput(fmt::format(
              "schedule: all-reduce '{}' casts {} elements its buffer holds in {} to {}: more "
              "than Prepare sized for",
              OpIdOf(s_, op), c.count, DTypeName(from), DTypeName(c.dtype)));
        }
        // An accumulation's sum is there already, in the reduce dtype it was summed in.
        if (!std::exchange(u->replicate_summed, false)) {
          SS_RETURN_IF_ERROR(dev_.Cast(op.lane, CastArgs{n, from, c.dtype, out, reduce, 1.0f}));
        }
        c.input = c.output = reduce;
        SS_RETURN_IF_ERROR(backend::IssueCollective(comm, c));
        if (u != nullptr && op.collective.output_buffer == u->replicate_grads) {
          u->replicate_reduced = reduce;
        }
        return dev_.Cast(op.lane, CastArgs{n, c.dtype, from, reduce, out, 1.0f});
      } else {
        c.input = c.output = ws;
      }
      break;
    }
    default:  // all-to-all, send, receive: activations the table does not track one by one
      c.input = ws;
      c.output = ws + c.count * comm.size() * elem;
      if (op.type == OpType::kSend || op.type == OpType::kRecv) {
        SS_ASSIGN_OR_RETURN(c.peer, PipelinePeer(s_, op, s_.groups[op.group], rank_));
      }
      if (op.type == OpType::kSend && p2p_partner_[i] >= 0) {
        SS_RETURN_IF_ERROR(comm.BeginP2PGroup());
        p2p_group_ = &comm;
      }
      if (op.type == OpType::kRecv && p2p_paired_recv_[i] && p2p_group_ != nullptr) {
        // The group ends with its receive, before the receive's end event is recorded.
        const Status issued = backend::IssueCollective(comm, c);
        const Status ended = EndP2PGroup();
        SS_RETURN_IF_ERROR(issued);
        return ended;
      }
      break;
  }
  return backend::IssueCollective(comm, c);
}

Status Runner::EndP2PGroup() {
  Communicator* open = p2p_group_;
  p2p_group_ = nullptr;
  return open == nullptr ? Status::Ok() : open->EndP2PGroup();
}

Status Runner::IssueOptimizer(int i) {
  const ScheduleOp& op = s_.ops[i];
  for (const ComputeItem& item : op.items) {
    const auto* w = std::get_if<OptimizerWork>(&item.work);
    if (w == nullptr || item.module < 0) continue;
    const std::string& name = s_.modules[item.module];  // "optimizer:<unit label>"
    const size_t colon = name.find(':');
    UnitData* u = colon == std::string::npos ? nullptr : UnitOf(name.substr(colon + 1));
    // An offloaded unit steps on the host, from the gradients its D2H copy landed there.
    const int grads_id = u == nullptr            ? -1
                         : u->sharded_grads >= 0 ? u->sharded_grads
                                                 : u->host_grads;
    if (u == nullptr || u->shard < 0 || u->exp_avg < 0 || u->exp_avg_sq < 0 || grads_id < 0 ||
        live_[grads_id].data == nullptr) {
      continue;  // SGD, or a unit without reduced gradients this step
    }
    char* params = static_cast<char*>(live_[u->shard].data);
    const char* grads = static_cast<const char*>(live_[grads_id].data);
    float* m = static_cast<float*>(live_[u->exp_avg].data);
    float* v = static_cast<float*>(live_[u->exp_avg_sq].data);
    std::map<DType, AdamWArgs> by_dtype;
    int64_t g = 0;  // byte offset of the next tensor's gradient
    auto add = [&](const ParamLayout& p, char* param, int64_t numel) {
      AdamWArgs& a = by_dtype[p.own_dtype];
      a.param_dtype = a.grad_dtype = p.own_dtype;
      a.state_dtype = DType::kFloat32;
      a.lr = o_.lr, a.beta1 = o_.beta1, a.beta2 = o_.beta2, a.eps = o_.eps;
      a.weight_decay = o_.weight_decay;
      a.step = step_ + 1;
      a.tensors.push_back({param, grads + g, m + p.optim_offset, v + p.optim_offset, numel});
      g += numel * DTypeBytes(p.own_dtype);
    };
    for (const ParamLayout& p : u->layout.params) {
      if (p.requires_grad) add(p, params + p.shard_offset, p.shard_numel());
    }
    // Replicate params (whole tensors; their gradients follow the shard's). An offloaded
    // unit's stay on the device and never reach the host step.
    if (u->replicate >= 0 && !s_.buffers[u->shard].host) {
      char* whole = static_cast<char*>(live_[u->replicate].data);
      for (const ParamLayout& p : u->layout.replicate) {
        if (p.requires_grad) add(p, whole + p.shard_offset, p.rows * p.cols);
      }
    }
    for (auto& [d, a] : by_dtype) SS_RETURN_IF_ERROR(dev_.AdamW(op.lane, a));
  }
  return Status::Ok();
}

Status Runner::IssueCompute(int i) {
  const ScheduleOp& op = s_.ops[i];
  UnitData* u = UnitOfOp(op);
  for (const ComputeItem& item : op.items) {
    if (const auto* copy = std::get_if<FsdpCopyWork>(&item.work)) {
      // The copy-out moves the all-gather output into the parameters; the reduce copy-in
      // reads the unsharded gradients (its output buffer is allocated with the
      // reduce-scatter, which runs chunk_cat itself); the fold into the accumulator reads the
      // gradients and the accumulator (AfterEnd adds them, where the gradients are freed): all
      // move their bytes in place here.
      std::vector<int> ids;
      if (u != nullptr && copy->which == FsdpCopyWork::Which::kCopyOut) ids = {u->gathered};
      if (u != nullptr && copy->which != FsdpCopyWork::Which::kCopyOut) ids = u->grads;
      if (u != nullptr && copy->which == FsdpCopyWork::Which::kAccumulate && Accumulating(*u))
        ids.push_back(u->accum);
      FsdpCopyArgs a;
      a.src_dtype = a.dst_dtype = DType::kUInt8;
      for (int id : ids) {
        if (id >= 0 && live_[id].data != nullptr)
          a.segments.push_back({live_[id].data, live_[id].data, live_[id].bytes});
      }
      if (!a.segments.empty()) SS_RETURN_IF_ERROR(dev_.FsdpCopy(op.lane, a));
      continue;
    }
    if (!item.is_module()) continue;
    ItemBuffers b;
    const DeviceBuffer& arena =
        arena_buffer_[i] >= 0 ? live_[arena_buffer_[i]] : workspace_[LaneIndex(op.lane)];
    b.arena = static_cast<char*>(arena.data);
    b.arena_bytes = arena.bytes;
    if (u != nullptr && u->gathered >= 0 && live_[u->gathered].data != nullptr) {
      b.params = static_cast<const char*>(live_[u->gathered].data);
      b.params_bytes = live_[u->gathered].bytes;
    }
    // The op_id is formed only for an error: this runs for every item of every op.
    if (Status issued = IssueItem(dev_, op.lane, item, b); !issued.ok()) {
      return issued.WithContext(OpIdOf(s_, op));
    }
  }
  return Status::Ok();
}

Status Runner::NoteGradients(int i, MemoryEffect::When when, std::vector<int>& fresh) {
  const ScheduleOp& op = s_.ops[i];
  for (const MemoryEffect& e : EffectsOf(s_, op)) {
    if (e.when != when || e.bytes <= 0 || e.category != MemCategory::kUnshardedGrads) continue;
    const Buffer& b = s_.buffers[e.buffer];
    UnitData* u = UnitOf(b.unit);  // the buffer's unit, whichever op allocates it
    if (u == nullptr) continue;
    if (b.grads_of.empty()) {
      // Micro-steps without sync: the unit's unsharded accumulator, from zero.
      u->accum = e.buffer;
      SS_RETURN_IF_ERROR(dev_.Memset(op.lane, live_[e.buffer].data, 0, live_[e.buffer].bytes));
      continue;
    }
    // Where each listed parameter's gradient lies: one after another, in the listed order.
    const bool replicate =
        !u->layout.replicate.empty() &&
        std::any_of(u->layout.replicate.begin(), u->layout.replicate.end(),
                    [&](const ParamLayout& p) { return p.fqn == b.grads_of[0]; });
    const std::vector<ParamLayout>& params = replicate ? u->layout.replicate : u->layout.params;
    const int S = replicate ? 1 : std::max(1, u->layout.sizes.shard_group);
    if (!replicate) {
      std::erase_if(u->grads, [&](int id) { return live_[id].data == nullptr; });
      u->grads.push_back(e.buffer);
      u->grad_at.resize(params.size());
    }
    int64_t offset = 0;
    for (const std::string& fqn : b.grads_of) {
      auto it = std::find_if(params.begin(), params.end(),
                             [&](const ParamLayout& p) { return p.fqn == fqn && p.requires_grad; });
      if (it == params.end()) {
        return InvalidInput(fmt::format(
            "schedule: op '{}' allocates gradients of {}, not a {}parameter of unit '{}' that "
            "requires grad",
            OpIdOf(s_, op), fqn, replicate ? "replicate " : "", u->layout.label));
      }
      if (replicate && it->grad_offset != offset) {
        return InvalidInput(fmt::format(
            "schedule: op '{}' lists the replicate gradients of unit '{}' out of plan order",
            OpIdOf(s_, op), u->layout.label));
      }
      if (!replicate) u->grad_at[it - params.begin()] = GradSlot{e.buffer, offset};
      offset += S * it->shard_numel() * DTypeBytes(it->gather_dtype);
    }
    if (offset != b.bytes) {
      return InvalidInput(fmt::format(
          "schedule: op '{}' allocates {} bytes of gradients for unit '{}', whose listed "
          "parameters need {}",
          OpIdOf(s_, op), b.bytes, u->layout.label, offset));
    }
    if (replicate) u->replicate_grads = e.buffer;
    fresh.push_back(e.buffer);
  }
  return Status::Ok();
}

char* Runner::AccumAt(const UnitData& u, const ParamLayout& p, bool replicate) const {
  char* acc = static_cast<char*>(live_[u.accum].data);
  const UnitSizes& z = u.layout.sizes;
  const int64_t base =
      replicate ? z.grad_numel * std::max(1, z.shard_group) * z.reduce_dtype_bytes : 0;
  return acc + base + p.grad_offset / DTypeBytes(p.gather_dtype) * DTypeBytes(p.reduce_dtype);
}

Status Runner::Fold(UnitData& u, Lane lane, bool params, bool replicate) {
  GroupedCopies copies(/*accumulate=*/true);
  auto add = [&](const ParamLayout& p, const char* g, int64_t elements, bool rep) {
    copies.Add(p.gather_dtype, p.reduce_dtype, {g, AccumAt(u, p, rep), elements});
  };
  for (size_t k = 0; params && k < u.layout.params.size(); ++k) {
    const ParamLayout& p = u.layout.params[k];
    const char* g = GradOf(u, k);
    if (p.requires_grad && g != nullptr) {
      add(p, g, std::max(1, u.layout.sizes.shard_group) * p.shard_numel(), false);
    }
  }
  if (replicate && u.replicate_grads >= 0 && live_[u.replicate_grads].data != nullptr) {
    const char* base = static_cast<const char*>(live_[u.replicate_grads].data);
    for (const ParamLayout& p : u.layout.replicate) {
      if (p.requires_grad) add(p, base + p.grad_offset, p.rows * p.cols, true);
    }
  }
  return copies.Issue(dev_, lane);
}

// Data that follows an op's end on its lane (outside its measured time): the gradients
// backward produced, the local reduction of a unit without peers, the landed gradient.
Status Runner::AfterEnd(int i) {
  const ScheduleOp& op = s_.ops[i];
  // Gradients allocated at the end (those no backward chunk produced) are this op's output,
  // written before anything below reads them.
  std::vector<int> fresh;
  SS_RETURN_IF_ERROR(NoteGradients(i, MemoryEffect::When::kEnd, fresh));
  SS_RETURN_IF_ERROR(FillGradients(fresh, op.lane, op.micro_step));
  // Everything below follows the buffers' units, not the op's: a unit's post-backward effects
  // may sit on another unit's op (a pipeline chunk root's on its nested unit's last backward).
  if (!IsCollective(op.type)) {
    // A micro-step without sync: the gradients freed here fold into their unit's accumulator,
    // unless this op also frees it (the last micro-step: its reduction below reads the sum).
    std::vector<const UnitData*> folded;
    for (const MemoryEffect& e : EffectsOf(s_, op)) {
      if (e.when != MemoryEffect::When::kEnd || e.bytes >= 0 ||
          e.category != MemCategory::kUnshardedGrads) {
        continue;
      }
      UnitData* w = UnitOf(s_.buffers[e.buffer].unit);
      if (w == nullptr || e.buffer == w->accum || !Accumulating(*w) || FreesAtEnd(i, w->accum) ||
          std::find(folded.begin(), folded.end(), w) != folded.end()) {
        continue;
      }
      folded.push_back(w);
      SS_RETURN_IF_ERROR(Fold(*w, op.lane, true, true));
    }
  }
  std::vector<const UnitData*> landed;  // units whose first reduction lands here
  for (const MemoryEffect& e : EffectsOf(s_, op)) {
    if (e.when != MemoryEffect::When::kEnd || e.bytes <= 0) continue;
    const Buffer& b = s_.buffers[e.buffer];
    UnitData* w = UnitOf(b.unit);
    if (w == nullptr) continue;
    if (b.category == MemCategory::kCommBuffers && !IsCollective(op.type)) {
      // S == 1: the reduction is a local cast into its output.
      w->reduced = e.buffer;
      SS_RETURN_IF_ERROR(ChunkCat(*w, live_[e.buffer].data, op.lane));
    } else if (b.category == MemCategory::kShardedGrads && !b.host) {
      w->sharded_grads = e.buffer;
      SS_RETURN_IF_ERROR(
          LandGradients(*w, static_cast<char*>(live_[w->sharded_grads].data), op.lane));
      landed.push_back(w);
    }
  }
  // A later micro-step's reduction (sync every micro-step) ends where its output is freed:
  // FSDP2 adds it to the sharded gradient the first one left.
  for (const MemoryEffect& e : EffectsOf(s_, op)) {
    if (e.when != MemoryEffect::When::kEnd || e.bytes >= 0) continue;
    UnitData* w = UnitOf(s_.buffers[e.buffer].unit);
    if (w == nullptr || e.buffer != w->reduced || w->sharded_grads < 0 ||
        live_[w->sharded_grads].data == nullptr ||
        std::find(landed.begin(), landed.end(), w) != landed.end()) {
      continue;
    }
    SS_RETURN_IF_ERROR(LandGradients(*w, static_cast<char*>(live_[w->sharded_grads].data), op.lane,
                                     /*accumulate=*/true));
  }
  // The replicate params' gradients are final where they are freed after the reduction (their
  // all-reduce, or on one rank the unit's last backward); a micro-step without sync frees them
  // before any sharded gradients exist this step.
  for (const MemoryEffect& e : EffectsOf(s_, op)) {
    if (e.when != MemoryEffect::When::kEnd || e.bytes >= 0) continue;
    UnitData* w = UnitOf(s_.buffers[e.buffer].unit);
    if (w != nullptr && e.buffer == w->replicate_grads) {
      SS_RETURN_IF_ERROR(LandReplicateGradients(*w, op.lane));
    }
  }
  return Status::Ok();
}

Status Runner::IssueOp(int i) {
  const ScheduleOp& op = s_.ops[i];
  for (int d : DepsOf(s_, op)) {
    if (s_.ops[d].lane != op.lane && end_[d] != nullptr) {
      SS_RETURN_IF_ERROR(dev_.Wait(op.lane, ready_[d] != nullptr ? *ready_[d] : *end_[d]));
    }
  }
  if (op.group >= 0 && SerializesOnCommunicator(op.type)) {
    const int prev = comm_last_[op.group];
    if (prev >= 0 && s_.ops[prev].lane != op.lane)
      SS_RETURN_IF_ERROR(dev_.Wait(op.lane, *end_[prev]));
    comm_last_[op.group] = i;
  }
  SS_ASSIGN_OR_RETURN(start_[i], dev_.Record(op.lane));
  SS_RETURN_IF_ERROR(ApplyEffects(i, MemoryEffect::When::kStart, false, start_[i]));
  SS_RETURN_IF_ERROR(ApplyEffects(i, MemoryEffect::When::kStart, true, nullptr));
  LogEffects(i, MemoryEffect::When::kStart);
  std::vector<int> fresh;
  SS_RETURN_IF_ERROR(NoteGradients(i, MemoryEffect::When::kStart, fresh));
  UnitData* u = UnitOfOp(op);
  switch (op.type) {
    case OpType::kCompute:
      SS_RETURN_IF_ERROR(IssueCompute(i));
      break;
    case OpType::kOptimizer:
      SS_RETURN_IF_ERROR(IssueOptimizer(i));
      break;
    case OpType::kCopyIn:
      SS_RETURN_IF_ERROR(IssueCopyIn(i));
      break;
    case OpType::kCopyH2D:
      if (u != nullptr && u->shard >= 0) {
        for (const MemoryEffect& e : EffectsOf(s_, op)) {
          if (e.bytes > 0 && e.category == MemCategory::kShardedParams) u->device_shard = e.buffer;
        }
        if (u->device_shard >= 0) {
          SS_RETURN_IF_ERROR(
              dev_.Memcpy(op.lane, live_[u->device_shard].data, live_[u->shard].data,
                          std::min(live_[u->device_shard].bytes, live_[u->shard].bytes)));
        }
      }
      break;
    case OpType::kCopyD2H:
      // The copy of the reduced shard is the one that frees it (the replicate params' copy
      // frees nothing: their gradients stay on the device). The step's first lands in the
      // host gradients, a later micro-step's adds to them (FSDP2: `.to("cpu")`, then
      // `grad._local_tensor += new_sharded_grad` on the host).
      if (u != nullptr && u->host_grads >= 0 && u->reduced >= 0 &&
          live_[u->reduced].data != nullptr && FreesAtEnd(i, u->reduced)) {
        const bool same_dtype =
            std::all_of(u->layout.params.begin(), u->layout.params.end(),
                        [](const ParamLayout& p) { return p.reduce_dtype == p.own_dtype; });
        if (same_dtype && !u->host_grads_landed) {
          SS_RETURN_IF_ERROR(
              dev_.Memcpy(op.lane, live_[u->host_grads].data, live_[u->reduced].data,
                          std::min(live_[u->host_grads].bytes, live_[u->reduced].bytes)));
        } else {  // the copy casts to the parameters' dtype on its way, or adds
          SS_RETURN_IF_ERROR(LandGradients(*u, static_cast<char*>(live_[u->host_grads].data),
                                           op.lane, u->host_grads_landed));
        }
        u->host_grads_landed = true;
      }
      break;
    case OpType::kWait:
      break;
    default:
      SS_RETURN_IF_ERROR(IssueCollective(i));
      break;
  }
  // The backward that allocates a unit's gradients writes them (this rank's values).
  return FillGradients(fresh, op.lane, op.micro_step);
}

Status Runner::FinishOp(int i) {
  const ScheduleOp& op = s_.ops[i];
  SS_ASSIGN_OR_RETURN(end_[i], dev_.Record(op.lane));
  if (o_.observer != nullptr) SS_RETURN_IF_ERROR(o_.observer->AfterOp(i, Context(step_)));
  SS_RETURN_IF_ERROR(ApplyEffects(i, MemoryEffect::When::kEnd, true, nullptr));
  SS_RETURN_IF_ERROR(AfterEnd(i));
  // Frees at the end wait for everything the lane ran for this op (the observer's copies and
  // AfterEnd's data too): PyTorch's record_stream.
  SS_ASSIGN_OR_RETURN(std::shared_ptr<DeviceEvent> released, dev_.Record(op.lane));
  SS_RETURN_IF_ERROR(ApplyEffects(i, MemoryEffect::When::kEnd, false, released));
  ready_[i] = released;
  LogEffects(i, MemoryEffect::When::kEnd);
  return Status::Ok();
}

Status Runner::Step(int step) {
  step_ = step;
  const size_t n = s_.ops.size();
  start_.assign(n, nullptr);
  end_.assign(n, nullptr);
  ready_.assign(n, nullptr);
  log_.clear();
  std::fill(comm_last_.begin(), comm_last_.end(), -1);
  for (UnitData& u : units_) {
    u.gathered = u.device_shard = u.replicate_grads = u.reduced = u.sharded_grads = -1;
    u.grads.clear();
    u.grad_at.clear();
    u.accum = -1;
    u.host_grads_landed = u.replicate_landed = false;
    u.replicate_reduced = nullptr;
    u.replicate_summed = false;
  }
  const int64_t reserved0 = dev_.memory().reserved_bytes;
  // Every lane starts from one point, so all times share the compute lane's origin.
  SS_ASSIGN_OR_RETURN(std::shared_ptr<DeviceEvent> origin, dev_.Record(Lane::kCompute));
  for (int l = 2; l <= kNumLanes; ++l) SS_RETURN_IF_ERROR(dev_.Wait(static_cast<Lane>(l), *origin));
  Status failure;
  int failed = -1;
  const int64_t issue_begin = ThreadCpuNs();
  int issued = 0;
  for (int i : order_) {
    if (p2p_paired_recv_[i]) continue;  // issued with its send
    Status st = IssueOp(i);
    const int partner = p2p_partner_[i];
    if (st.ok() && partner >= 0) {
      // The pair is one group: the receive's work closes it, then both finish.
      ++issued;
      const int send = i;
      i = partner;
      st = IssueOp(i);
      if (st.ok()) {
        i = send;
        st = FinishOp(i);
      }
      if (st.ok()) i = partner;
    }
    if (st.ok()) st = FinishOp(i);
    if (!st.ok()) {
      (void)EndP2PGroup();  // a failure inside a pair leaves no group open
      failure = st;
      failed = i;
      break;
    }
    ++issued;
  }
  const int64_t issue_end = ThreadCpuNs();
  // The watchdog: every communicator, then the device, within the timeout.
  if (failure.ok()) {
    for (size_t g = 0; g < comms_.size(); ++g) {
      Status st = comms_[g]->Wait(o_.timeout);
      if (!st.ok()) {
        failure = st;
        failed = FailedOpOf(static_cast<int>(g), comms_[g]->failed_op_id());
        break;
      }
    }
  }
  Status synced = dev_.Synchronize(o_.timeout);
  if (!synced.ok() && failure.ok()) {
    // Name the first op that never finished (in issue order): what is stuck.
    for (int i : order_) {
      if (end_[i] != nullptr && !dev_.Done(*end_[i])) {
        const ScheduleOp& op = s_.ops[i];
        failed = i;
        failure = RuntimeError(
            fmt::format("op '{}'{} did not finish within --timeout {:.3f} s: {}", OpIdOf(s_, op),
                        op.group >= 0 ? fmt::format(" (group {})", s_.groups[op.group].name) : "",
                        std::chrono::duration<double>(o_.timeout).count(), synced.message()));
        break;
      }
    }
    if (failure.ok()) failure = synced;
  }
  // After a failure, what comes after the failed op (through a dependency, or after it on its
  // lane) did not run as the schedule says, whatever its events tell: a lane's queued tasks go
  // on past a collective that timed out, and their events complete (a reduce-scatter with a dead
  // peer in 262 µs, then the optimizer step). The timeline and memory hold what ran before it.
  const std::vector<char> after_failure = AfterOp(failed);
  // Timings from the origin, shifted so the step's first op starts at 0.
  Timeline t;
  t.ops.assign(n, OpTiming{});
  int64_t first = -1;
  for (int i : order_) {
    if (after_failure[static_cast<size_t>(i)] || start_[i] == nullptr || end_[i] == nullptr ||
        !dev_.Done(*start_[i]) || !dev_.Done(*end_[i])) {
      continue;
    }
    SS_ASSIGN_OR_RETURN(int64_t a, dev_.ElapsedNs(*origin, *start_[i]));
    SS_ASSIGN_OR_RETURN(int64_t b, dev_.ElapsedNs(*origin, *end_[i]));
    // A wait is a join point: it ends where it starts (IsTracedOp leaves it out of traces).
    t.ops[i] = OpTiming{a, s_.ops[i].type == OpType::kWait ? a : std::max(a, b)};
    if (first < 0 || a < first) first = a;
  }
  if (first < 0) first = 0;
  int64_t last = 0;
  for (OpTiming& ot : t.ops) {
    if (ot.start_ns < 0) continue;
    ot.start_ns -= first;
    ot.end_ns -= first;
    last = std::max(last, ot.end_ns);
    t.log.push_back({ot.start_ns, static_cast<int>(&ot - t.ops.data()), true});
    t.log.push_back({ot.end_ns, static_cast<int>(&ot - t.ops.data()), false});
  }
  std::stable_sort(t.log.begin(), t.log.end(), [](const Transition& a, const Transition& b) {
    if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
    return !a.is_start && b.is_start;  // ends before starts at one time, as the engine does
  });
  t.role_end_ns = {last};
  t.step_ns = last;
  int live = 0;
  for (size_t b = 0; b < live_.size(); ++b) {
    if (live_[b].data != nullptr && s_.buffers[b].alloc_op >= 0) ++live;
  }
  if (failed >= 0) {
    std::erase_if(log_, [&](const MemoryLogEntry& e) {
      return after_failure[static_cast<size_t>(e.op)] != 0;
    });
  }
  run_.memory =
      BuildRoleMemory(log_, t, s_.initial_memory.empty() ? CategoryBytes{} : s_.initial_memory[0],
                      s_.initial_host_memory.empty() ? CategoryBytes{} : s_.initial_host_memory[0],
                      reserved0, live);
  run_.timeline = std::move(t);
  run_.counters = dev_.memory();
  run_.failure = failure;
  run_.failed_op = failed;
  run_.steps_run = step + 1;
  run_.step_ns_each.push_back(last);
  run_.issue_ns_per_op = issued > 0 ? (issue_end - issue_begin) / issued : 0;
  if (!failure.ok()) return Status::Ok();
  // Buffers the step leaves live (allocated by an op, never freed) go before the next step.
  for (size_t b = 0; b < live_.size(); ++b) {
    if (live_[b].data != nullptr && s_.buffers[b].alloc_op >= 0) {
      dev_.Free(live_[b]);
      live_[b] = DeviceBuffer{};
    }
  }
  return Status::Ok();
}

Status Runner::Release() {
  if (o_.observer != nullptr && run_.failure.ok()) {
    SS_RETURN_IF_ERROR(o_.observer->AfterRun(Context(step_)));
    SS_RETURN_IF_ERROR(dev_.Synchronize(o_.timeout));
  }
  for (DeviceBuffer& b : live_) {
    if (b.data != nullptr) dev_.Free(b);
    b = DeviceBuffer{};
  }
  for (DeviceBuffer& ws : workspace_) {
    if (ws.data != nullptr) dev_.Free(ws);
    ws = DeviceBuffer{};
  }
  for (UnitData& u : units_) {
    if (u.replicate_reduce.data != nullptr) dev_.Free(u.replicate_reduce);
    u.replicate_reduce = DeviceBuffer{};
  }
  return Status::Ok();
}

}  // namespace

Result<StepRun> RunSchedule(const Schedule& schedule, const Plan& plan, Device& device,
                            std::vector<std::unique_ptr<Communicator>>& comms,
                            const ExecOptions& options) {
  if (options.steps < 1) return InvalidInput("run: --steps must be at least 1");
  Runner r(schedule, plan, device, comms, options);
  SS_RETURN_IF_ERROR(r.Prepare());
  SS_RETURN_IF_ERROR(r.Materialise());
  for (int step = 0; step < options.steps; ++step) {
    SS_RETURN_IF_ERROR(r.Step(step));
    if (!r.run().failure.ok()) break;
  }
  SS_RETURN_IF_ERROR(r.Release());
  return std::move(r.run());
}

}  // namespace shardscope::backend
