// Plans built once and shared: a sweep's variants that differ only in what the plan does not
// read (the batch, the micro-batches, activation checkpointing, the GPU) plan the same units,
// meshes and prefetch lists again and again; BuildPlan was 6.5% of the 70B grid's time (perf,
// 2026-12-06). The key is the model tree and ScenarioPlanInputs, everything PlanScenario gives
// BuildPlan, compared field by field.
//
// Contents:
//   PlanCache  PlanScenario's plans by tree and plan inputs, for several threads at once
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "core/config/scenario.h"
#include "core/model/tree.h"
#include "core/plan/plan.h"
#include "core/plan/planner.h"
#include "core/util/status.h"

namespace shardscope {

class PlanCache {
 public:
  // At most this many plans are kept (a plan of a large model is hundreds of kilobytes); past
  // it, plans are built for each request and not kept.
  static constexpr size_t kMaxPlans = 256;

  // PlanScenario(scenario, *tree): the scenario is checked against the model at every request
  // (its errors name the scenario's fields), and the plan built at the first request for this
  // tree and these inputs. An error is not kept. The plan is shared and immutable.
  Result<std::shared_ptr<const Plan>> Get(const Scenario& scenario,
                                          const std::shared_ptr<const ModelTree>& tree);

  size_t size();

 private:
  struct Entry {
    std::shared_ptr<const ModelTree> tree;  // keeps the key's address from being reused
    std::shared_ptr<const Plan> plan;
  };
  std::mutex mu_;
  std::map<std::pair<const ModelTree*, ScenarioPlanInputs>, Entry> plans_;
};

}  // namespace shardscope
