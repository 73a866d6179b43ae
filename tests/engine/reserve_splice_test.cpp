// The allocator calls of a long step spliced from two short runs' (sim/engine/reserve_splice.h):
// on a made-up 1F1B-like stream, where the step's calls are known, and on a pipeline job whose
// reserve moves with its micro-batch count, where they are the whole step's calls themselves.
#include "sim/engine/reserve_splice.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_builder.h"
#include "core/schedule/schedule_options.h"
#include "sim/engine/memory_tracker.h"
#include "sim/engine/simulator.h"
#include "sim/engine/steady_state.h"
#include "tests/engine/small_job.h"

namespace shardscope::sim {
namespace {

// Calls with their allocations numbered as they come, frees naming them by that number.
class Stream {
 public:
  int Alloc(int64_t bytes, int stream = 1) {
    calls_.push_back({bytes, stream, -1});
    sizes_.push_back(bytes);
    return static_cast<int>(sizes_.size()) - 1;
  }
  void Free(int alloc) { calls_.push_back({-sizes_[alloc], 0, alloc}); }
  const AllocatorCalls& calls() const { return calls_; }

 private:
  AllocatorCalls calls_;
  std::vector<int64_t> sizes_;
};

// A first pipeline stage of `depth` micro-batches in flight over `micro` micro-batches: an
// accumulator allocated in the first backward and freed at the end; warm-up forwards; steady
// periods that allocate the next micro-batch's activations, a temporary and a gradient, and
// free the oldest micro-batch's activations; a cool-down of backwards; a reduction buffer at
// the end. `grow`: a period's temporary grows with its micro-batch (not periodic).
AllocatorCalls FirstStage(int micro, int depth = 3, bool grow = false) {
  Stream s;
  std::vector<int> acts;
  int accumulator = -1;
  auto backward = [&](int k) {
    const int tmp = s.Alloc(4096 + (grow ? 512 * k : 0), 2);
    if (accumulator < 0) accumulator = s.Alloc(1 << 20);
    s.Free(acts[static_cast<size_t>(k)]);
    s.Free(tmp);
  };
  for (int k = 0; k < micro; ++k) {
    acts.push_back(s.Alloc(3 << 20));
    if (k >= depth - 1) backward(k - (depth - 1));
  }
  for (int k = micro - (depth - 1); k < micro; ++k) backward(k);
  const int reduce = s.Alloc(2 << 20, 3);
  s.Free(reduce);
  s.Free(accumulator);
  return s.calls();
}

bool SameCalls(const AllocatorCalls& x, const AllocatorCalls& y) {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].bytes != y[i].bytes || x[i].alloc != y[i].alloc ||
        (x[i].bytes > 0 && x[i].stream != y[i].stream)) {
      return false;
    }
  }
  return true;
}

TEST(ReserveSpliceTest, AMadeUpStageGetsTheLongStepsCalls) {
  const AllocatorCalls a = FirstStage(4), b = FirstStage(7);
  for (int m : {7, 8, 15, 40}) {
    const std::optional<AllocatorCalls> spliced = SpliceAllocatorCalls(a, b, 4, 7, m);
    ASSERT_TRUE(spliced.has_value()) << m;
    EXPECT_TRUE(SameCalls(*spliced, FirstStage(m))) << m;
  }
}

// Runs one period apart (gradient accumulation's 3 and 4 steps): X is one period, and the one
// before it must repeat it, as far back as its frees reach.
TEST(ReserveSpliceTest, RunsOnePeriodApartSplice) {
  const AllocatorCalls a = FirstStage(6), b = FirstStage(7);
  for (int m : {7, 9, 20}) {
    const std::optional<AllocatorCalls> spliced = SpliceAllocatorCalls(a, b, 6, 7, m);
    ASSERT_TRUE(spliced.has_value()) << m;
    EXPECT_TRUE(SameCalls(*spliced, FirstStage(m))) << m;
  }
  // With 5 and 6, the period before X frees what was allocated before the first backward's
  // accumulator, one allocation further back than X's frees reach: nothing shows that X repeats.
  EXPECT_FALSE(SpliceAllocatorCalls(FirstStage(5), FirstStage(6), 5, 6, 20));
}

