// The measured outputs: the same op_ids as the simulator's trace of the scenario, both ways;
// a valid trace; a summary whose time figures are those `stats` computes from the trace.
#include "backend/exec/measured_output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "core/trace/trace_check.h"
#include "core/trace/trace_stats.h"
#include "exec_test_util.h"

namespace shardscope::backend {
namespace {

std::multiset<std::string> OpIds(const Trace& t) {
  std::multiset<std::string> ids;
  for (const WorkEvent& e : t.events) ids.insert(std::string(t.strings.Get(e.op_id)));
  return ids;
}

MeasuredOutput Measure(testing::Job& job, const StepRun& run, int world) {
  MeasuredContext c;
  c.tool_version = "shardscope test";
  c.scenario = job.scenario.resolved;
  c.scenario_gpu = job.scenario.cluster.gpu;
  c.gpus_per_node = job.scenario.cluster.gpus_per_node;
  c.pricing = &job.pricing;
  c.device = job.device->Describe();
  c.world_size = world;
  c.communicators = "emulated";
  return MakeMeasuredOutput(job.schedule, run, c).value();
}

class MeasuredOutputTest : public ::testing::TestWithParam<const char*> {};

TEST_P(MeasuredOutputTest, SameOpIdsAsTheSimulatorAndAValidTrace) {
  auto job = testing::LoadJob(GetParam(), 0);
  const StepRun run = testing::RunJob(*job);
  ASSERT_TRUE(run.failure.ok()) << run.failure.message();
  const MeasuredOutput out = Measure(*job, run, job->scenario.cluster.world_size());
  const sim::Simulation predicted = sim::SimulateScenario(job->scenario).value();
  const Trace p = sim::SimulationTrace(predicted, "shardscope test");
  EXPECT_EQ(OpIds(out.trace), OpIds(p));
  EXPECT_EQ(CheckTrace(out.trace), std::vector<std::string>{});
  EXPECT_EQ(out.trace.metadata.kind, "measured");
  EXPECT_EQ(out.summary_json["kind"], "measured");
  // stats of the measured trace = the measured summary (one accounting).
  const TraceStats stats = ComputeStats(out.trace);
  ASSERT_FALSE(stats.steps.empty());
  EXPECT_NEAR(static_cast<double>(stats.steps.back().step_ns) / 1e9, out.summary.step_time_s, 1e-9);
  EXPECT_NEAR(static_cast<double>(stats.steps.back().exposed_comm_ns) / 1e9,
              out.summary.exposed_comm_s, 1e-9);
}

// Each step's time is kept; the steady figure is the median of those after the first.
TEST(MeasuredOutputSteps, EveryStepTimedAndTheSteadyOneIsTheLaterStepsMedian) {
  auto job = testing::LoadJob("one_rank.json", 0);
  ExecOptions options;
  options.steps = 4;
  const StepRun run = testing::RunJob(*job, options);
  ASSERT_TRUE(run.failure.ok()) << run.failure.message();
  ASSERT_EQ(run.step_ns_each.size(), 4u);
  EXPECT_EQ(run.step_ns_each.back(), run.timeline.step_ns);
  for (int64_t ns : run.step_ns_each) EXPECT_GT(ns, 0);
  const MeasuredOutput out = Measure(*job, run, 1);
  ASSERT_EQ(out.summary_json["step_times_s"].size(), 4u);
  EXPECT_DOUBLE_EQ(out.summary_json["step_times_s"][3].get<double>(),
                   static_cast<double>(run.step_ns_each[3]) / 1e9);
  std::vector<int64_t> later(run.step_ns_each.begin() + 1, run.step_ns_each.end());
  std::sort(later.begin(), later.end());
  EXPECT_EQ(SteadyStepNs(run), later[1]);  // three after the first: the middle one
  EXPECT_DOUBLE_EQ(out.summary_json["steady_step_time_s"].get<double>(),
                   static_cast<double>(later[1]) / 1e9);
}

TEST(MeasuredOutputSteps, SteadyStepOfHandMadeRuns) {
  StepRun run;
  run.timeline.step_ns = 7;
  EXPECT_EQ(SteadyStepNs(run), 7);  // no per-step record: the reported step
  run.step_ns_each = {100};
  EXPECT_EQ(SteadyStepNs(run), 100);  // one step: that one, warm-up or not
  run.step_ns_each = {100, 30};
  EXPECT_EQ(SteadyStepNs(run), 30);
  run.step_ns_each = {1000, 40, 10, 30, 20};  // the first left out; the median of four
  EXPECT_EQ(SteadyStepNs(run), 25);
  run.step_ns_each = {1000, 50, 10, 90};
  EXPECT_EQ(SteadyStepNs(run), 50);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, MeasuredOutputTest,
                         ::testing::Values("one_rank.json", "eight_ranks.json"));

}  // namespace
}  // namespace shardscope::backend
