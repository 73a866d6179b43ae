// Runs one rank's schedule (a Schedule built with ScheduleOptions::rank) on a Device with a
// Communicator per group, exactly as the execution contract of core/schedule/schedule.h
// orders it, and measures it: when every op ran (a Timeline, the simulator's own type), the
// memory series from the allocator (RoleMemory) and the allocator's counters.
//
// Contents:
//   ExecOptions     steps, timeout, optimizer hyper-parameters, an observer
//   ExecContext     what an observer may look at: schedule, device, live buffers, the step
//   ExecObserver    hooks after each op's work is enqueued (what `run --check` uses)
//   StepRun         the measured last step (or the part of it that ran before a failure)
//   RunSchedule     the executor
//
// How it issues (one thread; the device's lanes run concurrently):
//   - ops in a topological order of the contract's edges: each lane's issue order, every
//     dep, and each communicator's issue order (rules 1-3, 5);
//   - per op: wait on the end event of every dep on another lane and, for a collective that
//     holds its communicator, of the communicator's previous collective; record a start
//     event; apply kStart memory effects; enqueue the op's work (its ComputeItems as device
//     kernels at their shapes, the collective through its communicator, copies as
//     memcpys); record an end event; apply kEnd memory effects (a free waits for the end
//     event of the op that frees: record_stream);
//   - a pipeline send whose lane's next op is a receive is issued with it, as one
//     point-to-point group (Communicator::BeginP2PGroup: NCCL's sends wait for the peer's
//     receive, and 1F1B's two stages of a hop each send first); its peer is the other rank
//     of the hop's group. The pair finishes together once the receive closed the group (the
//     send's end event, observer and end effects after the group's end: NCCL enqueues a
//     group's calls only there, possibly on two communicators, one per hop);
//   - nothing else: the schedule decides what runs where and after what.
// Data: sharded parameters are DeterministicValue(SeedOf(FQN), element index of the local
// tensor) in their dtype, padding rows zero (param_state.h), optimizer moments zero;
// gradients are DeterministicValue(GradSeed(rank, FQN, micro-step), index), written by the op
// that allocates the unsharded-gradient buffer holding them (the schedule names each buffer's
// parameters, Buffer::grads_of: a backward chunk's, or the rest at the unit's end), before the
// reduce copy-in reads them. Micro-steps without sync add them up in the unit's accumulator
// (the op that frees a micro-step's gradients folds them in, whichever unit's op it is) and
// reduce the sum; replicate params' sum replaces their last micro-step's gradient.
// Compute reads the gathered parameters and writes real outputs into the op's buffers (or a
// per-lane workspace the schedule does not track, reported apart); the math is the shape's,
// not the model's.
// Steps: every step runs the whole schedule; the last one is reported. Persistent state
// (parameters, moments) carries over, so step k's optimizer uses step count k.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "backend/comm/communicator.h"
#include "backend/device/device.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/timeline/memory_series.h"
#include "core/timeline/timeline.h"
#include "core/util/status.h"

namespace shardscope::backend {

class ExecObserver;

struct ExecOptions {
  int steps = 1;
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);  // per step: the watchdog
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 1e-2f;
  ExecObserver* observer = nullptr;  // not owned
};

struct ExecContext {
  const Schedule* schedule = nullptr;
  const Plan* plan = nullptr;
  Device* device = nullptr;
  int step = 0;  // 0-based
  // Live buffers by Schedule::buffers id (data == nullptr when not live now).
  const std::vector<DeviceBuffer>* buffers = nullptr;
  const DeviceBuffer& buffer(int id) const { return (*buffers)[id]; }
};

class ExecObserver {
 public:
  virtual ~ExecObserver() = default;
  // After op `op`'s work was enqueued on its lane, before its kEnd effects (frees) apply:
  // work the observer enqueues on that lane (a copy of the op's output) runs after the op
  // and before its buffers can be reused.
  virtual Status AfterOp(int op, const ExecContext& ctx) = 0;
  // After the last step drained, before persistent state is released.
  virtual Status AfterRun(const ExecContext& ctx) = 0;
};

struct StepRun {
  Timeline timeline;  // ns from the step's first event; ops that never ran keep -1
  RoleMemory memory;  // allocated exactly per category, reserved from the allocator
  MemoryCounters counters;
  int steps_run = 0;
  // Each step's time (first event to last, as Timeline::step_ns), the first step's first: the
  // first warms caches and allocators, and a shared machine's steps vary, so a caller that
  // wants a steady figure takes the median of the later ones.
  std::vector<int64_t> step_ns_each;
  // Ok, or the failure (out of memory: RuntimeError naming the op_id and the per-category
  // breakdown; a collective that failed or timed out: the op_id and the group). The timeline
  // and memory then hold what ran before it: the trace up to that point.
  Status failure;
  int failed_op = -1;
  // CPU time the issuing thread spends per op (the host overhead; bench/backend_benchmark).
  int64_t issue_ns_per_op = 0;
  // Operand memory for kernels whose op allocates none large enough: allocated once before
  // the first step (temporaries in the allocator's counters, outside the schedule's effects).
  int64_t workspace_bytes = 0;
  // The part of it each lane's ops share (by Lane − 1): lanes run concurrently, so each has
  // its own.
  std::array<int64_t, kNumLanes> workspace_by_lane{};
};

// `schedule` holds one role (this rank's); `comms` one communicator per Schedule::groups
// entry; `plan` gives the parameters' layouts. InvalidInput for a schedule it cannot run
// (several roles, a group without a communicator); anything that fails while running is
// StepRun::failure.
Result<StepRun> RunSchedule(const Schedule& schedule, const Plan& plan, Device& device,
                            std::vector<std::unique_ptr<Communicator>>& comms,
                            const ExecOptions& options);

}  // namespace shardscope::backend