TEST(ReserveSpliceTest, CallsThatDoNotRepeatDoNotSplice) {
  // The temporary grows with the micro-batch: b is not a with periods inserted.
  EXPECT_FALSE(SpliceAllocatorCalls(FirstStage(4, 3, true), FirstStage(7, 3, true), 4, 7, 20));
  // A period count that does not divide what b adds.
  EXPECT_FALSE(SpliceAllocatorCalls(FirstStage(4), FirstStage(7), 4, 6, 20));
  // A free of an allocation of another size.
  AllocatorCalls b = FirstStage(7);
  for (AllocatorCall& call : b) {
    if (call.bytes == -(1 << 20)) call.bytes = -(2 << 20);  // the accumulator's free
  }
  EXPECT_FALSE(SpliceAllocatorCalls(FirstStage(4), b, 4, 7, 20));
  // Counts out of order.
  EXPECT_FALSE(SpliceAllocatorCalls(FirstStage(4), FirstStage(7), 7, 4, 20));
  EXPECT_FALSE(SpliceAllocatorCalls(FirstStage(4), FirstStage(7), 4, 7, 6));
}

Scenario MovingReserveJob(int micro_batches) {
  return ParseScenario(testing::MovingReserveJob(micro_batches), "<test>", ".").value();
}

// The run of `micro_batches` with its allocator calls kept.
Simulation RunKeepingCalls(int micro_batches) {
  const Scenario sc = MovingReserveJob(micro_batches);
  ModelBuildOptions build;
  build.tp = sc.parallelism.tp;
  const ModelTree tree = LoadModel(sc.model, build).value();
  const Plan plan = PlanScenario(sc, tree).value();
  ScenarioPricing pricing = PriceScenario(sc, tree).value();
  pricing.ctx.keep_memory_samples = false;
  pricing.ctx.keep_allocator_calls = true;
  ScheduleOptions options = ScheduleOptionsFromScenario(sc);
  options.grad_param_names = false;
  return SimulateSchedule(BuildSchedule(tree, plan, options).value(), *pricing.cost, pricing.ctx)
      .value();
}

TEST(ReserveSpliceTest, APipelinesSplicedCallsAreTheWholeStepsCalls) {
  const SteadyStateRuns runs = PlanSteadyState(MovingReserveJob(30)).value();
  ASSERT_EQ(runs.a, 5);
  ASSERT_EQ(runs.b, 9);
  const Simulation a = RunKeepingCalls(runs.a), b = RunKeepingCalls(runs.b);
  const Simulation whole = RunKeepingCalls(runs.total);
  ASSERT_EQ(whole.allocator_calls.size(), 4u);
  ASSERT_EQ(a.allocator_calls.size(), 4u);
  ASSERT_EQ(b.allocator_calls.size(), 4u);
  // No capacity: the job reserves about 16 GiB of 78 usable, and meets it in no run.
  const MemoryOptions options{0, false};
  int64_t reserve = 0;
  for (size_t r = 0; r < 4; ++r) {
    const std::optional<AllocatorCalls> spliced = SpliceAllocatorCalls(
        a.allocator_calls[r], b.allocator_calls[r], runs.a, runs.b, runs.total);
    ASSERT_TRUE(spliced.has_value()) << "role " << r;
    EXPECT_TRUE(SameCalls(*spliced, whole.allocator_calls[r])) << "role " << r;
    // The recorded calls replay to the reserve of the replay that recorded them.
    const ReplayedReserve replayed =
        ReplayAllocatorCalls(whole.allocator_calls[r], whole.schedule.initial_memory[r], options);
    EXPECT_EQ(replayed.peak_reserved_bytes, whole.memory[r].peak_reserved_bytes) << "role " << r;
    reserve = std::max(reserve, replayed.peak_reserved_bytes);
  }
  // The step's reserve is neither short run's: no choice between them would give it.
  EXPECT_NE(a.summary.peak_memory_reserved_gib, whole.summary.peak_memory_reserved_gib);
  EXPECT_NE(b.summary.peak_memory_reserved_gib, whole.summary.peak_memory_reserved_gib);
  EXPECT_DOUBLE_EQ(static_cast<double>(reserve) / (1 << 30),
                   whole.summary.peak_memory_reserved_gib);
}

}  // namespace
}  // namespace shardscope::sim
