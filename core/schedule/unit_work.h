// What each FSDP unit computes and communicates inside its own forward, in module order: the
// builder's intermediate form between the model tree and the step's ops (internal to
// core/schedule).
//
// Contents:
//   CommSpec       one blocking collective inside a unit's compute (TP, CP, EP)
//   WorkEntry      a module's compute item, a collective point, or a nested unit
//   UnitWork       a unit's entries in forward order + its sizes
//   WorkGroups     the process-group indices the collective points use
//   BuildUnitWork  the tree walk (ownership by nesting, execution order of nested units)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/op_cost.h"
#include "core/model/tree.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/schedule/schedule_builder.h"

namespace shardscope {

struct CommSpec {
  OpType type = OpType::kAllReduce;
  std::string what;   // op_id part, e.g. "tp_all_reduce", "cp_all_gather", "ep_dispatch"
  int group = -1;     // index into Schedule::groups
  int64_t bytes = 0;  // nccl-tests size convention
};

struct WorkEntry {
  enum class Kind { kItem, kComm, kUnit };
  Kind kind = Kind::kItem;
  ComputeItem item;           // kItem: forward figures of one module
  std::vector<CommSpec> fwd;  // kComm: collectives at this point in forward, in order
  std::vector<CommSpec> bwd;  // kComm: collectives at this point in backward, in order
  int unit = -1;              // kUnit: index into Plan::units
};

struct UnitWork {
  std::vector<WorkEntry> entries;  // forward order
  int64_t input_bytes = 0;         // the block's input (kept by `full` AC; unit_work.cpp)
};

struct WorkGroups {
  int tp = -1;  // -1 when the size is 1
  int cp = -1;
  int ep = -1;
};

// One UnitWork per plan unit (same indices); item module names are appended to `modules`
// (ComputeItem::module indexes it). Modules belong to the nearest enclosing unit;
// nested units keep their place among the parent's modules, siblings follow the plan's
// execution order; a loss op runs last in its unit (it hangs on the model root in the tree
// but consumes the logits).
Result<std::vector<UnitWork>> BuildUnitWork(const ModelTree& tree, const Plan& plan,
                                            const ScheduleOptions& options, const OpContext& ctx,
                                            const WorkGroups& groups,
                                            std::vector<std::string>& modules);

}  // namespace shardscope
