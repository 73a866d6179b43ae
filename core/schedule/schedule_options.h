// The bridge from a scenario (formats.md §1) to the schedule builder's own options, kept apart
// so the builder depends on nothing but the fields it uses.
//
// Contents:
//   ScheduleOptionsFromScenario  training / cluster / parallelism / fsdp fields → ScheduleOptions
//   BuildScenarioSchedule        the same, then BuildSchedule
//
// Example:
//   SS_ASSIGN_OR_RETURN(Plan plan, PlanScenario(scenario, tree));
//   SS_ASSIGN_OR_RETURN(Schedule s, BuildScenarioSchedule(scenario, tree, plan));
#pragma once

#include "core/config/scenario.h"
#include "core/schedule/schedule_builder.h"

namespace shardscope {

ScheduleOptions ScheduleOptionsFromScenario(const Scenario& scenario);

Result<Schedule> BuildScenarioSchedule(const Scenario& scenario, const ModelTree& tree,
                                       const Plan& plan);

}  // namespace shardscope
