// The checks of a scenario that need its model: run once, by PlanScenario, which every command
// that plans a scenario goes through (plan, simulate, sweep, run).
//
// Contents:
//   HasRoutedExperts        whether a tree has routed experts (an `experts` op or an ep layout)
//   CheckScenarioAgainstModel   expert parallelism only on a model with routed experts
#pragma once

#include "core/config/scenario.h"
#include "core/model/tree.h"
#include "core/util/status.h"

namespace shardscope {

bool HasRoutedExperts(const ModelTree& tree);

// InvalidInput naming the scenario file and field, e.g. "job.json: parallelism.ep = 8: the
// model has no routed experts ...". Head and KV-head divisibility by tp are the model
// builder's checks (it knows the family's sharding); seq_len by cp is the scenario's own.
Status CheckScenarioAgainstModel(const Scenario& scenario, const ModelTree& tree);

}  // namespace shardscope
