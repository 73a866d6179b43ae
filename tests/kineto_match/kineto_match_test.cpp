// Predicted op_ids against a real FSDP2 profiler trace of the same configuration: every
// operation the schedule predicts for a rank should be found, by op_id, among the operations
// the Kineto importer names in that rank's measured trace. Issue 10 asked for at least 95%;
// the test asks for all: at 95% it passed while the loss's two ops (its own run each way in the
// schedule, merged with the lm_head's by the importer) were missing, 40 of 42.
//
// The fixture (tests/fixtures/kineto/fsdp2_llama_cpu_rank<r>.json.gz, scenario beside it) was
// recorded by tools/record_fsdp2_trace.py: 4 gloo CPU ranks, a transformers Llama (3 layers,
// hidden 384, GQA 6/2 heads). SHARDSCOPE_KINETO_MATCH_DIR / _PREFIX / _RANKS point the test at
// another recording (rerecord_test.sh does, after recording a tiny case with torch).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "core/config/scenario.h"
#include "core/trace/trace_io.h"
#include "sim/engine/simulator.h"

namespace shardscope {
namespace {

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// The op_ids the schedule predicts for the simulated rank (zero-time waits never become trace
// events, so they are left out).
std::set<std::string> PredictedOpIds(const std::string& scenario_path) {
  auto scenario = LoadScenario(scenario_path);
  EXPECT_TRUE(scenario.ok()) << scenario.status().message();
  if (!scenario.ok()) return {};
  auto sim = sim::SimulateScenario(*scenario);
  EXPECT_TRUE(sim.ok()) << sim.status().message();
  if (!sim.ok()) return {};
  std::set<std::string> ids;
  for (const ScheduleOp& op : sim->schedule.ops) {
    if (op.role == 0 && op.type != OpType::kWait) ids.insert(OpIdOf(sim->schedule, op));
  }
  return ids;
}

TEST(KinetoMatch, PredictedOpIdsFoundInRealFsdp2Trace) {
  const std::string dir = Env("SHARDSCOPE_KINETO_MATCH_DIR",
                              std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/fixtures/kineto");
  const std::string prefix = Env("SHARDSCOPE_KINETO_MATCH_PREFIX", "fsdp2_llama_cpu");
  const int ranks = std::stoi(Env("SHARDSCOPE_KINETO_MATCH_RANKS", "4"));
  const std::set<std::string> predicted = PredictedOpIds(dir + "/" + prefix + ".scenario.json");
  // Every FSDP2 operation kind of this configuration is predicted (a guard against a schedule
  // that predicts little and so matches easily).
  for (const char* what :
       {"/copy_in", "/all_gather", "/compute", "/compute:1", "/reduce_scatter"}) {
    bool found = false;
    for (const std::string& id : predicted) found = found || id.find(what) != std::string::npos;
    EXPECT_TRUE(found) << "no predicted op_id contains " << what;
  }
  ASSERT_GT(predicted.size(), 20u);
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string path = dir + "/" + prefix + "_rank" + std::to_string(rank) + ".json.gz";
    auto trace = ReadTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    ASSERT_EQ(trace->Ranks(), std::vector<int>{rank});
    std::set<std::string> measured;
    for (const WorkEvent& e : trace->events) measured.insert(std::string(trace->Str(e.op_id)));
    std::string missing;
    size_t found = 0;
    for (const std::string& id : predicted) {
      if (measured.count(id) != 0) {
        ++found;
      } else {
        missing += " " + id;
      }
    }
    const double rate = static_cast<double>(found) / static_cast<double>(predicted.size());
    std::cout << "rank " << rank << ": " << found << " of " << predicted.size()
              << " predicted op_ids measured (" << 100.0 * rate << "%)"
              << (missing.empty() ? "" : "; missing:" + missing) << "\n";
    EXPECT_EQ(found, predicted.size()) << path << " lacks" << missing;
  }
}

}  // namespace
}  // namespace shardscope
