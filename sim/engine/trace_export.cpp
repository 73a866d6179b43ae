#include "sim/engine/trace_export.h"

#include <fmt/format.h>

namespace shardscope::sim {
namespace {

void AddMemoryCounters(const Simulation& sim, int role, int rank, Trace* t) {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (int c = 0; c < kNumMemCategories; ++c) {
      k.push_back(std::string(MemCategoryName(static_cast<MemCategory>(c))) + "_bytes");
    }
    return k;
  }();
  const RoleMemory& mem = sim.memory[role];
  // The writer drops samples whose value did not change, so every series is sampled each time.
  for (const MemorySample& s : mem.samples) {
    for (int c = 0; c < kNumMemCategories; ++c) t->AddCounter(rank, s.time_ns, keys[c], s.category_bytes[c]);
    t->AddCounter(rank, s.time_ns, "allocated_bytes", s.allocated_bytes);
    t->AddCounter(rank, s.time_ns, "reserved_bytes", s.reserved_bytes);
  }
  Marker& peak = t->AddMarker(rank, mem.peak_allocated_time_ns, "peak_memory");
  t->SetExtraArgs(peak, {{"allocated_bytes", mem.peak_allocated_bytes},
                         {"op_id", mem.peak_allocated_op >= 0 ? sim.schedule.ops[mem.peak_allocated_op].op_id
                                                              : std::string("(initial state)")}});
  if (mem.oom) {
    Marker& oom = t->AddMarker(rank, mem.oom_time_ns, "oom");
    t->SetExtraArgs(oom, {{"category", std::string(MemCategoryName(mem.oom_category))},
                          {"op_id", mem.oom_op >= 0 ? sim.schedule.ops[mem.oom_op].op_id
                                                    : std::string("(initial state)")}});
  }
}

}  // namespace

Trace MakePredictedTrace(const Simulation& sim, const std::string& tool_version) {
  Trace t;
  t.metadata.kind = "predicted";
  t.metadata.tool_version = tool_version;
  t.metadata.scenario = sim.summary.scenario;
  t.metadata.summary = SummaryToJson(sim.summary);
  t.metadata.device = {{"gpu", sim.gpu_name},
                       {"description", sim.gpu_description},
                       {"nodes", sim.nodes},
                       {"world_size", sim.schedule.world_size}};
  t.metadata.library_versions = nlohmann::json::object();
  nlohmann::json roles = nlohmann::json::array();
  for (const Role& r : sim.schedule.roles) {
    roles.push_back({{"name", r.name}, {"rank", r.rank}, {"ranks_like", r.ranks_like}});
  }
  t.metadata.extra["roles"] = roles;
  t.metadata.extra["notes"] = sim.schedule.notes;
  // How overlapped compute was slowed: one calibrated factor, or the contention model's figures.
  if (sim.overlap.uniform_slowdown >= 1.0) {
    t.metadata.extra["overlap_slowdown"] = sim.overlap.uniform_slowdown;
  } else {
    t.metadata.extra["overlap_contention"] = {{"sm_count", sim.overlap.sm_count},
                                              {"hbm_gbps", sim.overlap.hbm_gbps}};
  }

  t.events.reserve(sim.schedule.ops.size());
  for (size_t r = 0; r < sim.schedule.roles.size(); ++r) {
    const int rank = sim.schedule.roles[r].rank;
    t.rank_names[rank] = fmt::format("rank {}", rank);
    for (int lane = 1; lane <= kNumLanes; ++lane) {
      t.lane_names[{rank, lane}] = std::string(LaneName(static_cast<Lane>(lane)));
    }
    t.AddMarker(rank, 0, "step_begin");
  }
  for (size_t i = 0; i < sim.schedule.ops.size(); ++i) {
    const ScheduleOp& op = sim.schedule.ops[i];
    const int rank = sim.schedule.roles[op.role].rank;
    const OpTiming& timing = sim.timeline.ops[i];
    // A wait is a join point, not work: a measured trace has no event for it, and a
    // zero-length event at another event's boundary reads as an overlap to trace checkers.
    if (op.type == OpType::kWait && timing.duration_ns() == 0) continue;
    WorkEvent& e = t.AddWork(rank, static_cast<int>(op.lane), op.name.empty() ? op.op_id : op.name,
                             op.op_id, timing.start_ns, timing.duration_ns());
    if (IsCollective(op.type)) {
      e.bytes = op.bytes;
      e.group_size = op.group >= 0 ? sim.schedule.groups[op.group].size() : 1;
      e.busbw_gbps = sim.prices.busbw_gbps[i];
    }
    if (sim.prices.flops[i] > 0) e.flops = sim.prices.flops[i];
  }
  for (size_t r = 0; r < sim.schedule.roles.size(); ++r) {
    AddMemoryCounters(sim, static_cast<int>(r), sim.schedule.roles[r].rank, &t);
  }
  return t;
}

}  // namespace shardscope::sim
