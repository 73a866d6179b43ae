// The schedule's memory floor (sim/engine/memory_floor.h): exact on a hand-made schedule,
// below the replayed peak whatever the durations, below every simulated peak of the goldens
// and of random small jobs; and SimulateOptions::stop_when_not_fitting stops only jobs that
// the whole simulation also finds not fitting.
#include "sim/engine/memory_floor.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "core/util/units.h"
#include "sim/engine/engine.h"
#include "sim/engine/memory_tracker.h"
#include "sim/engine/simulator.h"
#include "sim/engine/steady_state.h"
#include "tests/engine/small_job.h"
#include "tests/engine/test_schedules.h"

namespace shardscope::sim {
namespace {

using testing::ScheduleMaker;
using When = MemoryEffect::When;

// A table buffer of `bytes` that `alloc` allocates and `free` (-1: nobody) frees.
void AddBuffer(ScheduleMaker& m, int alloc, When alloc_when, int free, When free_when,
               int64_t bytes, MemCategory c = MemCategory::kActivations) {
  Schedule& s = m.schedule();
  Buffer b;
  b.id = static_cast<int>(s.buffers.size());
  b.role = s.ops[alloc].role;
  b.category = c;
  b.bytes = b.numel = bytes;
  b.alloc_op = alloc;
  b.alloc_when = alloc_when;
  b.free_op = free;
  b.free_when = free_when;
  s.buffers.push_back(b);
  m.Mem(alloc, alloc_when, c, bytes, b.id);
  if (free >= 0) m.Mem(free, free_when, c, -bytes, b.id);
}

// The floor of m's schedule stays at or below the replayed peak of its role for 50 random
// sets of durations, zero-length ops among them.
void ExpectBelowReplayedPeaks(ScheduleMaker& m, unsigned seed) {
  const MemoryFloor floor = ScheduleMemoryFloor(m.schedule());
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<int64_t> ns = m.durations();
    for (int64_t& d : ns) d = static_cast<int64_t>(rng() % 4) * 10;
    Result<Timeline> tl = RunEngine(m.schedule(), ns, EngineOptions{});
    ASSERT_TRUE(tl.ok()) << tl.status().message();
    Result<std::vector<RoleMemory>> mem = TrackMemory(m.schedule(), *tl, MemoryOptions{});
    ASSERT_TRUE(mem.ok()) << mem.status().message();
    EXPECT_LE(floor.bytes, (*mem)[floor.role].peak_allocated_bytes) << "trial " << trial;
  }
}

// Role 0: three compute ops holding two activations (50 from c0's end to c2's start, 30 over
// c1 and c2); an all-gather's 1,000-byte output that c1 waits for and frees (live from c1's
// start whatever the timing); a second all-gather's 2,000 bytes that c2 frees but no compute op
// waits for (its lifetime depends on the timing, so it is left out); a buffer freed where it is
// allocated; 7 bytes live before the step. Role 1: one compute op with 60 bytes over it.
struct Example {
  ScheduleMaker m{2};
  int c0, c1, c2, g0, g1, d0;
  Example() {
    m.schedule().initial_memory[0][static_cast<int>(MemCategory::kShardedParams)] = 7;
    g0 = m.AllGather("fwd/g0/all_gather", 40);
    g1 = m.AllGather("fwd/g1/all_gather", 40);
    c0 = m.Compute("fwd/c0/compute", 10);
    c1 = m.Compute("fwd/c1/compute", 10, {g0});
    c2 = m.Compute("bwd/c2/compute", 10);
    d0 = m.Compute("fwd/d0/compute", 5, {}, 1);
    AddBuffer(m, c0, When::kEnd, c2, When::kStart, 50);
    AddBuffer(m, c1, When::kStart, c2, When::kEnd, 30);
    AddBuffer(m, g0, When::kStart, c1, When::kEnd, 1000, MemCategory::kUnshardedParams);
    AddBuffer(m, g1, When::kStart, c2, When::kEnd, 2000, MemCategory::kUnshardedParams);
    AddBuffer(m, c2, When::kEnd, c2, When::kEnd, 500, MemCategory::kTemporaries);
    AddBuffer(m, d0, When::kStart, d0, When::kEnd, 60);
  }
};

TEST(MemoryFloorTest, CountsWhatOneStreamCertainlyHolds) {
  Example ex;
  const MemoryFloor floor = ScheduleMemoryFloor(ex.m.schedule());
  EXPECT_EQ(floor.role, 0);
  EXPECT_EQ(floor.bytes, 7 + 50 + 30 + 1000);
  EXPECT_EQ(floor.op, ex.c1);
  // Without c1's wait on g0 its output's lifetime depends on the timing too.
  ex.m.schedule().ops[ex.c1].deps = {};
  EXPECT_EQ(ScheduleMemoryFloor(ex.m.schedule()).bytes, 7 + 50 + 30);
  // Role 1 alone holds 60.
  ex.m.schedule().initial_memory[0] = {};
  for (Buffer& b : ex.m.schedule().buffers) {
    if (b.role == 0) b.bytes = 0;
  }
  const MemoryFloor role1 = ScheduleMemoryFloor(ex.m.schedule());
  EXPECT_EQ(role1.role, 1);
  EXPECT_EQ(role1.bytes, 60);
  EXPECT_EQ(role1.op, ex.d0);
}

// A buffer a compute op allocates and a later op of another stream frees is live up to the end
// of the last compute op that the freeing op (or one before it on its stream) waits for.
TEST(MemoryFloorTest, FollowsAFreeOnAnotherStreamBackToTheComputeOpItWaitsFor) {
  ScheduleMaker m;
  const int c0 = m.Compute("bwd/c0/compute", 10);
  const int c1 = m.Compute("bwd/c1/compute", 10);
  const int c2 = m.Compute("bwd/c2/compute", 10);
  const int rs0 = m.ReduceScatter("bwd/c0/reduce_scatter", 50, {c1});
  const int rs1 = m.ReduceScatter("bwd/c1/reduce_scatter", 50);
  AddBuffer(m, c0, When::kEnd, rs0, When::kEnd, 100, MemCategory::kUnshardedGrads);
  AddBuffer(m, c0, When::kEnd, rs1, When::kEnd, 200, MemCategory::kUnshardedGrads);
  AddBuffer(m, c2, When::kStart, c2, When::kEnd, 10);
  // Both gradients are live from c0's end to c1's end (rs1 comes after rs0, which waits for
  // c1); at c2 only what the timing decides.
  const MemoryFloor floor = ScheduleMemoryFloor(m.schedule());
  EXPECT_EQ(floor.bytes, 300);
  EXPECT_EQ(floor.op, c0);
  ExpectBelowReplayedPeaks(m, 3);
}

TEST(MemoryFloorTest, IsBelowTheReplayedPeakWhateverTheDurations) {
  Example ex;
  ExpectBelowReplayedPeaks(ex.m, 7);
}

Result<Simulation> Simulate(const Scenario& sc, bool stop) {
  SimulateOptions o;
  o.keep_memory_samples = false;
  o.stop_when_not_fitting = stop;
  return SimulateScenario(sc, o);
}

// The floor of `sc`'s whole-step schedule is at most the simulated peak of its role.
void ExpectBelowPeak(const Scenario& sc, const std::string& job) {
  Result<Simulation> sim = Simulate(sc, false);
  ASSERT_TRUE(sim.ok()) << job << ": " << sim.status().message();
  const MemoryFloor floor = ScheduleMemoryFloor(sim->schedule);
  ASSERT_GE(floor.role, 0) << job;
  EXPECT_GT(floor.bytes, 0) << job;
  EXPECT_LE(floor.bytes, sim->memory[floor.role].peak_allocated_bytes) << job;
}

TEST(MemoryFloorTest, IsBelowEveryGoldenScenariosPeak) {
  const std::filesystem::path traces = std::filesystem::path(SHARDSCOPE_SOURCE_DIR) / "traces";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(traces)) {
    const std::filesystem::path file = entry.path() / "scenario.json";
    if (!std::filesystem::exists(file)) continue;
    Result<Scenario> sc = LoadScenario(file.string());
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    ExpectBelowPeak(*sc, file.string());
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(MemoryFloorTest, IsBelowThePeakOfRandomSmallJobs) {
  std::mt19937 rng(21);
  auto pick = [&](std::vector<std::string> v) { return v[rng() % v.size()]; };
  for (int trial = 0; trial < 24; ++trial) {
    const std::string pp = pick({"1", "2", "4"});
    std::vector<std::string> sets = {
        "parallelism.pp=" + pp,
        "parallelism.tp=" + pick({"1", "2"}),
        "training.activation_checkpoint=" + pick({"none", "selective_op", "full"}),
        "fsdp.forward_prefetch_depth=" + pick({"0", "1", "2"}),
        "fsdp.reshard_after_forward=" + pick({"true", "false"}),
        "fsdp.enable_offload=" + pick({"false", "false", "true"}),
    };
    if (pp != "1") {
      const std::string micro = std::to_string(std::stoi(pp) * 2);
      sets.push_back("parallelism.pp_schedule=" + pick({"1f1b", "gpipe", "interleaved_1f1b"}));
      sets.push_back("parallelism.pp_microbatches=" + micro);
      sets.push_back("training.local_batch=" + micro);
      if (sets.back().find("interleaved") != std::string::npos) {
        sets.push_back("parallelism.pp_virtual_stages=2");
      }
    } else {
      sets.push_back("training.grad_accum=" + pick({"1", "3"}));
    }
    std::string job;
    for (const std::string& s : sets) job += s + " ";
    nlohmann::json doc = testing::SmallJob(8);
    doc["cluster"]["nodes"] = 2;
    Result<Scenario> sc = ParseScenario(doc, "<test>", SHARDSCOPE_SOURCE_DIR, sets);
    ASSERT_TRUE(sc.ok()) << job << ": " << sc.status().message();
    ExpectBelowPeak(*sc, job);
  }
}

// Llama 3 70B on one node of H100s without checkpointing: the sharded state alone is 1.1 TB.
Result<Scenario> Llama70bOnOneNode() {
  nlohmann::json doc = DefaultScenarioJson();
  doc["model"] = "llama3-70b";
  doc["training"]["activation_checkpoint"] = "none";
  return ParseScenario(doc, "<test>", SHARDSCOPE_SOURCE_DIR);
}

TEST(MemoryFloorTest, StopsOnlyAJobThatDoesNotFit) {
  Result<Scenario> big = Llama70bOnOneNode();
  ASSERT_TRUE(big.ok()) << big.status().message();
  Result<Simulation> stopped = Simulate(*big, true);
  ASSERT_TRUE(stopped.ok()) << stopped.status().message();
  ASSERT_TRUE(stopped->floor_over_capacity.has_value());
  EXPECT_FALSE(stopped->summary.fits);
  EXPECT_TRUE(stopped->timeline.ops.empty());
  EXPECT_GT(ToGiB(stopped->floor_over_capacity->bytes), stopped->summary.usable_gib);
  ASSERT_FALSE(stopped->summary.warnings.empty());
  EXPECT_NE(stopped->summary.warnings.front().find("does not fit"), std::string::npos);
  Result<Simulation> whole = Simulate(*big, false);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_FALSE(whole->floor_over_capacity.has_value());
  EXPECT_FALSE(whole->summary.fits);
  EXPECT_LE(stopped->floor_over_capacity->bytes,
            whole->memory[stopped->floor_over_capacity->role].peak_allocated_bytes);

  // The default job fits: the option changes nothing.
  Result<Scenario> small = ParseScenario(DefaultScenarioJson(), "<test>", SHARDSCOPE_SOURCE_DIR);
  ASSERT_TRUE(small.ok()) << small.status().message();
  Result<Simulation> a = Simulate(*small, true);
  Result<Simulation> b = Simulate(*small, false);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(a->floor_over_capacity.has_value());
  EXPECT_TRUE(a->summary.fits);
  EXPECT_EQ(a->summary.step_time_s, b->summary.step_time_s);
  EXPECT_EQ(a->summary.peak_memory_reserved_gib, b->summary.peak_memory_reserved_gib);
}

// A pipeline long enough for the steady-state fast path (steady_state.h) that cannot fit is
// stopped by the whole step's floor, as without the fast path; its short runs are neither
// priced nor run (the first's floor is over the capacity too).
TEST(MemoryFloorTest, StopsAJobThatDoesNotFitBeforeItsFastPath) {
  nlohmann::json doc = DefaultScenarioJson();
  doc["model"] = "llama3-70b";
  doc["training"]["activation_checkpoint"] = "none";
  Result<Scenario> big =
      ParseScenario(doc, "<test>", SHARDSCOPE_SOURCE_DIR,
                    {"parallelism.pp=2", "parallelism.dp_shard=-1",
                     "parallelism.pp_microbatches=16", "training.local_batch=16"});
  ASSERT_TRUE(big.ok()) << big.status().message();
  ASSERT_TRUE(PlanSteadyState(*big).has_value());
  SimulateOptions o;
  o.keep_memory_samples = false;
  o.exact = false;
  o.stop_when_not_fitting = true;
  Result<Simulation> stopped = SimulateScenario(*big, o);
  ASSERT_TRUE(stopped.ok()) << stopped.status().message();
  ASSERT_TRUE(stopped->floor_over_capacity.has_value());
  EXPECT_FALSE(stopped->steady_state.has_value());
  EXPECT_FALSE(stopped->summary.fits);
  EXPECT_TRUE(stopped->timeline.ops.empty());
  // The floor is the whole step's: 16 micro-batches of 8,192 tokens on each of 4 shard ranks.
  EXPECT_EQ(stopped->summary.tokens_per_step, 16 * 8192 * 4);
  o.stop_when_not_fitting = false;
  Result<Simulation> run = SimulateScenario(*big, o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_FALSE(run->summary.fits);
}

}  // namespace
}  // namespace shardscope::sim
