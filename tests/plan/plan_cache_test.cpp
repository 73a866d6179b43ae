// The plan cache (core/plan/plan_cache.h): one plan per tree and plan inputs, the plan
// PlanScenario gives, the scenario checked at every request, errors not kept, and one plan for
// several threads at once.
#include "core/plan/plan_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/model/model_source.h"
#include "core/plan/plan_json.h"
#include "tests/example_scenario.h"

namespace shardscope {
namespace {

Scenario Load(const std::vector<std::string>& sets) {
  return testing::LoadExample("dense_llama3_8b.json", sets);
}

std::shared_ptr<const ModelTree> Tree(const Scenario& sc) {
  Result<ModelTree> tree = LoadModel(sc.model, {});
  EXPECT_TRUE(tree.ok()) << tree.status().message();
  return std::make_shared<const ModelTree>(tree.ok() ? std::move(*tree) : ModelTree{});
}

std::string Json(const Plan& plan) { return PlanToJson(plan).dump(); }

// The batch, checkpointing and the GPU are not read by the planner: one plan. The prefetch
// depth and the mesh are: a plan each. Each is the plan PlanScenario gives.
TEST(PlanCache, OnePlanPerTreeAndPlanInputs) {
  const Scenario base = Load({});
  const std::shared_ptr<const ModelTree> tree = Tree(base);
  PlanCache cache;
  Result<std::shared_ptr<const Plan>> first = cache.Get(base, tree);
  ASSERT_TRUE(first.ok()) << first.status().message();
  for (const std::vector<std::string>& sets :
       std::vector<std::vector<std::string>>{{"training.local_batch=4"},
                                             {"training.activation_checkpoint=full"},
                                             {"cluster.gpu=h200"}}) {
    Result<std::shared_ptr<const Plan>> same = cache.Get(Load(sets), tree);
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(same->get(), first->get()) << sets.front();
  }
  EXPECT_EQ(cache.size(), 1u);
  for (const std::vector<std::string>& sets :
       std::vector<std::vector<std::string>>{{"fsdp.forward_prefetch_depth=2"},
                                             {"parallelism.dp_replicate=2"},
                                             {"fsdp.reshard_after_forward=false"},
                                             {"fsdp.mix_precision.reduce_dtype=bfloat16"}}) {
    const Scenario sc = Load(sets);
    Result<std::shared_ptr<const Plan>> other = cache.Get(sc, tree);
    ASSERT_TRUE(other.ok()) << other.status().message();
    EXPECT_NE(other->get(), first->get()) << sets.front();
    Result<Plan> direct = PlanScenario(sc, *tree);
    ASSERT_TRUE(direct.ok());
    EXPECT_EQ(Json(**other), Json(*direct)) << sets.front();
  }
  EXPECT_EQ(cache.size(), 5u);
  // Another tree (loaded again: another address) is another key.
  Result<std::shared_ptr<const Plan>> again = cache.Get(base, Tree(base));
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->get(), first->get());
  EXPECT_EQ(Json(**again), Json(**first));
}

// The model check runs for every request, even when the plan inputs are those of a kept plan;
// a planning error is not kept.
TEST(PlanCache, ChecksEveryScenarioAndKeepsNoError) {
  const Scenario dense = Load({});
  const std::shared_ptr<const ModelTree> tree = Tree(dense);
  PlanCache cache;
  ASSERT_TRUE(cache.Get(dense, tree).ok());
  Scenario expert = dense;
  expert.parallelism.ep = 2;  // a dense model: the check refuses it before any plan is looked up
  Result<std::shared_ptr<const Plan>> refused = cache.Get(expert, tree);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("parallelism.ep"), std::string::npos)
      << refused.status().message();
  Scenario bad = dense;
  bad.fsdp.forward_prefetch_depth = -1;
  for (int i = 0; i < 2; ++i) {
    Result<std::shared_ptr<const Plan>> failed = cache.Get(bad, tree);
    Result<Plan> direct = PlanScenario(bad, *tree);
    ASSERT_FALSE(direct.ok());
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.status().message(), direct.status().message());
  }
  EXPECT_EQ(cache.size(), 1u);
}

TEST(PlanCache, FourThreadsShareOnePlan) {
  const Scenario sc = Load({});
  const std::shared_ptr<const ModelTree> tree = Tree(sc);
  PlanCache cache;
  std::vector<std::shared_ptr<const Plan>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Result<std::shared_ptr<const Plan>> plan = cache.Get(sc, tree);
      if (plan.ok()) got[t] = *plan;
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_NE(got[0], nullptr);
  EXPECT_EQ(cache.size(), 1u);
  Result<std::shared_ptr<const Plan>> kept = cache.Get(sc, tree);
  ASSERT_TRUE(kept.ok());
  for (const auto& plan : got) EXPECT_EQ(Json(*plan), Json(**kept));
}

}  // namespace
}  // namespace shardscope
