#include "backend/comm/communicator.h"

#include <fmt/format.h>

#include <cstring>

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

Status CompareInputDigests(const std::string& digest, int world_size,
                           const AllGatherFn& all_gather) {
  // A hash of one build's std::hash: ranks of another build differ too, which is as wrong.
  const uint64_t mine = std::hash<std::string>{}(digest);
  SS_ASSIGN_OR_RETURN(std::vector<char> all, all_gather(&mine, sizeof(mine)));
  if (all.size() != static_cast<size_t>(world_size) * sizeof(mine)) {
    return RuntimeError(fmt::format("the inputs check gathered {} bytes from {} ranks, not {} each",
                                    all.size(), world_size, sizeof(mine)));
  }
  uint64_t first = 0;
  std::memcpy(&first, all.data(), sizeof(first));
  for (int r = 1; r < world_size; ++r) {
    uint64_t theirs = 0;
    std::memcpy(&theirs, all.data() + static_cast<size_t>(r) * sizeof(theirs), sizeof(theirs));
    if (theirs != first) {
      return InvalidInput(fmt::format(
          "rank {} was started with other inputs than rank 0 (another scenario file or --set, "
          "--steps, --check, --timeout or --device, or another shardscope build): every rank "
          "must run the same command",
          r));
    }
  }
  return Status::Ok();
}

}  // namespace shardscope::backend
