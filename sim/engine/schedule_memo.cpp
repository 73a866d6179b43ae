#include "sim/engine/schedule_memo.h"

#include <utility>

namespace shardscope::sim {

std::string ScheduleMemo::KeyOf(const Scenario& scenario) {
  nlohmann::json key = scenario.resolved;
  if (auto cluster = key.find("cluster"); cluster != key.end() && cluster->is_object()) {
    cluster->erase("gpu");
    cluster->erase("cost_model");
  }
  return key.dump();
}

void ScheduleMemo::Bind(const std::string& key) {
  if (bound_ && key == key_) return;
  key_ = key;
  bound_ = true;
  plan_.reset();
  runs_.clear();
}

void ScheduleMemo::KeepPlan(std::shared_ptr<const Plan> plan) {
  ++plans_kept_;
  plan_ = std::move(plan);
}

ScheduleMemo::Run* ScheduleMemo::Find(int run) {
  auto it = runs_.find(run);
  return it == runs_.end() ? nullptr : &it->second;
}

ScheduleMemo::Run& ScheduleMemo::Keep(int run, Schedule schedule) {
  ++runs_kept_;
  Run& kept = runs_[run];
  kept.schedule = std::move(schedule);
  kept.floor.reset();
  return kept;
}

}  // namespace shardscope::sim
