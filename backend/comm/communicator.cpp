#include "backend/comm/communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

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

std::string NewRunId() {
  // The clock alone repeats across nodes started together; the OS's entropy alone is enough,
  // but a libstdc++ without a random device falls back to a fixed sequence.
  std::random_device rd;
  const uint64_t entropy = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  const uint64_t now = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch() /
                                             std::chrono::nanoseconds(1));
  return fmt::format("run-{:016x}", entropy ^ (now * 0x9E3779B97F4A7C15ull));
}

Result<std::string> CompareInputDigests(const std::string& digest, int world_size,
                                        const AllGatherFn& all_gather) {
  // A hash of one build's std::hash: ranks of another build differ too, which is as wrong.
  struct Entry {
    uint64_t digest;
    char run_id[24];  // NewRunId's 20 characters and a terminator
  };
  Entry mine{};
  mine.digest = std::hash<std::string>{}(digest);
  const std::string id = NewRunId();
  std::memcpy(mine.run_id, id.data(), std::min(id.size(), sizeof(mine.run_id) - 1));
  SS_ASSIGN_OR_RETURN(std::vector<char> all, all_gather(&mine, sizeof(mine)));
  if (all.size() != static_cast<size_t>(world_size) * sizeof(mine)) {
    return RuntimeError(fmt::format("the inputs check gathered {} bytes from {} ranks, not {} each",
                                    all.size(), world_size, sizeof(mine)));
  }
  Entry first{};
  std::memcpy(&first, all.data(), sizeof(first));
  for (int r = 1; r < world_size; ++r) {
    Entry theirs{};
    std::memcpy(&theirs, all.data() + static_cast<size_t>(r) * sizeof(theirs), sizeof(theirs));
    if (theirs.digest != first.digest) {
      return InvalidInput(fmt::format(
          "rank {} was started with other inputs than rank 0 (another scenario file or --set, "
          "--steps, --check, --timeout or --device, or another shardscope build): every rank "
          "must run the same command",
          r));
    }
  }
  first.run_id[sizeof(first.run_id) - 1] = 0;
  return std::string(first.run_id);
}

}  // namespace shardscope::backend
