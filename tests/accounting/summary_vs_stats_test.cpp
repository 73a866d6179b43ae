// For every golden scenario (traces/*/scenario.json) and every example (examples/*.json): the
// summary's time figures equal those `stats` computes from the run's own trace, serialised
// and read back as the CLI does, to the nanosecond (formats.md §2: one definition, one
// implementation).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "core/schedule/op_kind.h"
#include "core/timeline/op_accounting.h"
#include "core/trace/comm_purpose.h"
#include "core/trace/trace_io.h"
#include "core/trace/trace_stats.h"
#include "sim/engine/simulator.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> ScenarioFiles() {
  const fs::path root(SHARDSCOPE_SOURCE_DIR);
  std::vector<std::string> out;
  for (const auto& dir : fs::directory_iterator(root / "traces")) {
    if (fs::exists(dir.path() / "scenario.json"))
      out.push_back((dir.path() / "scenario.json").string());
  }
  for (const auto& f : fs::directory_iterator(root / "examples")) {
    if (f.path().extension() == ".json") out.push_back(f.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

class SummaryVsStats : public ::testing::TestWithParam<std::string> {};

TEST_P(SummaryVsStats, TimeFiguresAreThoseStatsComputesFromTheTrace) {
  Result<Scenario> sc = LoadScenario(GetParam());
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  Result<sim::Simulation> run = sim::SimulateScenario(*sc, {/*keep_memory_samples=*/false});
  ASSERT_TRUE(run.ok()) << run.status().message();
  const sim::Simulation& sim = *run;
  Result<Trace> trace = ParseTrace(SerializeTrace(sim::SimulationTrace(sim, "test")), GetParam());
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const TraceStats stats = ComputeStats(*trace, 0);

  ASSERT_EQ(stats.steps.size(), sim.schedule.roles.size());  // one step per simulated rank
  // The summary's role is accounted by the simulator; every role by the accounting it uses.
  const std::vector<StepAccount> accounts = AccountRoles(sim.schedule, sim.timeline);
  EXPECT_EQ(sim.role_metrics[sim.reported_role].step_ns, accounts[sim.reported_role].step_ns);
  EXPECT_EQ(sim.role_metrics[sim.reported_role].exposed_comm_ns,
            accounts[sim.reported_role].exposed_comm_ns);
  for (size_t r = 0; r < sim.schedule.roles.size(); ++r) {
    const StepAccount& a = accounts[r];
    const int rank = sim.schedule.roles[r].rank;
    const auto st = std::find_if(stats.steps.begin(), stats.steps.end(),
                                 [&](const StepStats& s) { return s.rank == rank; });
    ASSERT_NE(st, stats.steps.end()) << "rank " << rank;
    SCOPED_TRACE("role " + sim.schedule.roles[r].name);
    EXPECT_EQ(st->start_ns, 0);
    EXPECT_EQ(st->step_ns, a.step_ns);
    EXPECT_EQ(st->step_ns, sim.timeline.role_end_ns[r]);  // the engine's own step end
    EXPECT_EQ(st->busy_ns, a.busy_ns);
    EXPECT_EQ(st->idle_ns, a.idle_ns);
    EXPECT_EQ(st->compute_ns, a.compute_ns);
    EXPECT_EQ(st->host_ns, a.host_ns);
    EXPECT_EQ(st->comm_ns, a.comm_ns);
    EXPECT_EQ(st->exposed_comm_ns, a.exposed_comm_ns);
    EXPECT_EQ(st->exposed_copy_ns, a.exposed_copy_ns);
    EXPECT_EQ(st->overlap_ratio, a.overlap_ratio());
    for (int k = 0; k < kNumWorkKinds; ++k) {
      const std::string name(WorkKindName(static_cast<WorkKind>(k)));
      const auto busy = st->busy_by_kind_ns.find(name);
      EXPECT_EQ(busy == st->busy_by_kind_ns.end() ? 0 : busy->second,
                k == static_cast<int>(WorkKind::kCompute) || k == static_cast<int>(WorkKind::kHost)
                    ? 0
                    : a.busy_by_kind_ns[k])
          << name;
    }
  }

  // The summary: the reported role's figures, in seconds from those nanoseconds.
  const sim::Summary& s = sim.summary;
  const int rank = sim.schedule.roles[sim.reported_role].rank;
  const StepStats& st = *std::find_if(stats.steps.begin(), stats.steps.end(),
                                      [&](const StepStats& x) { return x.rank == rank; });
  EXPECT_EQ(s.step_time_s, Seconds(st.step_ns));
  EXPECT_EQ(s.step_time_s, Seconds(stats.step_time_ns));  // the slowest rank's
  EXPECT_EQ(s.compute_s, Seconds(st.compute_ns));
  EXPECT_EQ(s.exposed_comm_s, Seconds(st.exposed_comm_ns));
  EXPECT_EQ(s.exposed_copy_s, Seconds(st.exposed_copy_ns));
  EXPECT_EQ(s.idle_s, Seconds(st.idle_ns));
  EXPECT_EQ(s.host_compute_s, Seconds(st.host_ns));
  EXPECT_EQ(s.overlap_ratio, st.overlap_ratio);
  std::map<std::string, double> busy, exposed;
  for (const auto& [k, v] : st.busy_by_kind_ns) {
    if (v == 0) continue;
    busy[k] = Seconds(v);
    exposed[k] = Seconds(st.exposed_by_kind_ns.at(k));
  }
  EXPECT_EQ(s.comm_s, busy);
  EXPECT_EQ(s.exposed_comm_by_kind_s, exposed);

  // By purpose, and the most exposed collectives by op_id: the same figures from the schedule's
  // groups and from the trace's op_ids.
  std::map<std::string, double> busy_purpose, exposed_purpose;
  for (const auto& [k, v] : st.busy_by_purpose_ns) {
    if (v == 0) continue;
    busy_purpose[k] = Seconds(v);
    exposed_purpose[k] = Seconds(st.exposed_by_purpose_ns.at(k));
  }
  EXPECT_EQ(s.comm_by_purpose_s, busy_purpose);
  EXPECT_EQ(s.exposed_comm_by_purpose_s, exposed_purpose);
  double purpose_sum = 0;
  for (const auto& [k, v] : s.comm_by_purpose_s) purpose_sum += v;
  if (s.comm_by_purpose_s.empty()) {
    EXPECT_EQ(s.exposed_comm_s, 0.0);
  }
  // Purposes partition the collectives: their busy times add up to at least the union's.
  EXPECT_GE(purpose_sum + 1e-12, Seconds(st.comm_ns));
  ASSERT_EQ(s.exposed_collectives.size(), st.exposed_ops.size());
  for (size_t i = 0; i < st.exposed_ops.size(); ++i) {
    EXPECT_EQ(s.exposed_collectives[i].op_id, st.exposed_ops[i].op_id);
    EXPECT_EQ(s.exposed_collectives[i].purpose, st.exposed_ops[i].purpose);
    EXPECT_EQ(s.exposed_collectives[i].exposed_s, Seconds(st.exposed_ops[i].exposed_ns));
    EXPECT_LE(s.exposed_collectives[i].edge_exposed_s, s.exposed_collectives[i].exposed_s);
  }
  EXPECT_LE(s.edge_exposed_comm_s, s.exposed_comm_s + 1e-12);
}

// The one rule of comm_purpose.h: the group a collective runs on and the op_id the builder gave
// it say the same purpose, op by op.
TEST_P(SummaryVsStats, PurposeOfTheGroupIsThatOfTheOpId) {
  Result<Scenario> sc = LoadScenario(GetParam());
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  Result<sim::Simulation> run = sim::SimulateScenario(*sc, {/*keep_memory_samples=*/false});
  ASSERT_TRUE(run.ok()) << run.status().message();
  for (const ScheduleOp& op : run->schedule.ops) {
    const WorkKind kind = WorkKindOf(op);
    const CommPurpose p = PurposeOf(run->schedule, op);
    const std::string op_id = OpIdOf(run->schedule, op);
    EXPECT_EQ(p, PurposeOfOpId(op_id, kind)) << op_id;
    EXPECT_EQ(p == CommPurpose::kNone, !IsCommunication(kind)) << op_id;
  }
}

std::string Name(const ::testing::TestParamInfo<std::string>& info) {
  const fs::path p(info.param);
  std::string name =
      (p.filename() == "scenario.json" ? "golden_" + p.parent_path().filename().string()
                                       : "example_" + p.stem().string());
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(c) && c != '_'; }, '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryScenario, SummaryVsStats, ::testing::ValuesIn(ScenarioFiles()), Name);

}  // namespace
}  // namespace shardscope
