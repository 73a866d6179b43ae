// The order the executor issues one role's ops in: a topological order of the execution
// contract's edges (core/schedule/schedule.h): each lane's issue order, every dep, and each
// communicator's issue order, smallest op index first among the ready ones, so the order is
// the same on every rank and every run.
//
// Contents:
//   IssueOrder   ops of `role` → their issue order; InvalidInput naming the ops of a cycle
#pragma once

#include <vector>

#include "core/schedule/schedule.h"
#include "core/util/status.h"

namespace shardscope::backend {

Result<std::vector<int>> IssueOrder(const Schedule& schedule, int role);

}  // namespace shardscope::backend
