// Names of the schedule's enums, as traces and summaries spell them (formats.md §3,
// runtime.md memory categories), ops' op_ids (OpIdKey), and the op-type rules of the execution
// contract (schedule.h).
#include "core/schedule/schedule.h"
#include "core/trace/op_id_view.h"

namespace shardscope {

std::string_view LaneName(Lane lane) {
  switch (lane) {
    case Lane::kCompute:
      return "compute";
    case Lane::kAllGather:
      return "all_gather";
    case Lane::kReduceScatter:
      return "reduce_scatter";
    case Lane::kAllReduce:
      return "all_reduce";
    case Lane::kH2D:
      return "h2d";
    case Lane::kD2H:
      return "d2h";
    case Lane::kP2P:
      return "p2p";
  }
  return "unknown";
}

std::string_view OpTypeName(OpType type) {
  switch (type) {
    case OpType::kCompute:
      return "compute";
    case OpType::kOptimizer:
      return "optimizer";
    case OpType::kCopyIn:
      return "copy_in";
    case OpType::kAllGather:
      return "all_gather";
    case OpType::kReduceScatter:
      return "reduce_scatter";
    case OpType::kAllReduce:
      return "all_reduce";
    case OpType::kAllToAll:
      return "all_to_all";
    case OpType::kSend:
      return "send";
    case OpType::kRecv:
      return "recv";
    case OpType::kCopyH2D:
      return "h2d";
    case OpType::kCopyD2H:
      return "d2h";
    case OpType::kWait:
      return "wait";
  }
  return "unknown";
}

bool IsCollective(OpType type) {
  switch (type) {
    case OpType::kAllGather:
    case OpType::kReduceScatter:
    case OpType::kAllReduce:
    case OpType::kAllToAll:
    case OpType::kSend:
    case OpType::kRecv:
      return true;
    default:
      return false;
  }
}

bool SerializesOnCommunicator(OpType type) {
  return IsCollective(type) && type != OpType::kSend && type != OpType::kRecv;
}

std::string_view CollectiveReduceName(CollectiveReduce op) {
  switch (op) {
    case CollectiveReduce::kNone:
      return "none";
    case CollectiveReduce::kSum:
      return "sum";
    case CollectiveReduce::kAvg:
      return "avg";
  }
  return "unknown";
}

std::string_view MemCategoryName(MemCategory c) {
  switch (c) {
    case MemCategory::kShardedParams:
      return "sharded_params";
    case MemCategory::kOptimizer:
      return "optimizer";
    case MemCategory::kShardedGrads:
      return "sharded_grads";
    case MemCategory::kUnshardedParams:
      return "unsharded_params";
    case MemCategory::kUnshardedGrads:
      return "unsharded_grads";
    case MemCategory::kCommBuffers:
      return "comm_buffers";
    case MemCategory::kActivations:
      return "activations";
    case MemCategory::kTemporaries:
      return "temporaries";
  }
  return "unknown";
}

namespace {

const std::string& Word(const Schedule& schedule, int32_t k) {
  static const std::string kNone;
  return k >= 0 && static_cast<size_t>(k) < schedule.words.size() ? schedule.words[k] : kNone;
}

}  // namespace

std::string OpIdOf(const Schedule& schedule, const ScheduleOp& op) {
  if (!op.id_phase) return Word(schedule, op.id.what);
  return MakeOpId(*op.id_phase, Word(schedule, op.id.unit), Word(schedule, op.id.what), op.id.index,
                  op.id.micro);
}

std::optional<OpPhase> OpIdPhaseOf(const Schedule& schedule, const ScheduleOp& op) {
  if (op.id_phase) return op.id_phase;
  const std::optional<OpIdView> id = ParseOpIdView(OpIdOf(schedule, op));
  if (!id) return std::nullopt;
  return id->phase;
}

void SetOpId(Schedule& schedule, ScheduleOp& op, std::string_view text) {
  op.id = OpIdKey{};
  op.id.what = AddWord(schedule, text);
  op.id_phase.reset();
}

const std::string& NameOf(const Schedule& schedule, const ScheduleOp& op) {
  return Word(schedule, op.name);
}
const std::string& UnitOf(const Schedule& schedule, const ScheduleOp& op) {
  return Word(schedule, op.unit);
}

int32_t AddWord(Schedule& schedule, std::string_view text) {
  schedule.words.emplace_back(text);
  return static_cast<int32_t>(schedule.words.size()) - 1;
}

}  // namespace shardscope
