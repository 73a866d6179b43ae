#include "sim/engine/compute_floor.h"

#include <algorithm>
#include <vector>

namespace shardscope::sim {

double FsdpIndependentFloorSeconds(const Simulation& sim) {
  const Schedule& s = sim.schedule;
  if (s.roles.empty() || sim.prices.ns.size() != s.ops.size()) return 0;
  std::vector<int64_t> busy(s.roles.size(), 0);
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const ScheduleOp& op = s.ops[i];
    if (op.lane != Lane::kCompute || op.role < 0 || op.role >= static_cast<int>(busy.size()))
      continue;
    bool counted = IsCollective(op.type);
    if (op.type == OpType::kCompute && !op.items.empty()) {
      counted = std::all_of(op.items.begin(), op.items.end(),
                            [](const ComputeItem& item) { return item.is_module(); });
    }
    if (counted) busy[static_cast<size_t>(op.role)] += sim.prices.ns[i];
  }
  double seconds = 1e-9 * static_cast<double>(*std::max_element(busy.begin(), busy.end()));
  if (sim.steady_state && sim.steady_state->b > 0) {
    seconds *= static_cast<double>(sim.steady_state->total) / sim.steady_state->b;
  }
  return seconds;
}

}  // namespace shardscope::sim
