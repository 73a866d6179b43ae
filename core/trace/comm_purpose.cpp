#include "core/trace/comm_purpose.h"

#include <algorithm>

#include "core/trace/op_id.h"
#include "core/trace/op_id_view.h"

namespace shardscope {
namespace {

CommPurpose PurposeOfKind(WorkKind kind) {
  switch (kind) {
    case WorkKind::kAllGather:
      return CommPurpose::kFsdpAllGather;
    case WorkKind::kReduceScatter:
      return CommPurpose::kFsdpReduceScatter;
    case WorkKind::kAllReduce:
      return CommPurpose::kDpAllReduce;
    case WorkKind::kAllToAll:
      return CommPurpose::kEp;
    case WorkKind::kP2P:
      return CommPurpose::kPp;
    default:
      return CommPurpose::kNone;
  }
}

}  // namespace

std::string_view CommPurposeName(CommPurpose purpose) {
  switch (purpose) {
    case CommPurpose::kNone:
      return "";
    case CommPurpose::kFsdpAllGather:
      return "fsdp_all_gather";
    case CommPurpose::kFsdpReduceScatter:
      return "fsdp_reduce_scatter";
    case CommPurpose::kDpAllReduce:
      return "hsdp_all_reduce";
    case CommPurpose::kTp:
      return "tp";
    case CommPurpose::kCp:
      return "cp";
    case CommPurpose::kEp:
      return "ep";
    case CommPurpose::kPp:
      return "pp";
  }
  return "";
}

CommPurpose PurposeOfDims(std::span<const std::string> dims, WorkKind kind) {
  if (!IsCommunication(kind)) return CommPurpose::kNone;
  auto has = [&](std::string_view d) {
    return std::find(dims.begin(), dims.end(), d) != dims.end();
  };
  if (has("tp")) return CommPurpose::kTp;
  if (has("cp")) return CommPurpose::kCp;
  if (has("ep")) return CommPurpose::kEp;
  if (has("pp")) return CommPurpose::kPp;
  // Data-parallel groups (fsdp_* / edp_*): what the collective does says which FSDP step it is.
  return PurposeOfKind(kind);
}

CommPurpose PurposeOfOpId(std::string_view op_id, WorkKind kind) {
  if (!IsCommunication(kind)) return CommPurpose::kNone;
  if (op_id.empty()) return PurposeOfKind(kind);
  const std::optional<OpIdView> id = ParseOpIdView(op_id);
  if (!id) return PurposeOfKind(kind);
  std::string_view what = id->what;
  // Checkpointing repeats a unit's forward collectives in backward as "recompute_<what>".
  if (what.starts_with("recompute_")) what.remove_prefix(std::string_view("recompute_").size());
  if (what.starts_with("tp_")) return CommPurpose::kTp;
  if (what.starts_with("cp_")) return CommPurpose::kCp;
  if (what.starts_with("ep_")) return CommPurpose::kEp;
  if (what == op_what::kSend || what == op_what::kRecv) return CommPurpose::kPp;
  return PurposeOfKind(kind);
}

CommPurpose EventPurpose(const Trace& trace, const WorkEvent& event, WorkKind kind) {
  if (!IsCommunication(kind)) return CommPurpose::kNone;
  return PurposeOfOpId(trace.Str(event.op_id), kind);
}

}  // namespace shardscope
