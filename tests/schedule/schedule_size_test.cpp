// The schedule-size estimate (schedule_size.h) bounds what BuildSchedule makes, without being
// so loose that it refuses real jobs, and the limit refuses a job before building it.
#include "core/schedule/schedule_size.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_options.h"

namespace shardscope {
namespace {

struct Built {
  ModelTree tree;
  Plan plan;
  ScheduleOptions options;
};

Built Prepare(const nlohmann::json& doc) {
  Result<Scenario> sc = ParseScenario(doc, "job.json", ".");
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  ModelBuildOptions build;
  build.tp = sc->parallelism.tp;
  build.ep = sc->parallelism.ep;
  Result<ModelTree> tree = LoadModel(sc->model, build);
  EXPECT_TRUE(tree.ok()) << tree.status().message();
  Result<Plan> plan = PlanScenario(*sc, *tree);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return {*tree, *plan, ScheduleOptionsFromScenario(*sc)};
}

nlohmann::json Job(const std::string& model, nlohmann::json parallelism,
                   nlohmann::json training = nlohmann::json::object()) {
  nlohmann::json t = {{"local_batch", 4}, {"seq_len", 1024}};
  t.update(training);
  return {{"model", model},
          {"cluster", {{"nodes", 2}, {"gpus_per_node", 8}}},
          {"parallelism", std::move(parallelism)},
          {"training", t}};
}

TEST(ScheduleSizeTest, EstimateBoundsTheBuiltSchedule) {
  const std::vector<std::pair<std::string, nlohmann::json>> jobs = {
      {"fsdp", Job("llama3-8b", nlohmann::json::object())},
      {"full ac", Job("llama3-8b", {{"dp_replicate", 2}}, {{"activation_checkpoint", "full"}})},
      {"tp cp", Job("llama3-8b", {{"tp", 2}, {"cp", 2}})},
      {"pp interleaved", Job("llama3-8b", {{"pp", 2},
                                           {"pp_schedule", "interleaved_1f1b"},
                                           {"pp_virtual_stages", 2},
                                           {"pp_microbatches", 4}})},
      {"moe ep", Job("mixtral-8x7b", {{"ep", 8}, {"edp_shard", 2}})},
      {"grad accum", Job("llama3-8b", nlohmann::json::object(), {{"grad_accum", 4}})},
  };
  for (const auto& [name, job] : jobs) {
    SCOPED_TRACE(name);
    const Built b = Prepare(job);
    Result<Schedule> s = BuildSchedule(b.tree, b.plan, b.options);
    ASSERT_TRUE(s.ok()) << s.status().message();
    const int64_t ops = static_cast<int64_t>(s->ops.size());
    const int64_t estimate = EstimateScheduleOps(b.tree, b.plan, b.options);
    EXPECT_GE(estimate, ops);
    EXPECT_LE(estimate, 16 * ops) << "so loose that real jobs would hit the limit";
  }
}

TEST(ScheduleSizeTest, LimitRefusesBeforeBuilding) {
  const Built b = Prepare(Job("llama3-8b", nlohmann::json::object(), {{"grad_accum", 8}}));
  ::setenv("SHARDSCOPE_MAX_SCHEDULE_OPS", "1000", 1);
  Result<Schedule> s = BuildSchedule(b.tree, b.plan, b.options);
  ::unsetenv("SHARDSCOPE_MAX_SCHEDULE_OPS");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.status().message().find("micro-batches: training.grad_accum 8 · "
                                      "parallelism.pp_microbatches 1), more than the limit of "
                                      "1000 (set SHARDSCOPE_MAX_SCHEDULE_OPS to raise it)"),
            std::string::npos)
      << s.status().message();
  EXPECT_TRUE(BuildSchedule(b.tree, b.plan, b.options).ok());
}

}  // namespace
}  // namespace shardscope
