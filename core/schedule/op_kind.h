// A ScheduleOp as core/trace/work_kind.h classifies work: the OpType side of the one classifier
// and of the one bus-bandwidth function (a trace event takes the name side of the same rule).
//
// Contents:
//   CollectiveKindOf    OpType → its communication kind (nullopt unless IsCollective)
//   WorkKindOf          ClassifyWork(CollectiveKindOf(type), lane, on_host)
//   BusBandwidthFactor  work_kind.h's factor for a collective OpType over n ranks
#pragma once

#include <optional>

#include "core/schedule/schedule.h"
#include "core/trace/work_kind.h"

namespace shardscope {

// all-gather, reduce-scatter, all-reduce, all-to-all; send and recv are p2p.
std::optional<WorkKind> CollectiveKindOf(OpType type);
WorkKind WorkKindOf(const ScheduleOp& op);
// nccl-tests conventions (work_kind.h): 0 for n <= 1 and for types that are not collectives.
double BusBandwidthFactor(OpType type, int n);

}  // namespace shardscope
