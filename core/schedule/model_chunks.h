// Splits the model's work into the pipeline chunks (pp × virtual stages) the plan holds
// (Plan::pipeline_chunks, planned in core/plan/planner_chunks.cpp), each with its own FSDP root,
// as torchtitan does when it applies fully_shard to every stage's model chunk. Without
// pipelining there is one chunk: the plan's units unchanged (internal to core/schedule).
//
// Contents:
//   ModelChunks       units (plan units + one root per chunk), their work, labels, members
//   SplitIntoChunks   the plan's split applied to the unit work
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/schedule/unit_work.h"

namespace shardscope {

struct ModelChunks {
  std::vector<UnitPlan> units;            // plan units without the root, then one root per chunk
  std::vector<UnitWork> work;             // parallel to units
  std::vector<std::string> labels;        // op_id unit part
  std::vector<int> roots;                 // per chunk: index of its root in units
  std::vector<std::vector<int>> members;  // per chunk: every unit it runs (root included)
  std::vector<int64_t> input_bytes;       // per chunk: the activation it receives
};

// `work` is parallel to plan.units; `modules` names the items' modules. Errors when the plan
// holds another number of chunk roots than `chunks`, or misses a top-level unit.
Result<ModelChunks> SplitIntoChunks(const Plan& plan, std::vector<UnitWork> work,
                                    const std::vector<std::string>& modules, int chunks);

}  // namespace shardscope
