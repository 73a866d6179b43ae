#include "core/trace/work_kind.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "core/util/ascii_case.h"

namespace shardscope {
namespace {

// Lower case without '_' and ':', so "all_gather", "AllGather" and "allgather" read alike.
std::string Folded(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c == '_' || c == ':') continue;
    out.push_back(AsciiLower(c));
  }
  return out;
}

bool StartsWithFolded(std::string_view name, std::string_view prefix) {
  if (name.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (AsciiLower(name[i]) != prefix[i]) return false;
  }
  return true;
}

std::optional<WorkKind> LaneCollective(int lane) {
  switch (lane) {
    case kLaneAllGather:
      return WorkKind::kAllGather;
    case kLaneReduceScatter:
      return WorkKind::kReduceScatter;
    case kLaneAllReduce:
      return WorkKind::kAllReduce;
    case kLaneP2P:
      return WorkKind::kP2P;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::string_view WorkKindName(WorkKind kind) {
  switch (kind) {
    case WorkKind::kCompute:
      return "compute";
    case WorkKind::kHost:
      return "host";
    case WorkKind::kAllGather:
      return "all_gather";
    case WorkKind::kReduceScatter:
      return "reduce_scatter";
    case WorkKind::kAllReduce:
      return "all_reduce";
    case WorkKind::kAllToAll:
      return "all_to_all";
    case WorkKind::kP2P:
      return "p2p";
    case WorkKind::kH2D:
      return "h2d";
    case WorkKind::kD2H:
      return "d2h";
  }
  return "";
}

bool IsCommunication(WorkKind kind) {
  switch (kind) {
    case WorkKind::kAllGather:
    case WorkKind::kReduceScatter:
    case WorkKind::kAllReduce:
    case WorkKind::kAllToAll:
    case WorkKind::kP2P:
      return true;
    default:
      return false;
  }
}

std::optional<WorkKind> CollectiveKindOfName(std::string_view name, int lane) {
  if (!StartsWithFolded(name, "nccl") && !StartsWithFolded(name, "gloo:")) return std::nullopt;
  const std::string f = Folded(name);
  auto has = [&](std::string_view s) { return f.find(s) != std::string::npos; };
  // All-to-all before send/recv: NCCL builds all-to-all from sends and receives, and some
  // kernel names say both.
  if (has("alltoall")) return WorkKind::kAllToAll;
  if (has("allgather")) return WorkKind::kAllGather;
  if (has("reducescatter")) return WorkKind::kReduceScatter;
  if (has("allreduce")) return WorkKind::kAllReduce;
  if (has("send") || has("recv")) return WorkKind::kP2P;
  return LaneCollective(lane).value_or(WorkKind::kAllReduce);
}

WorkKind ClassifyWork(std::optional<WorkKind> collective, int lane, bool on_host) {
  if (on_host) return WorkKind::kHost;
  if (collective) return *collective;
  if (const auto k = LaneCollective(lane)) return *k;
  if (lane == kLaneH2D) return WorkKind::kH2D;
  if (lane == kLaneD2H) return WorkKind::kD2H;
  return WorkKind::kCompute;
}

std::optional<WorkKind> EventCollective(const Trace& trace, const WorkEvent& event) {
  if (auto k = CollectiveKindOfName(trace.Str(event.name), event.lane)) return k;
  if (event.group_size > 0) return LaneCollective(event.lane).value_or(WorkKind::kAllReduce);
  return std::nullopt;
}

WorkKind ClassifyEvent(const Trace& trace, const WorkEvent& event) {
  const std::optional<WorkKind> collective = EventCollective(trace, event);
  bool on_host = false;
  if (event.extra_args != kNoArgs) {
    // Only events with extra args pay for parsing them; ours carry them on host ops alone.
    const nlohmann::json args = trace.ExtraArgs(event.extra_args);
    const auto it = args.find("on_host");
    on_host = it != args.end() && it->is_boolean() && it->get<bool>();
  }
  return ClassifyWork(collective, event.lane, on_host);
}

double BusBandwidthFactor(WorkKind kind, int n) {
  if (n <= 1 || !IsCommunication(kind)) return 0.0;
  const double f = static_cast<double>(n - 1) / n;
  switch (kind) {
    case WorkKind::kAllReduce:
      return 2.0 * f;
    case WorkKind::kP2P:
      return 1.0;
    default:
      return f;
  }
}

}  // namespace shardscope
