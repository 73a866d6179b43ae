// The communication part of the summary that needs the schedule beside the step accounting:
// busy and exposed time by purpose (core/trace/comm_purpose.h), the most exposed collectives by
// op_id, and how much exposure sits at the step's edges, where no prefetch can hide it.
//
// Contents:
//   StepEdges        [0, head_end) and [tail_start, end): the step's unhideable edges
//   FindStepEdges    those of one role
//   AddCommBreakdown fills Summary's comm_by_purpose_s, exposed_comm_by_purpose_s,
//                    exposed_collectives and edge_exposed_comm_s
//
// The edges: until the forward's second unit starts its module compute, the only compute a
// collective can run under is the first unit's (the root's embedding, microseconds), so the
// first all-gathers run exposed whatever the prefetch depth; likewise after the backward's
// second-to-last unit ends its module compute, the last reduce-scatters have only the last
// unit's backward to hide under (formats.md §2 edge_exposed_comm_s).
#pragma once

#include <cstdint>

#include "core/schedule/schedule.h"
#include "core/timeline/timeline.h"
#include "core/trace/accounting.h"
#include "sim/engine/summary.h"

namespace shardscope::sim {

struct StepEdges {
  int64_t head_end_ns = 0;    // the start of the forward's second unit's module compute
  int64_t tail_start_ns = 0;  // the end of the backward's second-to-last unit's module compute
  int64_t end_ns = 0;         // the end of the role's step
};

// `step_end_ns`: the end of the role's step (its accounting window).
StepEdges FindStepEdges(const Schedule& schedule, const Timeline& timeline, int role,
                        int64_t step_end_ns);

// `m`: the role's StepAccount (its window [0, m.end_ns)); `accounting`: the role's work
// (AccountRoles keeps it).
void AddCommBreakdown(const Schedule& schedule, const Timeline& timeline, int role,
                      const StepAccount& m, const RankAccounting& accounting, Summary* s);

}  // namespace shardscope::sim
