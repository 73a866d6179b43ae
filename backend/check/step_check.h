// `run --check`: after the step, this rank verifies exactly what the plan promises of the data
// it exchanged, against references it builds on its own from the deterministic parameter and
// gradient values (backend/exec/param_state.h), with FSDP2's layouts and the reduction rule
// (backend/check/reduction_rule.h):
//   - every FSDP all-gather output reassembles the reference parameters of the unit: each
//     shard rank's slot holds its rows in param_dtype (cast from the own dtype), padding zero;
//   - every reduce-scatter input is this rank's chunk_cat of its gradients (reduce dtype,
//     padded; with accumulation without sync, the sum of the micro-steps' gradients), and its
//     output the rule's reduction of every shard rank's input (reduce op, pre-scale / ncclAvg,
//     post-divide): bit-exact;
//   - every HSDP all-reduce yields the reduction, over the replicate group, of the replicas'
//     reduce-scatter outputs; replicate parameters' all-reduce the reduction of all ranks'
//     whole gradients (in the reduce dtype; their gradient lands from that result, cast once
//     to the parameter's dtype, whatever dtype their buffer holds);
//   - the AdamW step left on each shard, and on each replicate parameter, what a reference
//     AdamW (torch's _multi_tensor_adamw, double precision, the parameter rounded to its dtype
//     after each step) computes on the full tensor from the reference parameters and the
//     reduced gradient: float32 relative difference <= 1e-6 per step run (of the larger of
//     the parameter before and after), padding rows still zero; the gradient it read (the
//     landed reduction, bit-exact) and the moments it left (exp_avg, exp_avg_sq: the same
//     relative tolerance, of their own magnitudes) too, since the update itself hardly
//     depends on the gradient's scale (m / sqrt(v), eps 1e-8). AdamW is elementwise, so the
//     full tensor's reference is evaluated at the elements this rank holds. Units with CPU
//     offload are checked alike (their step runs on the host buffers).
// Every step of `--steps N` is verified: the executor's gradients are the same every step
// (they do not depend on the parameters), so step k's references are the reference AdamW
// iterated k times. From the second step on the gathered parameters are compared within the
// same tolerance (the device's float32 arithmetic and the double reference may round an
// element's last bit apart), the gradients' collectives stay bit-exact.
// A unit without peers (a shard group of one) has no reduce-scatter: its reduction is the
// local cast of chunk_cat into the reduce dtype, which the references follow.
// With sync every micro-step each micro-step's reduction is added to the gradients the first
// one landed (FSDP2's `sharded_param.grad += new_sharded_grad`), on the device, in an
// offloaded unit's host gradients and in the replicate params' gradients alike.
// Not verified: the replicate parameters of an offloaded unit (kept on the device, their
// gradients never reach the host step).
//
// Contents:
//   StepChecker    the executor's observer: copies each checked op's buffers right after the
//                  op (before any free), then Verify() compares them with the references
//   CheckReport    what was verified; the first mismatches
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/exec/executor.h"
#include "backend/exec/param_state.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/util/status.h"

namespace shardscope::backend {

struct CheckReport {
  int all_gathers = 0, reduce_scatters = 0, all_reduces = 0, optimizer_tensors = 0;
  int steps = 0;                              // steps whose optimizer update was verified
  int64_t elements = 0;                       // elements compared
  int64_t mismatches = 0;                     // elements that differed
  std::vector<std::string> first_mismatches;  // at most kMaxListed, in op order
  static constexpr int kMaxListed = 8;
  std::string Text(int rank) const;  // one line: what was verified
};

class StepChecker final : public ExecObserver {
 public:
  // `exec` gives AdamW's hyper-parameters. The schedule holds one role (this rank's).
  StepChecker(const Schedule& schedule, const Plan& plan, const ExecOptions& exec);

  Status AfterOp(int op, const ExecContext& ctx) override;
  Status AfterRun(const ExecContext& ctx) override;

  // After RunSchedule succeeded: CheckFailed naming op_id, rank, tensor and element of the
  // first mismatches; the report either way.
  Status Verify(CheckReport* report) const;

 private:
  struct Snapshot {
    int op = -1;
    int step = 0;
    std::vector<char> input, output;  // bytes copied after the op
  };
  struct UnitRef {
    const UnitPlan* plan = nullptr;
    UnitLayout layout;
    int shard = -1, replicate = -1;     // persistent buffer ids (as the executor matches them)
    int exp_avg = -1, exp_avg_sq = -1;  // the optimizer's moments (persistent)
    int sharded_grads = -1;             // the gradients the optimizer reads
    int reduction = -1;                 // its reduce-scatter op, or without peers chunk_cat's
    bool local_reduction = false;       // no peers: the reduction is chunk_cat's local cast
    int hsdp_all_reduce = -1;           // the all-reduce of its reduced shard over the replicas
    int replicate_all_reduce = -1;      // its replicate params' all-reduce (-1: one rank)
    int micro_steps = 1;                // micro-steps each reduction carries (accumulation)
    std::vector<int> reduction_micros;  // the micro-step of each reduction (sync every one)
    std::vector<int> replicate_micros;  // the micro-step of each replicate params' all-reduce
  };
  Status Copy(const ExecContext& ctx, Lane lane, int buffer, std::vector<char>& out);
  const UnitRef* UnitOf(const ScheduleOp& op) const;

  const Schedule& s_;
  const Plan& plan_;
  ExecOptions exec_;
  int rank_ = 0;
  int last_micro_ = 0;                    // the step's last micro-step
  std::vector<ScheduledUnit> scheduled_;  // what units_ point into (set once)
  std::map<std::string, UnitRef> units_;  // by label (Buffer::unit)
  std::vector<Snapshot> collectives_;
  // Per step: buffer id → bytes after the optimizer.
  std::vector<std::map<int, std::vector<char>>> optimized_;
};

}  // namespace shardscope::backend
