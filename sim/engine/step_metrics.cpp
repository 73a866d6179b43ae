#include "sim/engine/step_metrics.h"

#include <algorithm>
#include <map>

#include "sim/engine/intervals.h"

namespace shardscope::sim {

std::string_view CommKindName(CommKind kind) {
  switch (kind) {
    case CommKind::kAllGather: return "all_gather";
    case CommKind::kReduceScatter: return "reduce_scatter";
    case CommKind::kAllReduce: return "all_reduce";
    case CommKind::kAllToAll: return "all_to_all";
    case CommKind::kP2P: return "p2p";
    case CommKind::kH2D: return "h2d";
    case CommKind::kD2H: return "d2h";
  }
  return "";
}

int CommKindOf(OpType type) {
  switch (type) {
    case OpType::kCopyIn:
    case OpType::kAllGather: return static_cast<int>(CommKind::kAllGather);
    case OpType::kReduceScatter: return static_cast<int>(CommKind::kReduceScatter);
    case OpType::kAllReduce: return static_cast<int>(CommKind::kAllReduce);
    case OpType::kAllToAll: return static_cast<int>(CommKind::kAllToAll);
    case OpType::kSend:
    case OpType::kRecv: return static_cast<int>(CommKind::kP2P);
    case OpType::kCopyH2D: return static_cast<int>(CommKind::kH2D);
    case OpType::kCopyD2H: return static_cast<int>(CommKind::kD2H);
    default: return -1;
  }
}

StepMetrics ComputeStepMetrics(const Schedule& schedule, const Timeline& timeline, int role) {
  std::vector<Interval> compute_raw, host_raw;
  std::array<std::vector<Interval>, kNumCommKinds> comm_raw;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    if (op.role != role) continue;
    const Interval span{timeline.ops[i].start_ns, timeline.ops[i].end_ns};
    if (op.on_host) {
      host_raw.push_back(span);
    } else if (op.type == OpType::kCompute || op.type == OpType::kOptimizer) {
      compute_raw.push_back(span);
    } else if (const int k = CommKindOf(op.type); k >= 0) {
      comm_raw[k].push_back(span);
    }
  }
  StepMetrics m;
  m.step_ns = role < static_cast<int>(timeline.role_end_ns.size()) ? timeline.role_end_ns[role] : 0;
  const IntervalSet compute = UnionOf(std::move(compute_raw));
  IntervalSet comm;
  for (int k = 0; k < kNumCommKinds; ++k) {
    const IntervalSet kind = UnionOf(std::move(comm_raw[k]));
    m.comm_by_kind_ns[k] = MeasureNs(kind);
    m.exposed_by_kind_ns[k] = MeasureNs(Subtract(kind, compute));
    comm = Unite(comm, kind);
  }
  m.compute_ns = MeasureNs(compute);
  m.host_ns = MeasureNs(UnionOf(std::move(host_raw)));
  m.comm_ns = MeasureNs(comm);
  m.exposed_comm_ns = MeasureNs(Subtract(comm, compute));
  m.overlapped_comm_ns = MeasureNs(Intersect(comm, compute));
  m.idle_ns = m.step_ns - MeasureNs(Unite(compute, comm));
  return m;
}

std::vector<UnitExposure> ExposedAllGathers(const Schedule& schedule, const Timeline& timeline,
                                            int role) {
  std::vector<Interval> compute_raw;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    if (op.role == role && !op.on_host &&
        (op.type == OpType::kCompute || op.type == OpType::kOptimizer)) {
      compute_raw.push_back({timeline.ops[i].start_ns, timeline.ops[i].end_ns});
    }
  }
  const IntervalSet compute = UnionOf(std::move(compute_raw));
  std::map<std::string, UnitExposure> by_unit;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    if (op.role != role || (op.type != OpType::kAllGather && op.type != OpType::kCopyIn)) continue;
    const IntervalSet span{{timeline.ops[i].start_ns, timeline.ops[i].end_ns}};
    UnitExposure& u = by_unit[op.unit];
    u.unit = op.unit;
    u.all_gather_ns += timeline.ops[i].duration_ns();
    if (span[0].end_ns > span[0].begin_ns) u.exposed_ns += MeasureNs(Subtract(span, compute));
  }
  std::vector<UnitExposure> out;
  out.reserve(by_unit.size());
  for (auto& [name, u] : by_unit) out.push_back(std::move(u));
  std::stable_sort(out.begin(), out.end(), [](const UnitExposure& a, const UnitExposure& b) {
    return a.exposed_ns > b.exposed_ns;
  });
  return out;
}

}  // namespace shardscope::sim
