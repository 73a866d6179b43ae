// The emitter behind BuildSchedule: one RoleEmitter per simulated rank appends that rank's ops
// (forward / backward of a model chunk for one micro-batch, pipeline sends and receives, the
// end-of-step wait and optimizer) with dependencies and memory effects (internal to
// core/schedule).
//
// Contents:
//   UnitGroups    process groups of one unit for the role's rank
//   StepInputs    resolved units (plan units + one root per model chunk), work, sizes, labels,
//                 as views of the step's basis
//   Words         Schedule::words as the emitters of one schedule share them
//   EffectLog     the memory effects of one schedule as its emitters add them, in any op order
//   NamedOpId     an op_id's parts (OpIdKey) and phase, as an emitter gives them to an op
//   RoleEmitter   the per-rank emitter the builder drives action by action
#pragma once

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/schedule/schedule_builder.h"
#include "core/schedule/step_basis.h"
#include "core/schedule/unit_sizes.h"
#include "core/schedule/unit_work.h"

namespace shardscope {

struct UnitGroups {
  int shard = -1;      // all-gather / reduce-scatter group (-1 when S == 1)
  int replicate = -1;  // HSDP all-reduce group (-1 when R == 1)
  int flat = -1;       // replicate × shard, for replicate params (-1 when size 1)
  // reshard_after_forward = d (UnitPlan::reshard_after_forward_ranks): the d consecutive
  // ranks of the shard group the backward all-gather runs over (FSDP2's post-forward mesh,
  // mesh.view(-1, d)); -1 otherwise.
  int post_forward = -1;
};

// The units and their figures are views of the step's basis (step_basis.h), which outlives
// the build.
struct StepInputs {
  const ScheduleOptions* options = nullptr;
  std::span<const UnitPlan> units;      // plan units; chunk roots replace the plan's root
  std::span<const std::string> labels;  // op_id unit part per unit ("root" for a chunk root)
  std::span<const UnitWork> work;       // per unit
  std::span<const UnitSizes> sizes;     // per unit
  std::span<const int> chunk_of;        // per unit: the model chunk it belongs to
  std::span<const std::vector<WorkSegment>> segments;   // per unit (StepBasis::segments)
  std::span<const int> chunk_counts;                    // per unit: its chunk segments
  std::span<const std::vector<GradGroup>> grad_groups;  // per unit
  int micro_batches = 1;  // micro-batches per optimizer step (all roles)
  // Whether non-final micro-batches reduce gradients / reshard after backward (false under
  // pipeline parallelism: torch.distributed.pipelining's backward_maybe_with_nosync).
  bool sync_every_micro = true;
  bool reshard_every_micro = true;
  // Under pipeline parallelism, the micro-batches of one schedule.step() (pp_microbatches):
  // each step ends with FSDP's reduction and reshard, so with gradient accumulation a unit
  // reduces and reshards after the last micro-batch of every pass. 0: no passes.
  int pass_micro_batches = 0;
  DType compute_dtype = DType::kBFloat16;  // activations and their gradients
};

// A word whose text is a constant of static storage duration (a string literal, an op_what
// constant): the constructors are consteval, so a text formed at run time cannot become one, and
// its address names the text for the program's life (Words::OfStatic).
class StaticWord {
 public:
  consteval StaticWord(std::string_view text) : text_(text) {}  // NOLINT: constants convert
  consteval StaticWord(const char* text) : text_(text) {}       // NOLINT: literals convert
  std::string_view text() const { return text_; }

 private:
  std::string_view text_;
};

// The words of one schedule (Schedule::words: op_ids' unit labels and `what`s, op names, unit
// FQNs), each once.
class Words {
 public:
  explicit Words(Schedule& schedule) : schedule_(schedule) {}
  Words(const Words&) = delete;
  Words& operator=(const Words&) = delete;
  int32_t Of(std::string_view word);  // its index in schedule.words, added when new
  // The same for a constant: known by its address, with no text compared. Of compares, as a
  // buffer may hold another word by now; its comparisons were 3.6% of a 70B grid slice's
  // instructions, most for the few constant op names and op_id parts every op carries
  // (callgrind, 2026-12-07). Debug builds compare anyway.
  int32_t OfStatic(StaticWord word);

 private:
  // A word's index by the address and length of a view a caller passed.
  struct Seen {
    const char* data = nullptr;
    size_t size = 0;
    int32_t index = -1;
  };
  // The constants OfStatic was given (a few dozen per schedule).
  static constexpr size_t kKnown = 64;
  std::array<Seen, kKnown> known_{};
  // The views callers passed last: they pass the same few again and again (literals, the
  // plan's names), and hashing each was 7.6% of a prediction's instructions (callgrind, TP 8 x
  // PP 8 x 64).
  static constexpr size_t kRecent = 1024;
  std::array<Seen, kRecent> recent_{};
  Schedule& schedule_;
  std::deque<std::string> keys_;  // what index_'s views point to (a deque never moves them)
  std::unordered_map<std::string_view, int32_t> index_;
};

// The memory effects of one schedule as its emitters add them: to the op being formed when it
// is pushed, or to an op pushed long before (a free at a unit's last backward op). Commit puts
// them into Schedule::effect_list op by op, each op's in the order they came, and gives every
// op its range.
class EffectLog {
 public:
  void Reserve(size_t effects) { log_.reserve(effects); }
  void Add(int op, const MemoryEffect& effect) { log_.push_back({op, effect}); }
  void Commit(Schedule& schedule);

 private:
  struct Entry {
    int op;
    MemoryEffect effect;
  };
  std::vector<Entry> log_;
};

// An op_id as the builder forms it (ScheduleOp::id), with its phase part (ScheduleOp::id_phase).
struct NamedOpId {
  OpIdKey key;
  OpPhase phase = OpPhase::kForward;
};

class RoleEmitter {
 public:
  // `groups` are this role's process groups per unit; `units` the units this role runs;
  // `group_remap` maps the TP/CP/EP groups of the unit work (built for stage 0) to this role's.
  // `words` holds `schedule`'s op_id words and `effects` its memory effects, for every emitter
  // of it (Commit them once all have finished).
  RoleEmitter(const StepInputs& in, std::vector<UnitGroups> groups, std::vector<int> units,
              std::map<int, int> group_remap, int role, Schedule& schedule, Words& words,
              EffectLog& effects);
  ~RoleEmitter();
  RoleEmitter(const RoleEmitter&) = delete;
  RoleEmitter& operator=(const RoleEmitter&) = delete;

  // Forward / backward of the chunk whose root unit is `chunk_root`, micro-batch `micro`.
  // `waits` are ops (maybe on other roles) the chunk's first compute op must wait for.
  void Forward(int chunk_root, int micro, const std::vector<int>& waits);
  void Backward(int chunk_root, int micro, const std::vector<int>& waits);
  // A pipeline transfer on this role's p2p lane; returns the op index. A send depends on the
  // last compute op; a receive on `peer_send` (the matching send on the other role).
  int Send(NamedOpId op_id, int group, int64_t bytes, int micro);
  int Recv(NamedOpId op_id, int group, int peer_send, int micro);
  // End of backward: wait for all reductions, then the optimizer step over this role's units.
  void Finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardscope
