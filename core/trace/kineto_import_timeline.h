// Where a moment of a PyTorch profiler trace falls in the training step (internal to core/trace,
// used by kineto_import): FSDP2's record_function labels, the passes (micro-batches) and phases
// of each profiler step, and whose module work runs when.
//
// Contents:
//   FsdpKind, FsdpLabel   one parsed "FSDP::<kind> (<fqn>)" label (unit as op_id.h labels it)
//   ParseFsdpLabel        label text → FsdpLabel
//   LabelRange            a label and its time range
//   InnermostLabels       for many query times, the innermost label containing each: one sweep
//                         over labels sorted by start (O((labels + queries) log) in all)
//   Place                 where a moment falls: step, micro-batch, phase, unit, run
//   StepTimeline          builds the places from the labels and the step/backward/optimizer marks
//
// The rules (FSDP2's _fsdp_param_group.py / _fsdp_state.py label what they wrap):
//   - A pass (one forward + backward) begins at each "FSDP::root_pre_forward"; a step with several
//     passes numbers them as micro-batches (op_id "mb<k>/" prefix), one pass gets none.
//   - A pass's backward begins at its first "FSDP::pre_backward" or first autograd node
//     ("autograd::engine::evaluate_function: ..."), whichever comes first, so the loss's backward,
//     which runs before the root's pre-backward hook, is backward.
//   - "Optimizer.step#..." and "Optimizer.zero_grad#..." ranges are the step phase.
//   - Whose work runs: a unit's pre-forward / pre-backward end pushes it, its post-forward /
//     post-backward start pops it; the top (the root when empty) owns the moment. Each time a
//     unit becomes the top again after a nested unit ran, its next run begins: runs are the
//     `compute:k` chunks of op_id.h (callers number only the runs that hold work, so empty runs
//     between two nested units do not count). A pre-forward during backward (activation
//     checkpointing re-running a unit's forward) pushes a recompute run.
//   - The loss is a run of its own each way, as the schedule has it: a run begins at each
//     loss range's start and another at its end (the importer's ranges: the outermost
//     cross_entropy / nll_loss op forward, the nll_loss and log_softmax autograd nodes backward).
//   - A re-run forward in backward (the importer's ranges: non-reentrant activation
//     checkpointing runs it inside a backward node, without a label) is a recompute run of the
//     unit on top; after it the unit's compute run goes on (the same run, as the schedule has
//     one backward op around it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/trace/op_id.h"

namespace shardscope::trace_internal {

enum class FsdpKind {
  kPreForward,        // FSDP::pre_forward (u)
  kPostForward,       // FSDP::post_forward (u)
  kPreBackward,       // FSDP::pre_backward (u)
  kPostBackward,      // FSDP::post_backward_reshard (u), post_backward_rs_wait (u)
  kAllGather,         // FSDP::all_gather (u): copy-in, then the all-gather's issue
  kCopyOut,           // FSDP::all_gather_copy_out (u)
  kReduce,            // FSDP::post_backward_reduce (u): reduce copy-in, reduce-scatter, ...
  kPrefetch,          // FSDP::forward_prefetch for u / backward_prefetch for u
  kRootPreForward,    // FSDP::root_pre_forward
  kRootPostBackward,  // FSDP::root_post_backward_callback (waits for the reductions)
  kOther,             // any other FSDP:: label (cast_forward_inputs, ...): carries no unit
};

struct FsdpLabel {
  FsdpKind kind = FsdpKind::kOther;
  std::string unit;  // UnitOpLabel of the FQN ("root" for the root's labels, which carry none)
};

// `name` begins with "FSDP::". FSDP2's forms: "FSDP::<kind> (<fqn>)", "FSDP::<kind>" (the root),
// "FSDP::<pass>_prefetch for <fqn>", each possibly followed by " [pg=<size>]".
FsdpLabel ParseFsdpLabel(std::string_view name);

struct LabelRange {
  int64_t start_ns = 0, end_ns = 0;
  FsdpLabel label;
};

// For each of `times` (any order), the index into `labels` of the innermost label whose range
// contains it, or -1. `labels` must be sorted by (start, longer first); ranges that nest (one
// thread's record_function ranges) resolve exactly, ranges that cross resolve to the latest
// started one still open.
std::vector<int> InnermostLabels(const std::vector<LabelRange>& labels,
                                 const std::vector<int64_t>& times);

struct Place {
  int step = 0;    // profiler step (0 before the first ProfilerStep)
  int micro = -1;  // micro-batch; -1 when the step has one pass
  OpPhase phase = OpPhase::kForward;
  std::string_view unit;   // whose work runs ("root" when no unit is entered); valid while the
                           // StepTimeline lives
  int64_t run = 0;         // raw run id of `unit` within this pass and phase
  bool recompute = false;  // activation checkpointing's re-run of the unit's forward
};

class StepTimeline {
 public:
  // `labels`: sorted as InnermostLabels wants. `step_starts`: ProfilerStep starts.
  // `backward_marks`: starts of autograd nodes. `optimizer`: optimizer ranges. `loss`: the
  // loss's ranges (each its own run of the unit running it). `recompute`: re-run forwards.
  StepTimeline(const std::vector<LabelRange>& labels, std::vector<int64_t> step_starts,
               std::vector<int64_t> backward_marks,
               std::vector<std::pair<int64_t, int64_t>> optimizer,
               const std::vector<std::pair<int64_t, int64_t>>& loss = {},
               const std::vector<std::pair<int64_t, int64_t>>& recompute = {});

  Place At(int64_t t) const;
  // The run of `unit` at t within t's pass and phase: its latest run begun by t, else its first
  // one after t, else 0. For work inside a unit's own hook labels, which run before it is pushed
  // or after it is popped.
  int64_t RunOf(std::string_view unit, int64_t t) const;

 private:
  struct Pass {
    int64_t start_ns = 0;
    int64_t backward_ns = INT64_MAX;  // INT64_MAX: no backward seen
    int step = 0;
    int micro = -1;
  };
  struct Segment {
    int64_t t = 0;
    int pass_phase = 0;  // 2 · pass index + (backward ? 1 : 0)
    std::string unit;
    int64_t run = 0;
    bool recompute = false;
  };
  int PassIndex(int64_t t) const;
  int PassPhase(int64_t t) const;  // 2 · pass + backward
  bool InOptimizer(int64_t t) const;

  std::vector<int64_t> steps_;
  std::vector<Pass> passes_;
  std::vector<std::pair<int64_t, int64_t>> optimizer_;
  std::vector<Segment> segments_;                                       // by time
  std::map<std::string, std::vector<int>, std::less<>> unit_segments_;  // unit → its segments
  std::string root_;                                                    // UnitOpLabel("")
};

}  // namespace shardscope::trace_internal
