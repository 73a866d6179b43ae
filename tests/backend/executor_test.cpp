// The executor on the CPU: the contract's order (lanes, deps, communicators), the measured
// memory against the schedule's own accounting, the FSDP data path (shards, all-gather slots,
// AdamW against a double-precision reference), steps, out of memory, and issue-order cycles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "backend/device/deterministic.h"
#include "backend/device/dtype_access.h"
#include "backend/exec/issue_order.h"
#include "backend/exec/param_state.h"
#include "exec_test_util.h"
#include "sim/engine/memory_tracker.h"

namespace shardscope::backend {
namespace {

using testing::LoadJob;
using testing::RunJob;

TEST(ExecutorTest, RunsEveryOpInTheContractsOrder) {
  auto job = LoadJob("eight_ranks.json", 3);
  const StepRun run = RunJob(*job);
  ASSERT_TRUE(run.failure.ok()) << run.failure.message();
  const Schedule& s = job->schedule;
  const Timeline& t = run.timeline;
  std::map<int, int> last_on_lane, last_on_group;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const ScheduleOp& op = s.ops[i];
    const std::string op_id = OpIdOf(s, op);
    ASSERT_GE(t.ops[i].start_ns, 0) << op_id << " never ran";
    ASSERT_GE(t.ops[i].end_ns, t.ops[i].start_ns) << op_id;
    for (int d : DepsOf(s, op))
      EXPECT_GE(t.ops[i].start_ns, t.ops[d].end_ns) << op_id << " after " << OpIdOf(s, s.ops[d]);
    const int lane = static_cast<int>(op.lane);
    if (auto it = last_on_lane.find(lane); it != last_on_lane.end()) {
      EXPECT_GE(t.ops[i].start_ns, t.ops[it->second].end_ns)
          << op_id << " overlaps " << OpIdOf(s, s.ops[it->second]) << " on its lane";
    }
    last_on_lane[lane] = static_cast<int>(i);
    if (op.group >= 0 && SerializesOnCommunicator(op.type)) {
      if (auto it = last_on_group.find(op.group); it != last_on_group.end()) {
        EXPECT_GE(t.ops[i].start_ns, t.ops[it->second].end_ns)
            << op_id << " overlaps " << OpIdOf(s, s.ops[it->second]) << " on its communicator";
      }
      last_on_group[op.group] = static_cast<int>(i);
    }
  }
  EXPECT_GT(t.step_ns, 0);
  EXPECT_GT(run.issue_ns_per_op, 0);
}

TEST(ExecutorTest, MeasuredAllocatedMemoryIsTheSchedulesOverTheMeasuredTimeline) {
  auto job = LoadJob("eight_ranks.json", 0);
  const StepRun run = RunJob(*job);
  ASSERT_TRUE(run.failure.ok()) << run.failure.message();
  // The simulator's tracker replayed over the measured timeline: allocated bytes are exact.
  const auto replay = sim::TrackMemory(job->schedule, run.timeline, {}).value();
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(run.memory.peak_allocated_bytes, replay[0].peak_allocated_bytes);
  EXPECT_EQ(run.memory.at_peak_allocated, replay[0].at_peak_allocated);
  EXPECT_EQ(run.memory.final_bytes, replay[0].final_bytes);
  // Reserved is the allocator's: rounded segments, at least what is allocated.
  EXPECT_GE(run.memory.peak_reserved_bytes, run.memory.peak_allocated_bytes);
  EXPECT_EQ(job->device->memory().allocated_bytes, 0) << "everything freed after the run";
}

// Reads a live buffer of the host device after the run.
class ShardReader : public ExecObserver {
 public:
  explicit ShardReader(int buffer) : buffer_(buffer) {}
  Status AfterOp(int, const ExecContext&) override { return Status::Ok(); }
  Status AfterRun(const ExecContext& ctx) override {
    const DeviceBuffer& b = ctx.buffer(buffer_);
    bytes.assign(static_cast<const char*>(b.data), static_cast<const char*>(b.data) + b.bytes);
    return Status::Ok();
  }
  std::vector<char> bytes;

