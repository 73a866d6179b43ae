#include "sim/engine/memory_tracker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "core/timeline/step_phase.h"
#include "sim/engine/caching_allocator.h"
#include "sim/engine/run_parts.h"

namespace shardscope::sim {
namespace {

struct LiveBuffer {
  int handle = -1;  // allocator block; -1 when zero bytes
  MemCategory category = MemCategory::kTemporaries;
  int64_t bytes = 0;
};

// The initial memory, one block per category on the compute stream, as a role's replay starts;
// returns the bytes allocated.
int64_t AllocateInitial(const CategoryBytes& initial, CachingAllocatorModel* allocator) {
  int64_t allocated = 0;
  for (int c = 0; c < kNumMemCategories; ++c) {
    if (initial[c] > 0) {
      allocated += initial[c];
      allocator->Allocate(initial[c], static_cast<int>(Lane::kCompute));
    }
  }
  return allocated;
}

struct BufferSlot {
  LiveBuffer buffer;
  int live_role = -1;  // the role holding it live; -1: not live
};

class RoleState {
 public:
  // `table`: one slot per id of the schedule's buffer table, shared by all roles (a buffer
  // belongs to one role; a slot records which role holds it live). One table, not one per
  // role: a pipeline's eight roles would each zero a slot for every buffer of the step.
  // `calls`: where its allocator calls are recorded, or null.
  RoleState(int role, const CategoryBytes& initial, const MemoryOptions& options,
            std::vector<BufferSlot>* table, AllocatorCalls* calls)
      : allocator_(options.capacity_bytes, options.allocator),
        keep_samples_(options.keep_samples),
        role_(role),
        table_(table),
        calls_(calls) {
    mem_.initial_bytes = initial;
    bytes_ = initial;
    allocated_ = AllocateInitial(initial, &allocator_);
    oom_seen_ = allocator_.oom_count();
    if (oom_seen_ > 0) {
      mem_.oom = true;
      mem_.oom_op = -1;
    }
    RecordPeaks(0, -1);
    Sample(0);
  }

  // An effect of op `op_index` of `schedule` (read only to name it in an error), which runs on
  // `lane`; `phase`: StepPhaseOf(op), for the per-phase peaks.
  Status Apply(const Schedule& schedule, int op_index, int lane, StepPhase phase,
               const MemoryEffect& e, int64_t t) {
    const auto op_id = [&] { return OpIdOf(schedule, schedule.ops[op_index]); };  // on error
    const int c = static_cast<int>(e.category);
    if (c < 0 || c >= kNumMemCategories) {
      return InvalidInput(
          fmt::format("schedule: op '{}': memory category {} is not known", op_id(), c));
    }
    if (e.bytes > 0) {
      LiveBuffer buf{allocator_.Allocate(e.bytes, lane), e.category, e.bytes};
      if (calls_ != nullptr) [[unlikely]]
        RecordAllocation(buf.handle, e.bytes, lane);
      if (allocator_.oom_count() > oom_seen_) {
        oom_seen_ = allocator_.oom_count();
        if (!mem_.oom) {
          mem_.oom = true;
          mem_.oom_time_ns = t;
          mem_.oom_op = op_index;
          mem_.oom_category = e.category;
        }
      }
      if (e.buffer >= 0) {
        if (!InsertNamed(e.buffer, buf)) {
          return InvalidInput(fmt::format(
              "schedule: op '{}' allocates buffer {} which is already live", op_id(), e.buffer));
        }
      } else {
        anonymous_[{c, e.bytes}].push_back(buf);
      }
      bytes_[c] += e.bytes;
      allocated_ += e.bytes;
    } else if (e.bytes < 0) {
      LiveBuffer buf;
      if (e.buffer >= 0) {
        LiveBuffer* live = FindNamed(e.buffer);
        if (live == nullptr) {
          return InvalidInput(fmt::format("schedule: op '{}' frees buffer {} which is not live",
                                          op_id(), e.buffer));
        }
        buf = *live;
        if (buf.bytes != -e.bytes || buf.category != e.category) {
          return InvalidInput(fmt::format(
              "schedule: op '{}' frees buffer {} as {} bytes of category {}, but it was allocated "
              "as "
              "{} bytes of category {}",
              op_id(), e.buffer, -e.bytes, c, buf.bytes, static_cast<int>(buf.category)));
        }
        EraseNamed(e.buffer);
      } else {
        auto it = anonymous_.find({c, -e.bytes});
        if (it == anonymous_.end() || it->second.empty()) {
          return InvalidInput(fmt::format(
              "schedule: op '{}' frees {} bytes of category {} without a buffer id, and no live "
              "allocation of that category and size matches",
              op_id(), -e.bytes, c));
        }
        buf = it->second.back();
        it->second.pop_back();
      }
      allocator_.Free(buf.handle);
      if (calls_ != nullptr) [[unlikely]]
        RecordFree(buf.handle, e.bytes, lane);
      bytes_[c] += e.bytes;
      allocated_ += e.bytes;
    }
    changed_ = true;
    // Only an allocation raises a peak, and only category c's: the other maxima stand.
    if (e.bytes > 0) {
      mem_.max_bytes[c] = std::max(mem_.max_bytes[c], bytes_[c]);
      RecordTotalPeaks(t, op_index);
    }
    PhasePeak& p = mem_.phase_peaks[static_cast<int>(phase)];
    if (p.op < 0 || allocated_ > p.allocated_bytes) p = {allocated_, t, op_index};
    return Status::Ok();
  }

