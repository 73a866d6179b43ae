#include "core/timeline/make_trace.h"

#include <fmt/format.h>

#include "core/schedule/op_kind.h"
#include "core/timeline/op_accounting.h"

namespace shardscope {
namespace {

std::string OpIdOr(const Schedule& s, int op) {
  return op >= 0 ? OpIdOf(s, s.ops[op]) : std::string("(initial state)");
}

void AddMemoryCounters(const Schedule& schedule, const RoleMemory& mem, int rank, Trace* t) {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (int c = 0; c < kNumMemCategories; ++c) {
      k.push_back(std::string(MemCategoryName(static_cast<MemCategory>(c))) + "_bytes");
    }
    return k;
  }();
  // The writer drops samples whose value did not change, so every series is sampled each time.
  for (const MemorySample& s : mem.samples) {
    for (int c = 0; c < kNumMemCategories; ++c) {
      t->AddCounter(rank, s.time_ns, keys[c], s.category_bytes[c]);
    }
    t->AddCounter(rank, s.time_ns, "allocated_bytes", s.allocated_bytes);
    t->AddCounter(rank, s.time_ns, "reserved_bytes", s.reserved_bytes);
  }
  Marker& peak = t->AddMarker(rank, mem.peak_allocated_time_ns, "peak_memory");
  t->SetExtraArgs(peak, {{"allocated_bytes", mem.peak_allocated_bytes},
                         {"op_id", OpIdOr(schedule, mem.peak_allocated_op)}});
  if (mem.oom) {
    Marker& oom = t->AddMarker(rank, mem.oom_time_ns, "oom");
    t->SetExtraArgs(oom, {{"category", std::string(MemCategoryName(mem.oom_category))},
                          {"op_id", OpIdOr(schedule, mem.oom_op)}});
  }
}

// A unit's compute slice carries the unit ("fwd model.layers.3", "recompute root"), so a
// viewer's slices say what they are without opening their args; other ops keep their name.
std::string EventName(const Schedule& schedule, const ScheduleOp& op, const std::string& op_id) {
  const std::string& name = NameOf(schedule, op);
  if (name.empty()) return op_id;
  if (op.type != OpType::kCompute || op.lane != Lane::kCompute) return name;
  const Result<OpId> id = ParseOpId(op_id);
  const std::string label =
      id.ok() && !id->unit.empty() ? id->unit : UnitOpLabel(UnitOf(schedule, op));
  if (name == "forward") return fmt::format("fwd {}", label);
  if (name == "backward") return fmt::format("bwd {}", label);
  if (name == "recompute") return fmt::format("recompute {}", label);
  return name;
}

}  // namespace

double OpFlops(const ScheduleOp& op) {
  double flops = 0;
  for (const ComputeItem& item : op.items) {
    flops += item.backward ? item.cost.bwd_flops : item.cost.fwd_flops;
  }
  return flops;
}

Trace MakeTrace(const Schedule& schedule, const Timeline& timeline,
                std::span<const RoleMemory> memory, const TraceInfo& info) {
  Trace t;
  t.metadata.kind = info.kind;
  t.metadata.tool_version = info.tool_version;
  t.metadata.scenario = info.scenario;
  t.metadata.summary = info.summary;
  t.metadata.device = info.device;
  t.metadata.library_versions = info.library_versions;
  nlohmann::json roles = nlohmann::json::array();
  for (const Role& r : schedule.roles) {
    roles.push_back({{"name", r.name}, {"rank", r.rank}, {"ranks_like", r.ranks_like}});
  }
  t.metadata.extra["roles"] = roles;
  t.metadata.extra["notes"] = schedule.notes;
  for (const auto& [key, value] : info.extra.items()) t.metadata.extra[key] = value;

  t.events.reserve(schedule.ops.size());
  for (const Role& role : schedule.roles) {
    t.rank_names[role.rank] = fmt::format("rank {}", role.rank);
    // No lane names: the writer declares the lanes that have work (an empty h2d lane in every
    // rank is noise in a viewer) and names them by their tid.
    t.AddMarker(role.rank, 0, "step_begin");
  }
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    const OpTiming& timing = timeline.ops[i];
    if (!IsTracedOp(op, timing)) continue;
    const int rank = schedule.roles[op.role].rank;
    const int64_t dur = timing.duration_ns();
    const std::string op_id = OpIdOf(schedule, op);
    WorkEvent& e = t.AddWork(rank, static_cast<int>(op.lane), EventName(schedule, op, op_id), op_id,
                             timing.start_ns, dur);
    if (IsCollective(op.type)) {
      e.bytes = op.bytes;
      e.group_size = op.group >= 0 ? schedule.groups[op.group].size() : 1;
      if (dur > 0) {
        e.busbw_gbps = static_cast<double>(std::max<int64_t>(0, op.bytes)) /
                       static_cast<double>(dur) * BusBandwidthFactor(op.type, e.group_size);
      }
    }
    if (const double flops = OpFlops(op); flops > 0) e.flops = flops;
    if (op.on_host) t.SetExtraArgs(e, {{"on_host", true}});
  }
  for (size_t r = 0; r < schedule.roles.size() && r < memory.size(); ++r) {
    AddMemoryCounters(schedule, memory[r], schedule.roles[r].rank, &t);
  }
  return t;
}

}  // namespace shardscope