 private:
  int buffer_;
};

int ShardBuffer(const Schedule& s, const std::string& label, int64_t bytes) {
  for (const Buffer& b : s.buffers) {
    if (b.alloc_op < 0 && b.category == MemCategory::kShardedParams && b.unit == label &&
        b.bytes == bytes) {
      return b.id;
    }
  }
  return -1;
}

// torch.optim.AdamW's first steps in double precision.
double ReferenceAdamW(double p, double g, int steps, const ExecOptions& o) {
  double m = 0, v = 0;
  for (int t = 1; t <= steps; ++t) {
    p *= 1.0 - o.lr * o.weight_decay;
    m = o.beta1 * m + (1 - o.beta1) * g;
    v = o.beta2 * v + (1 - o.beta2) * g * g;
    const double bc1 = 1 - std::pow(o.beta1, t), bc2 = 1 - std::pow(o.beta2, t);
    p -= o.lr / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + o.eps);
  }
  return p;
}

// One rank: its gradient is the reduction. Every parameter element after `steps` AdamW steps
// matches the reference on the element's deterministic value and gradient (bf16 casts exact).
void ExpectAdamW(int steps, const char* scenario = "one_rank.json", int micro_steps = 1) {
  auto job = LoadJob(scenario, 0);
  const UnitPlan& unit = job->plan.units.front();
  const UnitLayout layout = MakeUnitLayout(unit, 0);
  const int buffer = ShardBuffer(job->schedule, layout.label, layout.sizes.shard_bytes);
  ASSERT_GE(buffer, 0);
  ShardReader reader(buffer);
  ExecOptions o;
  o.steps = steps;
  o.observer = &reader;
  o.eps = 0.5f;  // AdamW with a tiny eps moves by lr · sign(g): this makes it see |g| too
  const StepRun run = RunJob(*job, o);
  ASSERT_TRUE(run.failure.ok()) << run.failure.message();
  ASSERT_EQ(run.steps_run, steps);
  ASSERT_EQ(static_cast<int64_t>(reader.bytes.size()), layout.sizes.shard_bytes);
  int64_t checked = 0;
  for (const ParamLayout& p : layout.params) {
    for (int64_t i = 0; i < p.valid_rows * p.cols; ++i) {
      const int64_t index = p.first_row * p.cols + i;
      // The gradient as it travels: compute dtype, summed over the micro-steps (each its
      // own values) in the reduce dtype, the parameter's dtype.
      auto round = [](DType d, float x) {
        char cell[8];
        StoreFromFloat(cell, d, 0, x);
        return LoadAsFloat(cell, d, 0);
      };
      float g = 0.0f;
      for (int m = 0; m < micro_steps; ++m) {
        g = round(p.reduce_dtype, g + round(p.gather_dtype, GradValue(0, p.fqn, index, m)));
      }
      g = round(p.own_dtype, g);
      const double want =
          ReferenceAdamW(ParamValue(p.fqn, index), g, p.requires_grad ? steps : 0, o);
      const double got = LoadAsFloat(reader.bytes.data() + p.shard_offset, p.own_dtype, i);
      ASSERT_LE(std::abs(got - want), 1e-6 * std::max(1.0, std::abs(want)))
          << p.fqn << "[" << index << "] after " << steps << " steps";
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(ExecutorTest, OptimizerStepOnTheShardMatchesReferenceAdamW) { ExpectAdamW(1); }
TEST(ExecutorTest, StepsCarryStateAndReportTheLast) { ExpectAdamW(3); }
TEST(ExecutorTest, AccumulationWithoutSyncReducesTheSumOfTheMicroSteps) {
  ExpectAdamW(1, "one_rank_accum.json", 2);
}

// Copies one op's output slot when the op has run (a host task on its lane).
class SlotCopier : public ExecObserver {
 public:
  SlotCopier(int op, int buffer) : op_(op), buffer_(buffer) {}
  Status AfterOp(int op, const ExecContext& ctx) override {
    if (op != op_) return Status::Ok();
    const DeviceBuffer b = ctx.buffer(buffer_);
    return ctx.device->HostTask(ctx.schedule->ops[op].lane, [this, b] {
      bytes.assign(static_cast<const char*>(b.data), static_cast<const char*>(b.data) + b.bytes);
      return Status::Ok();
    });
  }
  Status AfterRun(const ExecContext&) override { return Status::Ok(); }
  std::vector<char> bytes;

 private:
  int op_, buffer_;
};

TEST(ExecutorTest, EmulatedAllGatherHoldsThisRanksShardAndDeterministicPeers) {
  const int rank = 3;
  auto job = LoadJob("eight_ranks.json", rank);
  const Schedule& s = job->schedule;
  int ag = -1;
  for (size_t i = 0; i < s.ops.size() && ag < 0; ++i) {
    if (s.ops[i].type == OpType::kAllGather && s.ops[i].collective.output_buffer >= 0)
      ag = static_cast<int>(i);
  }
  ASSERT_GE(ag, 0);
  const ScheduleOp& op = s.ops[ag];
  const int u = job->plan.FindUnit(UnitOf(s, op));
  ASSERT_GE(u, 0);
  const UnitLayout layout = MakeUnitLayout(job->plan.units[u], rank);
  SlotCopier copier(ag, op.collective.output_buffer);
  ExecOptions o;
  o.observer = &copier;
  const StepRun run = RunJob(*job, o);
  ASSERT_TRUE(run.failure.ok()) << run.failure.message();
  ASSERT_EQ(static_cast<int64_t>(copier.bytes.size()), 8 * layout.shard_slot_bytes);
  // This rank's slot: its rows of every parameter in the gather dtype, padding zero.
  const char* mine = copier.bytes.data() + rank * layout.shard_slot_bytes;
  for (const ParamLayout& p : layout.params) {
    for (int64_t i = 0; i < p.shard_numel(); ++i) {
      const float want =
          i < p.valid_rows * p.cols ? ParamValue(p.fqn, p.first_row * p.cols + i) : 0.0f;
      char cell[8];
      StoreFromFloat(cell, p.gather_dtype, 0, want);
      ASSERT_EQ(LoadAsFloat(mine + p.gather_offset, p.gather_dtype, i),
                LoadAsFloat(cell, p.gather_dtype, 0))
          << p.fqn << " element " << i;
    }
  }
  // Another rank's slot (rank 0's): the emulated peers' deterministic values.
  const DType d = op.collective.dtype;
  const uint64_t seed = SeedOf(OpIdOf(s, op));
  for (int64_t i = 0; i < 16; ++i) {
    char cell[8];
    StoreFromFloat(cell, d, 0, DeterministicValue(seed, i));
    EXPECT_EQ(LoadAsFloat(copier.bytes.data(), d, i), LoadAsFloat(cell, d, 0));
  }
}

TEST(ExecutorTest, OutOfMemoryNamesTheOpAndKeepsWhatRanBefore) {
  auto probe = LoadJob("eight_ranks.json", 0);
  const StepRun full = RunJob(*probe);
  ASSERT_TRUE(full.failure.ok());
  // A capacity two segments under the step's reserved peak: the persistent state and the
  // kernels' workspace fit, the step does not (one segment under, the allocator may still
  // fit by releasing cached segments and retrying).
  auto job = LoadJob("eight_ranks.json", 0, full.memory.peak_reserved_bytes - (4 << 20));
  const StepRun run = RunJob(*job);
  ASSERT_FALSE(run.failure.ok());
  EXPECT_EQ(run.failure.code(), ErrorCode::kRuntime);
  ASSERT_GE(run.failed_op, 0);
  const std::string& msg = run.failure.message();
  EXPECT_NE(msg.find("out of memory at op '" +
                     OpIdOf(job->schedule, job->schedule.ops[run.failed_op]) + "'"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("allocated by category: sharded_params"), std::string::npos) << msg;
  EXPECT_TRUE(run.memory.oom);
  EXPECT_EQ(run.memory.oom_op, run.failed_op);
  EXPECT_LT(run.timeline.ops[run.failed_op].end_ns, 0) << "the failed op never ended";
  int ran = 0;
  for (const OpTiming& t : run.timeline.ops) ran += t.end_ns >= 0;
  EXPECT_GT(ran, 0);
}

TEST(ExecutorTest, IssueOrderRejectsACycleNamingItsOps) {
  Schedule s;
  s.roles.push_back(Role{"r", 0, 1});
  ScheduleOp a, b;
  SetOpId(s, a, "fwd/a/compute");
  SetOpId(s, b, "fwd/b/all_gather");
  b.lane = Lane::kAllGather;
  SetDeps(s, a, {1});
  SetDeps(s, b, {0});
  s.ops = {a, b};
  const Result<std::vector<int>> order = IssueOrder(s, 0);
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.status().message().find("fwd/a/compute, fwd/b/all_gather"), std::string::npos)
      << order.status().message();
  s.ops[0].deps = {};
  EXPECT_EQ(IssueOrder(s, 0).value(), (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace shardscope::backend