  // Called once all effects of one transition are applied.
  void EndTransition(int64_t t) {
    if (changed_) Sample(t);
    changed_ = false;
  }

  RoleMemory Finish() {
    mem_.final_bytes = bytes_;
    int live = table_live_ + static_cast<int>(named_.size());
    for (const auto& [key, list] : anonymous_) live += static_cast<int>(list.size());
    mem_.live_buffers_at_end = live;
    mem_.capacity_hits = allocator_.capacity_hits();
    return std::move(mem_);
  }

 private:
  // Named live buffers: the table's ids in `table_` (one slot per id, a step's buffers are
  // looked up once per effect), any other id in `named_`.
  bool InsertNamed(int id, const LiveBuffer& buf) {
    if (static_cast<size_t>(id) >= table_->size()) return named_.emplace(id, buf).second;
    BufferSlot& slot = (*table_)[id];
    if (slot.live_role >= 0) return false;
    slot = {buf, role_};
    ++table_live_;
    return true;
  }
  LiveBuffer* FindNamed(int id) {
    if (static_cast<size_t>(id) >= table_->size()) {
      auto it = named_.find(id);
      return it == named_.end() ? nullptr : &it->second;
    }
    BufferSlot& slot = (*table_)[id];
    return slot.live_role == role_ ? &slot.buffer : nullptr;
  }
  void EraseNamed(int id) {
    if (static_cast<size_t>(id) >= table_->size()) {
      named_.erase(id);
      return;
    }
    (*table_)[id].live_role = -1;
    --table_live_;
  }

  // The calls, recorded out of line: Apply runs for every effect of every prediction, and
  // recording is the fast path's short runs' alone (a 70B PP 8 x 16 prediction ran 0.6% more
  // instructions with it inline, callgrind). `block` >= 0: the model has no backing here, the
  // one way Allocate returns -1.
  [[gnu::noinline]] void RecordAllocation(int block, int64_t bytes, int lane) {
    if (static_cast<size_t>(block) >= call_of_block_.size()) call_of_block_.resize(block + 1, -1);
    call_of_block_[block] = allocations_++;
    calls_->push_back({bytes, lane, -1});
  }
  [[gnu::noinline]] void RecordFree(int block, int64_t bytes, int lane) {
    calls_->push_back({bytes, lane, call_of_block_[block]});
  }

  void RecordPeaks(int64_t t, int op_index) {
    for (int c = 0; c < kNumMemCategories; ++c)
      mem_.max_bytes[c] = std::max(mem_.max_bytes[c], bytes_[c]);
    RecordTotalPeaks(t, op_index);
  }
  void RecordTotalPeaks(int64_t t, int op_index) {
    if (allocated_ > mem_.peak_allocated_bytes) {
      mem_.peak_allocated_bytes = allocated_;
      mem_.peak_allocated_time_ns = t;
      mem_.peak_allocated_op = op_index;
      mem_.at_peak_allocated = bytes_;
    }
    if (allocator_.reserved_bytes() > mem_.peak_reserved_bytes) {
      mem_.peak_reserved_bytes = allocator_.reserved_bytes();
      mem_.peak_reserved_time_ns = t;
      mem_.peak_reserved_op = op_index;
      mem_.at_peak_reserved = bytes_;
    }
  }

  void Sample(int64_t t) {
    if (!keep_samples_) return;
    MemorySample s{t, bytes_, allocated_, allocator_.reserved_bytes()};
    if (!mem_.samples.empty() && mem_.samples.back().time_ns == t) {
      mem_.samples.back() = s;
    } else {
      mem_.samples.push_back(s);
    }
  }

