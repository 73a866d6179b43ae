#include "backend/comm/communicator.h"

#include <fmt/format.h>

namespace shardscope::backend {

Status IssueCollective(Communicator& comm, const CollectiveCall& call) {
  switch (call.type) {
    case OpType::kAllGather:
      return comm.AllGather(call);
    case OpType::kReduceScatter:
      return comm.ReduceScatter(call);
    case OpType::kAllReduce:
      return comm.AllReduce(call);
    case OpType::kAllToAll:
      return comm.AllToAll(call);
    case OpType::kSend:
      return comm.Send(call);
    case OpType::kRecv:
      return comm.Recv(call);
    default:
      return InvalidInput(
          fmt::format("{}: {} is not a collective", call.op_id, OpTypeName(call.type)));
  }
}

CollectiveCall CollectiveCallOf(const Schedule& schedule, const ScheduleOp& op) {
  CollectiveCall c;
  c.type = op.type;
  c.lane = op.lane;
  c.dtype = op.collective.dtype;
  c.count = op.collective.count;
  c.reduce = op.collective.reduce;
  c.pre_scale = op.collective.pre_scale;
  c.post_scale = op.collective.post_scale;
  c.bytes = op.bytes;
  c.op_id = OpIdOf(schedule, op);
  return c;
}

}  // namespace shardscope::backend
