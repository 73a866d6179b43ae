// FsdpIndependentFloorSeconds (compute_floor.h): the step time no FSDP setting can beat, which
// recommend's refinement prunes on. It must not move with the FSDP settings and must not exceed
// any of their step times, on the whole step and on an extrapolated pipeline.
#include "sim/engine/compute_floor.h"

#include <gtest/gtest.h>

#include <string>

#include "core/config/scenario.h"
#include "tests/engine/small_job.h"

namespace shardscope::sim {
namespace {

struct Case {
  std::string name;
  nlohmann::json doc;
  bool extrapolated = false;  // long enough for the steady-state fast path
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  nlohmann::json fsdp = testing::SmallJob(4);
  fsdp["training"]["grad_accum"] = 2;
  cases.push_back({"fsdp with accumulation", fsdp});
  nlohmann::json tp = testing::SmallJob(4);
  tp["parallelism"]["tp"] = 2;
  cases.push_back({"tp 2", tp});
  nlohmann::json pp = testing::SmallJob(8);
  pp["parallelism"]["pp"] = 2;
  pp["parallelism"]["tp"] = 2;
  pp["parallelism"]["pp_microbatches"] = 16;
  pp["training"]["local_batch"] = 16;
  cases.push_back({"tp 2 x pp 2, 16 micro-batches", pp, true});
  return cases;
}

TEST(FsdpIndependentFloor, SameForEveryFsdpSettingAndBelowEachStep) {
  for (const Case& c : Cases()) {
    double first = -1;
    for (int prefetch : {1, 2}) {
      for (bool reshard : {true, false}) {
        nlohmann::json doc = c.doc;
        doc["fsdp"]["forward_prefetch_depth"] = prefetch;
        doc["fsdp"]["backward_prefetch_depth"] = prefetch;
        doc["fsdp"]["reshard_after_forward"] = reshard;
        Result<Scenario> sc = ParseScenario(doc, c.name, ".");
        ASSERT_TRUE(sc.ok()) << sc.status().message();
        SimulateOptions options;
        options.keep_memory_samples = false;
        options.exact = !c.extrapolated;
        Result<Simulation> sim = SimulateScenario(*sc, options);
        ASSERT_TRUE(sim.ok()) << sim.status().message();
        EXPECT_EQ(sim->steady_state.has_value(), c.extrapolated) << c.name;
        const double floor = FsdpIndependentFloorSeconds(*sim);
        SCOPED_TRACE(c.name + ", prefetch " + std::to_string(prefetch) + ", reshard " +
                     std::to_string(reshard));
        EXPECT_GT(floor, 0.5 * sim->summary.step_time_s);  // most of a compute-bound step
        EXPECT_LE(floor, sim->summary.step_time_s);
        if (first < 0) first = floor;
        EXPECT_NEAR(floor, first, 1e-12 * first);
      }
    }
  }
}

// On the extrapolated run the floor is the whole step's: the same as --exact's.
TEST(FsdpIndependentFloor, ExtrapolatedEqualsTheWholeStep) {
  const Case pp = Cases().back();
  Result<Scenario> sc = ParseScenario(pp.doc, pp.name, ".");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  SimulateOptions fast;
  fast.exact = false;
  SimulateOptions exact;
  Result<Simulation> a = SimulateScenario(*sc, fast), b = SimulateScenario(*sc, exact);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->steady_state.has_value());
  EXPECT_NEAR(FsdpIndependentFloorSeconds(*a), FsdpIndependentFloorSeconds(*b),
              1e-9 * FsdpIndependentFloorSeconds(*b));
}

}  // namespace
}  // namespace shardscope::sim
