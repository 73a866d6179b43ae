#include "core/schedule/op_kind.h"

namespace shardscope {

std::optional<WorkKind> CollectiveKindOf(OpType type) {
  switch (type) {
    case OpType::kAllGather:
      return WorkKind::kAllGather;
    case OpType::kReduceScatter:
      return WorkKind::kReduceScatter;
    case OpType::kAllReduce:
      return WorkKind::kAllReduce;
    case OpType::kAllToAll:
      return WorkKind::kAllToAll;
    case OpType::kSend:
    case OpType::kRecv:
      return WorkKind::kP2P;
    default:
      return std::nullopt;
  }
}

WorkKind WorkKindOf(const ScheduleOp& op) {
  return ClassifyWork(CollectiveKindOf(op.type), static_cast<int>(op.lane), op.on_host);
}

double BusBandwidthFactor(OpType type, int n) {
  const std::optional<WorkKind> kind = CollectiveKindOf(type);
  return kind ? BusBandwidthFactor(*kind, n) : 0.0;
}

}  // namespace shardscope
