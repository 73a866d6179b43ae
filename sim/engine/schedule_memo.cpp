#include "sim/engine/schedule_memo.h"

#include <utility>

namespace shardscope::sim {

namespace {

// The `cluster` fields only the cost model reads (sim/engine/simulator.cpp, PriceScenario).
constexpr std::string_view kPricingFields[] = {"gpu", "cost_model"};

}  // namespace

std::string ScheduleMemo::KeyOf(const Scenario& scenario) {
  nlohmann::json key = scenario.resolved;
  if (auto cluster = key.find("cluster"); cluster != key.end() && cluster->is_object()) {
    for (std::string_view field : kPricingFields) cluster->erase(std::string(field));
  }
  return key.dump();
}

bool ScheduleMemo::PricesOnly(std::string_view override_text) {
  constexpr std::string_view kCluster = "cluster.";
  if (override_text.substr(0, kCluster.size()) != kCluster) return false;
  override_text.remove_prefix(kCluster.size());
  for (std::string_view field : kPricingFields) {
    if (override_text.size() > field.size() && override_text.substr(0, field.size()) == field &&
        override_text[field.size()] == '=') {
      return true;
    }
  }
  return false;
}

std::string ScheduleMemo::OverridesKey(const std::vector<std::string>& overrides) {
  std::string key;
  for (const std::string& set : overrides) {
    if (PricesOnly(set)) continue;
    key += set;
    key += '\n';
  }
  return key;
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
  kept.taken = false;
  kept.floor.reset();
  return kept;
}

std::optional<Schedule> ScheduleMemo::Use(int run) {
  Run* kept = Find(run);
  if (kept == nullptr || kept->taken) return std::nullopt;
  if (!hand_over_) return kept->schedule;
  kept->taken = true;
  return std::move(kept->schedule);
}

}  // namespace shardscope::sim
