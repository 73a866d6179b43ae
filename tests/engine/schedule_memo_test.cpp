// Schedules shared across GPU types (sim/engine/schedule_memo.h): the memo's key sees every
// field but the GPU and the calibration, a prediction through a memo gives the summary of one
// without it (the whole step, the steady-state runs, and a job the memory floor stops on one GPU
// and not on another), and the plan and schedules are built once per key.
#include "sim/engine/schedule_memo.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "sim/engine/simulator.h"
#include "sim/engine/summary.h"
#include "tests/example_scenario.h"

namespace shardscope::sim {
namespace {

Scenario Load(const std::vector<std::string>& sets) {
  return testing::LoadExample("dense_llama3_8b.json", sets);
}

SimulateOptions SweepLike(ScheduleMemo* memo) {
  SimulateOptions o;
  o.keep_memory_samples = false;
  o.exact = false;
  o.stop_when_not_fitting = true;
  o.threads = 1;
  o.schedules = memo;
  return o;
}

// The summary as the sweep reads it, plus the floor verdict.
std::string Figures(const Result<Simulation>& sim) {
  if (!sim.ok()) return "error: " + sim.status().message();
  std::string out = SummaryToJson(sim->summary).dump();
  if (sim->floor_over_capacity) out += " floor " + std::to_string(sim->floor_over_capacity->bytes);
  if (sim->steady_state) out += " steady " + std::to_string(sim->steady_state->b);
  return out;
}

TEST(ScheduleMemo, KeySeesEverythingButTheGpuAndTheCalibration) {
  const std::string h100 = ScheduleMemo::KeyOf(Load({"cluster.gpu=h100-sxm"}));
  EXPECT_EQ(h100, ScheduleMemo::KeyOf(Load({"cluster.gpu=h200"})));
  EXPECT_EQ(h100, ScheduleMemo::KeyOf(Load({"cluster.gpu=mi300x"})));
  EXPECT_NE(h100, ScheduleMemo::KeyOf(Load({"parallelism.tp=2"})));
  EXPECT_NE(h100, ScheduleMemo::KeyOf(Load({"cluster.nodes=2"})));
  EXPECT_NE(h100, ScheduleMemo::KeyOf(Load({"cluster.gpus_per_node=4"})));
  EXPECT_NE(h100, ScheduleMemo::KeyOf(Load({"fsdp.forward_prefetch_depth=2"})));
  EXPECT_NE(h100, ScheduleMemo::KeyOf(Load({"training.local_batch=2"})));
}

// The overrides a sweep groups by: the same two fields, and only they.
TEST(ScheduleMemo, PricesOnlyNamesTheFieldsTheKeyLeavesOut) {
  EXPECT_TRUE(ScheduleMemo::PricesOnly("cluster.gpu=h200"));
  EXPECT_TRUE(ScheduleMemo::PricesOnly("cluster.cost_model=cal.json"));
  EXPECT_FALSE(ScheduleMemo::PricesOnly("cluster.gpus_per_node=4"));
  EXPECT_FALSE(ScheduleMemo::PricesOnly("cluster.gpu"));
  EXPECT_FALSE(ScheduleMemo::PricesOnly("parallelism.tp=2"));
}

// The key a sweep groups by and recommend orders by: every override but those two, in order.
TEST(ScheduleMemo, OverridesKeyDropsOnlyWhatTheCostModelReads) {
  const std::string key =
      ScheduleMemo::OverridesKey({"parallelism.tp=2", "cluster.gpu=h200", "cluster.gpus_per_node=4",
                                  "cluster.cost_model=cal.json", "training.local_batch=2"});
  EXPECT_EQ(key, "parallelism.tp=2\ncluster.gpus_per_node=4\ntraining.local_batch=2\n");
  EXPECT_EQ(ScheduleMemo::OverridesKey({"cluster.gpu=b200", "parallelism.tp=2"}),
            ScheduleMemo::OverridesKey({"parallelism.tp=2", "cluster.gpu=mi300x"}));
  EXPECT_NE(ScheduleMemo::OverridesKey({"parallelism.tp=2", "training.local_batch=2"}),
            ScheduleMemo::OverridesKey({"training.local_batch=2", "parallelism.tp=2"}));
}

// No checkpointing and two sequences per GPU: 80 GB of H100 is too little and the memory floor
// stops it; H200 and B200 run it from the same schedule.
TEST(ScheduleMemo, SharedSchedulesGiveEachGpuItsOwnFigures) {
  const std::vector<std::string> job = {"training.activation_checkpoint=none",
                                        "training.local_batch=2"};
  ScheduleMemo memo;
  bool stopped = false, ran = false;
  for (const char* gpu : {"h100-sxm", "h200", "b200", "h100-sxm"}) {
    std::vector<std::string> sets = job;
    sets.push_back(std::string("cluster.gpu=") + gpu);
    const Scenario sc = Load(sets);
    const Result<Simulation> alone = SimulateScenario(sc, SweepLike(nullptr));
    const Result<Simulation> shared = SimulateScenario(sc, SweepLike(&memo));
    EXPECT_EQ(Figures(shared), Figures(alone)) << gpu;
    ASSERT_TRUE(shared.ok()) << gpu;
    EXPECT_EQ(shared->gpu_name, gpu);
    (shared->floor_over_capacity ? stopped : ran) = true;
  }
  EXPECT_TRUE(stopped);
  EXPECT_TRUE(ran);
  EXPECT_EQ(memo.plans_kept(), 1);
  EXPECT_EQ(memo.runs_kept(), 1);

  // Another mesh is another key: planned and built again.
  const Scenario tp2 = Load({"parallelism.tp=2", "cluster.gpu=h200"});
  EXPECT_EQ(Figures(SimulateScenario(tp2, SweepLike(&memo))),
            Figures(SimulateScenario(tp2, SweepLike(nullptr))));
  EXPECT_EQ(memo.plans_kept(), 2);
  EXPECT_EQ(memo.runs_kept(), 2);
}

// A group's last variant takes the kept schedule instead of copying it: the same figures, the
// floor still kept; a prediction after that builds again rather than reading a moved-from one.
TEST(ScheduleMemo, TheLastUseTakesTheScheduleAndKeepsTheFloor) {
  const std::vector<std::string> job = {"training.activation_checkpoint=none",
                                        "training.local_batch=2"};
  auto with_gpu = [&](const char* gpu) {
    std::vector<std::string> sets = job;
    sets.push_back(std::string("cluster.gpu=") + gpu);
    return Load(sets);
  };
  ScheduleMemo memo;
  const Scenario h200 = with_gpu("h200"), h100 = with_gpu("h100-sxm"), b200 = with_gpu("b200");
  EXPECT_EQ(Figures(SimulateScenario(h200, SweepLike(&memo))),
            Figures(SimulateScenario(h200, SweepLike(nullptr))));
  ASSERT_NE(memo.Find(ScheduleMemo::kWholeStep), nullptr);
  const int64_t ops =
      static_cast<int64_t>(memo.Find(ScheduleMemo::kWholeStep)->schedule.ops.size());
  EXPECT_GT(ops, 0);
  memo.HandOverNext();
  // H100 is stopped by the floor the H200 prediction left, on the schedule handed over.
  const Result<Simulation> last = SimulateScenario(h100, SweepLike(&memo));
  EXPECT_EQ(Figures(last), Figures(SimulateScenario(h100, SweepLike(nullptr))));
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last->floor_over_capacity.has_value());
  EXPECT_EQ(static_cast<int64_t>(last->schedule.ops.size()), ops);
  const ScheduleMemo::Run* kept = memo.Find(ScheduleMemo::kWholeStep);
  ASSERT_NE(kept, nullptr);
  EXPECT_TRUE(kept->taken);
  EXPECT_TRUE(kept->schedule.ops.empty());
  EXPECT_TRUE(kept->floor.has_value());
  EXPECT_EQ(memo.runs_kept(), 1);
  EXPECT_EQ(Figures(SimulateScenario(b200, SweepLike(&memo))),
            Figures(SimulateScenario(b200, SweepLike(nullptr))));
  EXPECT_EQ(memo.runs_kept(), 2);  // built again
}

// A pipeline long enough for the steady-state extrapolation: its two short runs are kept and
// shared, and the extrapolated figures are those of a prediction without the memo.
TEST(ScheduleMemo, SteadyStateRunsAreShared) {
  const std::vector<std::string> job = {"parallelism.pp=2", "parallelism.pp_microbatches=16",
                                        "training.local_batch=16"};
  ScheduleMemo memo;
  for (const char* gpu : {"h200", "b200", "mi300x"}) {
    std::vector<std::string> sets = job;
    sets.push_back(std::string("cluster.gpu=") + gpu);
    const Scenario sc = Load(sets);
    const Result<Simulation> alone = SimulateScenario(sc, SweepLike(nullptr));
    ASSERT_TRUE(alone.ok()) << alone.status().message();
    EXPECT_TRUE(alone->steady_state.has_value()) << gpu << ": the fast path should apply";
    EXPECT_EQ(Figures(SimulateScenario(sc, SweepLike(&memo))), Figures(alone)) << gpu;
  }
  EXPECT_EQ(memo.plans_kept(), 1);
  EXPECT_EQ(memo.runs_kept(), 2);  // the shorter and the longer run
}

// One prediction on several threads runs the two short runs at once: they share the memo
// through it, and the figures do not change.
TEST(ScheduleMemo, TheTwoRunsOfOnePredictionMayBuildAtOnce) {
  const Scenario sc = Load({"parallelism.pp=2", "parallelism.pp_microbatches=16",
                            "training.local_batch=16", "cluster.gpu=h200"});
  ScheduleMemo memo;
  SimulateOptions threaded = SweepLike(&memo);
  threaded.stop_when_not_fitting = false;
  threaded.threads = 2;
  SimulateOptions alone = threaded;
  alone.schedules = nullptr;
  EXPECT_EQ(Figures(SimulateScenario(sc, threaded)), Figures(SimulateScenario(sc, alone)));
  EXPECT_EQ(memo.runs_kept(), 2);
  EXPECT_EQ(Figures(SimulateScenario(sc, threaded)), Figures(SimulateScenario(sc, alone)));
  EXPECT_EQ(memo.runs_kept(), 2);
}

}  // namespace
}  // namespace shardscope::sim
