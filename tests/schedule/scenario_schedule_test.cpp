// Built-in models through the real planner into the schedule: the schedule of every common
// layout must validate (deps, memory balance, names) on trees the model zoo builds.
#include <gtest/gtest.h>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_check.h"
#include "core/schedule/schedule_options.h"

namespace shardscope {
namespace {

Result<Schedule> FromScenario(const nlohmann::json& doc) {
  SS_ASSIGN_OR_RETURN(Scenario sc, ParseScenario(doc, "job.json", "."));
  ModelBuildOptions build;
  build.tp = sc.parallelism.tp;
  build.ep = sc.parallelism.ep;
  SS_ASSIGN_OR_RETURN(ModelTree tree, LoadModel(sc.model, build));
  SS_ASSIGN_OR_RETURN(Plan plan, PlanScenario(sc, tree));
  return BuildScenarioSchedule(sc, tree, plan);
}

nlohmann::json Job(const std::string& model, nlohmann::json parallelism,
                   nlohmann::json training = nlohmann::json::object()) {
  nlohmann::json t = {{"local_batch", 2}, {"seq_len", 1024}};
  t.update(training);
  return {{"model", model},
          {"cluster", {{"nodes", 2}, {"gpus_per_node", 8}}},
          {"parallelism", std::move(parallelism)},
          {"training", t}};
}

TEST(ScenarioScheduleTest, BuiltinModelsInCommonLayoutsValidate) {
  const std::vector<std::pair<std::string, nlohmann::json>> jobs = {
      {"fsdp", Job("llama3-8b", nlohmann::json::object())},
      {"hsdp full ac",
       Job("llama3-8b", {{"dp_replicate", 2}}, {{"activation_checkpoint", "full"}})},
      {"tp sp", Job("llama3-8b", {{"tp", 2}})},
      {"tp cp", Job("llama3-8b", {{"tp", 2}, {"cp", 2}})},
      {"pp 1f1b", Job("llama3-8b", {{"pp", 2}})},
      {"pp interleaved",
       Job("llama3-8b",
           {{"pp", 2}, {"pp_schedule", "interleaved_1f1b"}, {"pp_virtual_stages", 2}})},
      {"moe ep", Job("mixtral-8x7b", {{"ep", 8}, {"edp_shard", 2}})},
      {"grad accum", Job("llama3-8b", nlohmann::json::object(), {{"grad_accum", 2}})},
  };
  for (const auto& [name, job] : jobs) {
    SCOPED_TRACE(name);
    Result<Schedule> s = FromScenario(job);
    ASSERT_TRUE(s.ok()) << s.status().message();
    const Status st = ValidateSchedule(*s);
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_GT(ComputeStepTotals(*s, 0).fwd_flops, 0);
  }
}

}  // namespace
}  // namespace shardscope
