// The measured outputs: the same op_ids as the simulator's trace of the scenario, both ways;
// a valid trace; a summary whose time figures are those `stats` computes from the trace.
#include "backend/exec/measured_output.h"

#include <gtest/gtest.h>

#include <set>

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

INSTANTIATE_TEST_SUITE_P(Scenarios, MeasuredOutputTest,
                         ::testing::Values("one_rank.json", "eight_ranks.json"));

}  // namespace
}  // namespace shardscope::backend
