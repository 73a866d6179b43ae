#include "sim/engine/durations.h"

#include <unordered_map>

#include <fmt/format.h>

#include "sim/engine/engine.h"

namespace shardscope::sim {

Result<OpPrices> PriceSchedule(const Schedule& schedule, const CostModel& cost, int gpus_per_node) {
  const size_t n = schedule.ops.size();
  OpPrices out;
  out.ns.assign(n, 0);
  out.busbw_gbps.assign(n, 0.0);
  out.flops.assign(n, 0.0);
  // Group shapes are shared by thousands of ops; work each out once.
  std::vector<GroupShape> shapes;
  shapes.reserve(schedule.groups.size());
  for (const ProcessGroup& g : schedule.groups) shapes.push_back(GroupShapeOf(g, gpus_per_node));
  for (size_t i = 0; i < n; ++i) {
    const ScheduleOp& op = schedule.ops[i];
    if (op.bytes < 0) {
      return InvalidInput(fmt::format("schedule: op '{}': negative byte count {}", op.op_id, op.bytes));
    }
    for (const ComputeItem& item : op.items) {
      out.flops[i] += item.backward ? item.cost.bwd_flops : item.cost.fwd_flops;
    }
    if (IsCollective(op.type)) {
      if (op.group < 0 || op.group >= static_cast<int>(shapes.size())) {
        return InvalidInput(fmt::format("schedule: collective op '{}' has no valid process group (group {})",
                                        op.op_id, op.group));
      }
      const CollectiveEstimate e = cost.CollectiveNs(op.type, op.bytes, shapes[op.group]);
      out.ns[i] = e.ns;
      out.busbw_gbps[i] = e.busbw_gbps;
      continue;
    }
    switch (op.type) {
      case OpType::kCompute:
      case OpType::kOptimizer:
        // The offloaded optimizer step runs on the CPU, at the host's rate, not HBM's.
        out.ns[i] = op.on_host ? cost.HostComputeOpNs(op.items) : cost.ComputeOpNs(op.items);
        break;
      case OpType::kCopyIn:
      case OpType::kCopyH2D:
      case OpType::kCopyD2H:
        out.ns[i] = op.items.empty() ? cost.CopyNs(op.type, op.bytes) : cost.ComputeOpNs(op.items);
        break;
      default:  // kWait: a join point, no work
        out.ns[i] = 0;
        break;
    }
  }
  return out;
}

}  // namespace shardscope::sim
