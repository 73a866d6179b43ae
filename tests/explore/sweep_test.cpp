#include "sim/explore/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/util/units.h"
#include "sim/engine/simulator.h"
#include "sim/explore/sweep_output.h"

namespace shardscope::sim {
namespace {

VariantResult Fitting(double tps, double peak_gib, std::optional<double> cost, double s_per_mtok) {
  VariantResult v;
  v.outcome = VariantOutcome::kFits;
  v.figures.tokens_per_s_per_gpu = tps;
  v.figures.peak_reserved_gib = peak_gib;
  v.figures.cost_per_mtok_usd = cost;
  v.figures.s_per_mtok = s_per_mtok;
  return v;
}

TEST(RankVariants, EachObjectiveThenThroughputThenMemoryThenIndex) {
  std::vector<VariantResult> v = {
      Fitting(100, 50, 2.0, 10),          // 0
      Fitting(300, 70, 1.0, 5),           // 1
      Fitting(200, 40, 3.0, 2),           // 2
      Fitting(300, 60, 1.0, 5),           // 3: ties 1 on throughput and cost, less memory
      Fitting(150, 30, std::nullopt, 4),  // 4: no price
  };
  VariantResult invalid;
  invalid.outcome = VariantOutcome::kInvalid;
  v.push_back(invalid);  // 5
  VariantResult too_big = Fitting(900, 90, 0.1, 1);
  too_big.outcome = VariantOutcome::kDoesNotFit;
  v.push_back(too_big);                   // 6: never ranked
  v.push_back(Fitting(300, 60, 1.0, 5));  // 7: as 3 in every figure → after it
  EXPECT_EQ(RankVariants(v, Objective::kThroughput), (std::vector<int>{3, 7, 1, 2, 4, 0}));
  EXPECT_EQ(RankVariants(v, Objective::kCost), (std::vector<int>{3, 7, 1, 0, 2, 4}));
  EXPECT_EQ(RankVariants(v, Objective::kMemory), (std::vector<int>{4, 2, 0, 3, 7, 1}));
  EXPECT_EQ(RankVariants(v, Objective::kTime), (std::vector<int>{2, 4, 3, 7, 1, 0}));
}

// Settings that change nothing can leave figures a nanosecond of a second-long step apart (the
// default job without checkpointing, prefetch depth 1 and 2: 1.060085948 and 1.060085947 s);
// that must not rank the one with less headroom first, nor keep the other off the front. A
// difference the ranking resolves (a part in 10^5) still decides.
TEST(RankVariants, FiguresAPartInABillionApartRankByMemory) {
  const std::vector<VariantResult> v = {
      Fitting(7727.675303, 77.32, 0.1247320642, 16.17562787),    // 0: depth 1, more headroom
      Fitting(7727.675311, 77.94, 0.1247320637, 16.17562785),    // 1: depth 2, faster by a ns
      Fitting(7727.675311 * 1.00001, 78.5, 0.124730, 16.17546),  // 2: a part in 10^5 faster
  };
  EXPECT_EQ(RankVariants(v, Objective::kThroughput), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(RankVariants(v, Objective::kTime), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(RankVariants(v, Objective::kCost), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(RankVariants({v[0], v[1]}, Objective::kThroughput), (std::vector<int>{0, 1}));
  EXPECT_EQ(ParetoFront({v[0], v[1]}), (std::vector<int>{0}));
  EXPECT_EQ(ParetoFront(v), (std::vector<int>{2}));
}

TEST(RankedFigure, SixSignificantDigitsMonotonic) {
  EXPECT_EQ(RankedFigure(1.060085948), RankedFigure(1.060085947));
  EXPECT_NE(RankedFigure(1.06008), RankedFigure(1.06009));
  EXPECT_EQ(RankedFigure(-7727.675311), RankedFigure(-7727.675303));
  EXPECT_DOUBLE_EQ(RankedFigure(123456789.0), 123457000.0);
  EXPECT_DOUBLE_EQ(RankedFigure(0.000123456789), 0.000123457);
  EXPECT_EQ(RankedFigure(0.0), 0.0);
  EXPECT_EQ(RankedFigure(HUGE_VAL), HUGE_VAL);
  EXPECT_EQ(RankedFigure(-HUGE_VAL), -HUGE_VAL);
  // Monotonic across decades and signs: a bound below its key stays at or below it rounded.
  double previous = RankedFigure(-20.0);
  for (double x = -20.0; x <= 20.0; x += 0.0001237) {
    const double r = RankedFigure(x);
    EXPECT_GE(r, previous) << x;
    previous = r;
  }
  for (double x : {9.9999949, 9.9999951, 9.99999999, 99999.95, 0.099999951}) {
    EXPECT_LE(RankedFigure(x), RankedFigure(std::nextafter(x, HUGE_VAL))) << x;
  }
}

TEST(ParetoFront, CheaperThanEveryFasterOne) {
  const std::vector<VariantResult> v = {
      Fitting(1, 1, 5.0, 1),             // 0: fastest → on the front
      Fitting(1, 1, 6.0, 2),             // 1: slower and dearer than 0 → off
      Fitting(1, 1, 4.0, 3),             // 2: cheaper than 0 → on
      Fitting(1, 1, 4.0, 4),             // 3: as cheap as 2 but slower → off
      Fitting(1, 1, 1.0, 9),             // 4: cheapest → on
      Fitting(1, 1, std::nullopt, 0.5),  // 5: no cost → off
  };
  EXPECT_EQ(ParetoFront(v), (std::vector<int>{0, 2, 4}));
}

std::string Fixture(const char* path) { return std::string(SHARDSCOPE_SOURCE_DIR) + "/" + path; }

// A small grid over the Llama 3 8B example: two invalid meshes, one checkpoint mode that does
// not fit once dp_replicate keeps the state on fewer GPUs.
std::vector<VaryAxis> SmallGrid() {
  return {*ParseVary("parallelism.tp=1,2,3"), *ParseVary("parallelism.dp_replicate=1,2"),
          *ParseVary("training.activation_checkpoint=none,full"),
          *ParseVary("training.local_batch=1,4")};
}

TEST(Sweep, SameBytesOnOneAndFourThreads) {
  Result<SweepBase> base = LoadSweepBase(Fixture("examples/dense_llama3_8b.json"), {});
  ASSERT_TRUE(base.ok()) << base.status().message();
  SweepOptions one, four;
  one.threads = 1;
  four.threads = 4;
  Result<SweepResult> a = RunSweep(*base, SmallGrid(), one);
  Result<SweepResult> b = RunSweep(*base, SmallGrid(), four);
  ASSERT_TRUE(a.ok() && b.ok());
  SweepReport report;
  report.scenario = base->source;
  for (const VaryAxis& axis : SmallGrid()) report.paths.push_back(axis.path);
  EXPECT_EQ(SweepToJson(*a, report).dump(1), SweepToJson(*b, report).dump(1));
  EXPECT_EQ(SweepToCsv(*a, report), SweepToCsv(*b, report));
  EXPECT_EQ(FormatSweepTable(*a, report), FormatSweepTable(*b, report));

  // tp=3 does not divide the 32 attention heads (nor the 8-GPU world): invalid, by field.
  EXPECT_EQ(a->variants.size(), 24u);
  EXPECT_EQ(a->invalid, 8);
  EXPECT_EQ(a->fitting + a->not_fitting + a->invalid, 24);
  EXPECT_GT(a->fitting, 0);
  EXPECT_GT(a->not_fitting, 0);  // local_batch 4 with no checkpointing overflows 80 GB
  int64_t counted = 0;
  for (const auto& [reason, n] : a->invalid_by_reason) {
    EXPECT_EQ(reason.rfind("parallelism", 0), 0u) << reason;
    counted += n;
  }
  EXPECT_EQ(counted, a->invalid);
  EXPECT_FALSE(a->pareto.empty());
  for (int i : a->pareto) EXPECT_TRUE(a->variants[i].pareto);
}

// Variants that differ only in the GPU share their schedules (schedule_memo.h): the same bytes
// as each simulated alone, on one thread and on four, with the GPU axis first or last.
TEST(Sweep, SharedSchedulesAcrossGpusGiveTheSameBytes) {
  Result<SweepBase> base = LoadSweepBase(Fixture("examples/dense_llama3_8b.json"), {});
  ASSERT_TRUE(base.ok()) << base.status().message();
  const VaryAxis gpus = *ParseVary("cluster.gpu=h100-sxm,h200,b200");
  for (const bool gpu_first : {true, false}) {
    std::vector<VaryAxis> axes = SmallGrid();
    axes.insert(gpu_first ? axes.begin() : axes.end(), gpus);
    SweepReport report;
    report.scenario = base->source;
    for (const VaryAxis& axis : axes) report.paths.push_back(axis.path);
    SweepOptions alone;
    alone.threads = 2;
    alone.share_schedules = false;
    Result<SweepResult> expected = RunSweep(*base, axes, alone);
    ASSERT_TRUE(expected.ok());
    EXPECT_GT(expected->fitting, 0);
    EXPECT_GT(expected->not_fitting, 0);
    EXPECT_GT(expected->invalid, 0);
    for (const int threads : {1, 4}) {
      SweepOptions shared;
      shared.threads = threads;
      Result<SweepResult> got = RunSweep(*base, axes, shared);
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(SweepToJson(*got, report).dump(1), SweepToJson(*expected, report).dump(1))
          << "threads " << threads << (gpu_first ? ", GPU axis first" : ", GPU axis last");
    }
  }
}

// A split sweep (mpirun) keeps the variants that share schedules on one rank, and deals the
// rest round-robin by load.
TEST(DealCombinations, GroupsStayTogetherAndLoadsBalance) {
  // Six meshes × three GPUs, the GPU axis first (slowest): a group's variants lie six apart.
  const std::vector<VaryAxis> axes = {*ParseVary("cluster.gpu=h100-sxm,h200,b200"),
                                      *ParseVary("parallelism.tp=1,2,4"),
                                      *ParseVary("training.local_batch=1,2")};
  const int64_t count = 18;
  for (int parts : {1, 2, 4, 5}) {
    SCOPED_TRACE(parts);
    const std::vector<int> part_of = DealCombinations(axes, count, parts, true);
    ASSERT_EQ(part_of.size(), 18u);
    std::vector<int> load(static_cast<size_t>(parts), 0);
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_GE(part_of[i], 0);
      ASSERT_LT(part_of[i], parts);
      ++load[static_cast<size_t>(part_of[i])];
      EXPECT_EQ(part_of[i], part_of[i % 6]) << "variant " << i << " left its mesh's group";
    }
    // Groups of three: no part holds more than one group above another.
    const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    EXPECT_LE(*hi - *lo, 3);
  }
  // Without sharing, or with every variant its own group: round-robin.
  const std::vector<int> alone = DealCombinations(axes, count, 4, false);
  for (int64_t i = 0; i < count; ++i) EXPECT_EQ(alone[i], i % 4);
  const std::vector<VaryAxis> meshes = {*ParseVary("parallelism.tp=1,2,4"),
                                        *ParseVary("training.local_batch=1,2,3")};
  const std::vector<int> singles = DealCombinations(meshes, 9, 4, true);
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(singles[i], i % 4);
  // Fewer groups than parts: the largest is halved until each part has work.
  const std::vector<VaryAxis> one_mesh = {*ParseVary("cluster.gpu=h100-sxm,h200,b200")};
  EXPECT_EQ(DealCombinations(one_mesh, 3, 4, true), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(DealCombinations(one_mesh, 3, 2, true), (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(DealCombinations(one_mesh, 3, 1, true), (std::vector<int>{0, 0, 0}));
  EXPECT_TRUE(DealCombinations(one_mesh, 0, 4, true).empty());
}

TEST(Sweep, FiguresAreTheVariantsOwnSimulation) {
  Result<SweepBase> base = LoadSweepBase(Fixture("examples/dense_llama3_8b.json"), {});
  ASSERT_TRUE(base.ok());
  Result<SweepResult> r = RunSweep(*base, SmallGrid(), {});
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->ranking.empty());
  const VariantResult& best = r->variants[r->ranking.front()];
  Result<Scenario> sc = LoadScenario(Fixture("examples/dense_llama3_8b.json"), best.sets);
  ASSERT_TRUE(sc.ok());
  Result<Simulation> sim = SimulateScenario(*sc, {});
  ASSERT_TRUE(sim.ok());
  EXPECT_DOUBLE_EQ(best.figures.tokens_per_s_per_gpu, sim->summary.tokens_per_s_per_gpu);
  EXPECT_DOUBLE_EQ(best.figures.peak_reserved_gib, sim->summary.peak_memory_reserved_gib);
  EXPECT_DOUBLE_EQ(*best.figures.cost_per_mtok_usd,
                   3.47 * 1e6 / 3600 / sim->summary.tokens_per_s_per_gpu);
  // Nothing ranked below it is faster.
  for (int i : r->ranking) {
    EXPECT_LE(r->variants[i].figures.tokens_per_s_per_gpu, best.figures.tokens_per_s_per_gpu);
  }
}

// Each variant's figures are its own prediction made alone (no tree, plan or step basis shared
// with another variant), whether it fits or is stopped at the memory floor: a sweep's shared
// step bases (core/schedule/step_basis.h) serve the variants of one plan and micro-batch shape
// across checkpointing and accumulation, and a pipeline's across its micro-batch counts.
TEST(Sweep, EveryVariantsFiguresAreItsPredictionAlone) {
  Result<SweepBase> base =
      LoadSweepBase(Fixture("examples/dense_llama3_8b.json"), {"parallelism.pp_microbatches=2"});
  ASSERT_TRUE(base.ok()) << base.status().message();
  const std::vector<VaryAxis> axes = {
      *ParseVary("parallelism.pp=1,2"), *ParseVary("parallelism.tp=1,2"),
      *ParseVary("training.activation_checkpoint=none,full"), *ParseVary("training.grad_accum=1,2"),
      *ParseVary("training.local_batch=2,4")};
  SweepOptions options;
  options.threads = 2;
  Result<SweepResult> r = RunSweep(*base, axes, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->fitting, 0);
  EXPECT_GT(r->not_fitting, 0);
  SimulateOptions alone;  // as a sweep evaluates a variant, with nothing shared
  alone.keep_memory_samples = false;
  alone.stop_when_not_fitting = true;
  alone.figures_only = true;
  alone.threads = 1;
  int compared = 0;
  for (const VariantResult& v : r->variants) {
    if (v.outcome == VariantOutcome::kInvalid) continue;
    std::vector<std::string> sets = {"parallelism.pp_microbatches=2"};
    sets.insert(sets.end(), v.sets.begin(), v.sets.end());
    Result<Scenario> sc = LoadScenario(Fixture("examples/dense_llama3_8b.json"), sets);
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    Result<Simulation> sim = SimulateScenario(*sc, alone);
    ASSERT_TRUE(sim.ok()) << sim.status().message();
    std::string job;
    for (const std::string& s : v.sets) job += s + " ";
    SCOPED_TRACE(job);
    if (sim->floor_over_capacity) {
      EXPECT_EQ(v.outcome, VariantOutcome::kDoesNotFit);
      EXPECT_DOUBLE_EQ(v.figures.peak_reserved_gib, ToGiB(sim->floor_over_capacity->bytes));
    } else {
      EXPECT_EQ(v.outcome == VariantOutcome::kFits, sim->summary.fits);
      EXPECT_DOUBLE_EQ(v.figures.step_time_s, sim->summary.step_time_s);
      EXPECT_DOUBLE_EQ(v.figures.peak_reserved_gib, sim->summary.peak_memory_reserved_gib);
      EXPECT_DOUBLE_EQ(v.figures.exposed_comm_s, sim->summary.exposed_comm_s);
      EXPECT_DOUBLE_EQ(v.figures.mfu, sim->summary.mfu);
    }
    ++compared;
  }
  EXPECT_EQ(compared, 32);
}

TEST(Sweep, BaseErrorsAreTheUsers) {
  Result<SweepBase> base =
      LoadSweepBase(Fixture("examples/dense_llama3_8b.json"), {"parallelism.tp=5"});
  ASSERT_FALSE(base.ok());
  EXPECT_EQ(base.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(base.status().message().find("parallelism"), std::string::npos)
      << base.status().message();
}

// A value no combination parses is refused before anything runs, naming the flag and the value;
// values that parse somewhere (tp=3 is invalid with the 8B model's heads, but only at planning)
// pass, and those that never ran are listed after the sweep.
TEST(Sweep, AValueNoCombinationParsesIsRefusedBeforeTheRun) {
  Result<SweepBase> base = LoadSweepBase(Fixture("examples/dense_llama3_8b.json"), {});
  ASSERT_TRUE(base.ok());
  // tp 3 of 8 GPUs: no combination parses.
  const Status three = CheckAxisValues(*base, SmallGrid());
  EXPECT_EQ(three.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(three.message().rfind("--vary parallelism.tp=1,2,3: value '3' is invalid with every "
                                  "combination of the other axes; the first (parallelism.tp=3 "
                                  "parallelism.dp_replicate=1 training.activation_checkpoint=none "
                                  "training.local_batch=1): ",
                                  0),
            0u)
      << three.message();
  const Status one = CheckAxisValues(*base, {*ParseVary("parallelism.tp=1,abc")});
  EXPECT_EQ(one.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(one.message().rfind("--vary parallelism.tp=1,abc: value 'abc': ", 0), 0u)
      << one.message();
  const Status two = CheckAxisValues(
      *base, {*ParseVary("training.local_batch=1,2"), *ParseVary("parallelism.tp=1,abc,2")});
  EXPECT_EQ(two.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(two.message().rfind("--vary parallelism.tp=1,abc,2: value 'abc' is invalid with "
                                "every combination of the other axes; the first "
                                "(training.local_batch=1 parallelism.tp=abc): ",
                                0),
            0u)
      << two.message();
  // Valid with one value of another axis only: dp_shard 16 needs two nodes of the example's 8.
  EXPECT_TRUE(CheckAxisValues(
                  *base, {*ParseVary("cluster.nodes=1,2"), *ParseVary("parallelism.dp_shard=8,16")})
                  .ok());
  // Nothing parses: the axes together are wrong, no value is to blame.
  const Status none =
      CheckAxisValues(*base, {*ParseVary("parallelism.tp=1,2"), *ParseVary("parallelism.pp=3,5")});
  EXPECT_EQ(none.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(none.message().rfind(
                "every combination is invalid; the first (parallelism.tp=1 parallelism.pp=3): ", 0),
            0u)
      << none.message();

  // ep 2 parses but the dense model refuses it in every combination: listed after the run.
  const std::vector<VaryAxis> axes = {*ParseVary("parallelism.tp=1,2"),
                                      *ParseVary("parallelism.ep=1,2")};
  EXPECT_TRUE(CheckAxisValues(*base, axes).ok());
  Result<SweepResult> r = RunSweep(*base, axes, {});
  ASSERT_TRUE(r.ok());
  const std::vector<std::string> notes = ValuesNeverValid(*r, axes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("parallelism.ep=2 was invalid in every combination; the first "
                           "(parallelism.tp=1 parallelism.ep=2): ",
                           0),
            0u)
      << notes[0];
}

}  // namespace
}  // namespace shardscope::sim