  CachingAllocatorModel allocator_;
  bool keep_samples_;
  RoleMemory mem_;
  CategoryBytes bytes_{};
  int64_t allocated_ = 0;
  int oom_seen_ = 0;
  bool changed_ = false;
  int role_;
  std::vector<BufferSlot>* table_;
  // Recording (calls_ set): which allocation each live allocator block holds, by block id. Kept
  // apart from LiveBuffer, whose table of slots every replay zeroes and walks, recording or not.
  AllocatorCalls* calls_;
  std::vector<int32_t> call_of_block_;
  int32_t allocations_ = 0;
  int table_live_ = 0;
  std::unordered_map<int, LiveBuffer> named_;
  std::map<std::pair<int, int64_t>, std::vector<LiveBuffer>> anonymous_;
};

}  // namespace

Result<std::vector<RoleMemory>> TrackMemory(const Schedule& schedule, const Timeline& timeline,
                                            const MemoryOptions& options,
                                            std::vector<AllocatorCalls>* calls) {
  const size_t roles = schedule.roles.size();
  if (calls != nullptr) calls->assign(roles, AllocatorCalls{});
  for (size_t r = 0; r < roles && r < schedule.initial_memory.size(); ++r) {
    for (int c = 0; c < kNumMemCategories; ++c) {
      if (schedule.initial_memory[r][c] < 0) {
        return InvalidInput(
            fmt::format("schedule: role {}: initial memory of category {} is negative", r, c));
      }
    }
  }
  // The log visits ops in time order, not in schedule order: what the replay reads of an op
  // (role, lane, effects) is first copied into compact tables in one pass in schedule order, so
  // the replay's reads stay off the large ScheduleOp records (a cache miss each).
  struct OpRecord {
    int first_effect = 0;  // its effects are effects[first_effect, next op's first_effect)
    int role = 0;
    int8_t lane = 0;
  };
  const size_t n = schedule.ops.size();
  std::vector<OpRecord> records(n + 1);
  std::vector<MemoryEffect> effects;
  effects.reserve(2 * n);
  std::vector<int64_t> role_effects(roles, 0);
  // Whether every named effect names a buffer of its own op's role in the table: then no two
  // roles share a slot and the roles can replay apart, on several threads. Looked at only
  // when there are threads to use (a read of the buffer table per effect).
  bool roles_apart = options.threads > 1;
  for (size_t i = 0; i < n; ++i) {
    const ScheduleOp& op = schedule.ops[i];
    if (op.role < 0 || static_cast<size_t>(op.role) >= roles) {
      return InvalidInput(fmt::format("schedule: op '{}': role {} is not one of the {} roles",
                                      OpIdOf(schedule, op), op.role, roles));
    }
    if (!OpListsInRange(schedule, op)) {
      return InvalidInput(
          OpListsRangeError(schedule, op, fmt::format("schedule: op '{}'", OpIdOf(schedule, op))));
    }
    const std::span<const MemoryEffect> memory = EffectsOf(schedule, op);
    records[i] = {static_cast<int>(effects.size()), op.role, static_cast<int8_t>(op.lane)};
    effects.insert(effects.end(), memory.begin(), memory.end());
    role_effects[op.role] += static_cast<int64_t>(memory.size());
    for (size_t k = 0; roles_apart && k < memory.size(); ++k) {
      const int b = memory[k].buffer;
      if (b >= 0 && static_cast<size_t>(b) < schedule.buffers.size() &&
          schedule.buffers[b].role != op.role) {
        roles_apart = false;
      }
    }
  }
  records[n].first_effect = static_cast<int>(effects.size());

  // Roles in groups, largest first onto the least loaded, two groups per thread so that a
  // thread done early (with the accounting beside the replay, say) takes a share: each role's
  // replay is the same in any group, so the figures do not depend on the split, and the error
  // reported is the first in log order, as one group finds it. Each group has its own buffer
  // table and phases: the ops and buffers of different roles interleave, and threads writing
  // neighbouring slots of one table would contend for its cache lines.
  const int threads = roles_apart ? std::max(1, options.threads) : 1;
  const int groups =
      std::clamp(threads == 1 ? 1 : 2 * threads, 1, std::max(1, static_cast<int>(roles)));
  std::vector<int> group_of(roles, 0);
  {
    std::vector<int> order(roles);
    for (size_t r = 0; r < roles; ++r) order[r] = static_cast<int>(r);
    std::stable_sort(order.begin(), order.end(),
                     [&](int x, int y) { return role_effects[x] > role_effects[y]; });
    std::vector<int64_t> load(groups, 0);
    for (int r : order) {
      const int g = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      group_of[r] = g;
      load[g] += role_effects[r] + 1;
    }
  }
  std::vector<std::unique_ptr<RoleState>> states(roles);
  struct Outcome {
    size_t at = SIZE_MAX;  // the log entry of the first error
    Status status;
  };
  std::vector<Outcome> outcomes(groups);
  std::vector<RoleMemory> finished(roles);
  // With several groups, the log entries that apply effects, per group, from one pass over the
  // log: each group scanning the whole log for its own entries read it once per group (four
  // times on two threads), and most entries are of ops without effects (tensor-parallel
  // collectives, say).
  const std::vector<Transition>& log = timeline.log;
  std::vector<std::vector<uint32_t>> group_log(groups > 1 ? groups : 0);
  for (size_t i = 0; groups > 1 && i < log.size(); ++i) {
    const int op = log[i].op;
    if (records[op + 1].first_effect > records[op].first_effect)
      group_log[group_of[records[op].role]].push_back(static_cast<uint32_t>(i));
  }
  auto replay = [&](int g) {
    std::vector<BufferSlot> table(schedule.buffers.size());
    for (size_t r = 0; r < roles; ++r) {
      if (group_of[r] != g) continue;
      const CategoryBytes initial =
          r < schedule.initial_memory.size() ? schedule.initial_memory[r] : CategoryBytes{};
      states[r] = std::make_unique<RoleState>(static_cast<int>(r), initial, options, &table,
                                              calls != nullptr ? &(*calls)[r] : nullptr);
    }
    // StepPhaseOf of this group's ops with effects, in schedule order: it reads each op and
    // its items (its op_id too, where no builder named the op), which lie in memory in that
    // order; read in the log's time order, op_ids missed the cache on nearly every op (TP 8 x
    // PP 8 x 17 micro-batches: 2.7 ms of a 7.3 ms replay against 0.9 ms).
    std::vector<int8_t> phases(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (group_of[records[i].role] == g && records[i + 1].first_effect > records[i].first_effect)
        phases[i] = static_cast<int8_t>(StepPhaseOf(schedule, schedule.ops[i]));
    }
    const size_t entries = groups > 1 ? group_log[g].size() : log.size();
    for (size_t j = 0; j < entries; ++j) {
      const size_t i = groups > 1 ? group_log[g][j] : j;
      const Transition& tr = log[i];
      const OpRecord& rec = records[tr.op];
      RoleState& st = *states[rec.role];
      const auto when = tr.is_start ? MemoryEffect::When::kStart : MemoryEffect::When::kEnd;
      const int end = records[tr.op + 1].first_effect;
      for (int k = rec.first_effect; k < end; ++k) {
        const MemoryEffect& e = effects[k];
        if (e.when != when) continue;
        if (Status s = st.Apply(schedule, tr.op, rec.lane, static_cast<StepPhase>(phases[tr.op]), e,
                                tr.time_ns);
            !s.ok()) {
          outcomes[g] = {i, std::move(s)};
          return;
        }
      }
      st.EndTransition(tr.time_ns);
    }
    // The states point into this group's table: finished here, while it lives, and dropped
    // here: memory is best freed by the thread that allocated it (mimalloc's heaps are per
    // thread; freed from another, its pages wait for this one to reclaim them).
    for (size_t r = 0; r < roles; ++r) {
      if (group_of[r] != g) continue;
      finished[r] = states[r]->Finish();
      states[r].reset();
    }
  };
  RunParts(groups, threads, replay);
  const Outcome* first = &outcomes[0];
  for (const Outcome& o : outcomes) {
    if (o.at < first->at) first = &o;
  }
  if (!first->status.ok()) return first->status;

  for (size_t r = 0; r < roles && r < schedule.initial_host_memory.size(); ++r) {
    for (int c = 0; c < kNumMemCategories; ++c) {
      if (schedule.initial_host_memory[r][c] < 0) {
        return InvalidInput(
            fmt::format("schedule: role {}: initial host memory of category {} is negative", r, c));
      }
    }
    finished[r].host_bytes = schedule.initial_host_memory[r];
  }
  return finished;
}

ReplayedReserve ReplayAllocatorCalls(const AllocatorCalls& calls, const CategoryBytes& initial,
                                     const MemoryOptions& options) {
  CachingAllocatorModel allocator(options.capacity_bytes, options.allocator);
  AllocateInitial(initial, &allocator);
  std::vector<int> handles;
  handles.reserve(calls.size());
  for (const AllocatorCall& call : calls) {
    if (call.bytes > 0) {
      handles.push_back(allocator.Allocate(call.bytes, call.stream));
    } else if (call.bytes < 0 && call.alloc >= 0 &&
               static_cast<size_t>(call.alloc) < handles.size()) {
      allocator.Free(handles[call.alloc]);
    }
  }
  return {allocator.peak_reserved_bytes(), allocator.capacity_hits(), allocator.oom_count()};
}

}  // namespace shardscope::sim
