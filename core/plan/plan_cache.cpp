#include "core/plan/plan_cache.h"

#include "core/config/model_consistency.h"

namespace shardscope {

Result<std::shared_ptr<const Plan>> PlanCache::Get(const Scenario& scenario,
                                                   const std::shared_ptr<const ModelTree>& tree) {
  SS_RETURN_IF_ERROR(CheckScenarioAgainstModel(scenario, *tree));
  std::pair<const ModelTree*, ScenarioPlanInputs> key{tree.get(), PlanInputsOf(scenario)};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = plans_.find(key); it != plans_.end()) return it->second.plan;
  }
  // Built outside the lock: two threads may build one plan at once; the first kept wins, and
  // they are alike.
  Result<Plan> planned = PlanFromInputs(*tree, key.second);
  if (!planned.ok()) return ScenarioPlanError(planned.status(), scenario);
  Plan built = std::move(planned).value();
  auto plan = std::make_shared<const Plan>(std::move(built));
  std::lock_guard<std::mutex> lock(mu_);
  if (plans_.size() >= kMaxPlans) return plan;
  return plans_.emplace(std::move(key), Entry{tree, plan}).first->second.plan;
}

size_t PlanCache::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

}  // namespace shardscope
