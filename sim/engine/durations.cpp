#include "sim/engine/durations.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "core/util/checked_math.h"
#include "sim/engine/engine.h"

namespace shardscope::sim {
namespace {

struct CollectiveCall {
  OpType type;
  int64_t bytes;
  int group;
  bool operator==(const CollectiveCall&) const = default;
};
struct CollectiveCallHash {
  size_t operator()(const CollectiveCall& c) const {
    const size_t h = std::hash<int64_t>()(c.bytes);
    const size_t g = (static_cast<size_t>(c.group) << 4) ^ static_cast<size_t>(c.type);
    return h ^ (g + 0x9e3779b9 + (h << 6) + (h >> 2));
  }
};

}  // namespace

Result<OpPrices> PriceSchedule(const Schedule& schedule, const CostModel& cost, int gpus_per_node) {
  const size_t n = schedule.ops.size();
  OpPrices out;
  out.ns.assign(n, 0);
  out.busbw_gbps.assign(n, 0.0);
  out.flops.assign(n, 0.0);
  out.sm_share.assign(n, 0.0f);
  out.hbm_share.assign(n, 0.0f);
  out.comm_blocks.assign(n, 0);
  out.comm_hbm_gbps.assign(n, 0.0f);
  const auto record_split = [&out](size_t i, const ComputeSplit& split) {
    out.ns[i] = split.ns;
    if (split.ns <= 0) return;
    const double ns = static_cast<double>(split.ns);
    out.sm_share[i] = static_cast<float>(std::min(1.0, split.sm_ns / ns));
    out.hbm_share[i] = static_cast<float>(std::min(1.0 - out.sm_share[i], split.hbm_ns / ns));
  };
  // Group shapes are shared by thousands of ops; work each out once.
  std::vector<GroupShape> shapes;
  shapes.reserve(schedule.groups.size());
  for (const ProcessGroup& g : schedule.groups)
    shapes.push_back(GroupShapeOf(g, gpus_per_node, cost.hardware().node.nvlink_domain));
  std::unordered_map<CollectiveCall, CollectiveEstimate, CollectiveCallHash> collectives;
  // Likewise every micro-batch's op of one chunk runs one shared item list (compute_items.h):
  // price each list once.
  std::unordered_map<const void*, ComputeSplit> splits;
  const auto split_of = [&](const ComputeItems& items) {
    auto [it, inserted] = splits.try_emplace(items.identity());
    if (inserted) it->second = cost.ComputeOpSplit(items);
    return it->second;
  };
  std::optional<int64_t> total_ns = 0;
  for (size_t i = 0; i < n; ++i) {
    const ScheduleOp& op = schedule.ops[i];
    if (op.bytes < 0) {
      return InvalidInput(
          fmt::format("schedule: op '{}': negative byte count {}", OpIdOf(schedule, op), op.bytes));
    }
    if (IsCollective(op.type)) {
      if (op.group < 0 || op.group >= static_cast<int>(shapes.size())) {
        return InvalidInput(
            fmt::format("schedule: collective op '{}' has no valid process group (group {})",
                        OpIdOf(schedule, op), op.group));
      }
      // Every layer's all-gather (and every micro-batch's, every stage's) repeats the same
      // call: a cost model is a function of its arguments, so price each one once.
      auto [it, inserted] = collectives.try_emplace(CollectiveCall{op.type, op.bytes, op.group});
      if (inserted) it->second = cost.CollectiveNs(op.type, op.bytes, shapes[op.group]);
      const CollectiveEstimate& e = it->second;
      out.ns[i] = e.ns;
      out.busbw_gbps[i] = e.busbw_gbps;
      out.comm_blocks[i] = e.channels;
      out.comm_hbm_gbps[i] = static_cast<float>(e.hbm_gbps);
      continue;
    }
    switch (op.type) {
      case OpType::kCompute:
      case OpType::kOptimizer:
        // The offloaded optimizer step runs on the CPU, at the host's rate, not HBM's.
        if (op.on_host) {
          out.ns[i] = cost.HostComputeOpNs(op.items);
          out.flops[i] = cost.ComputeOpSplit(op.items).flops;
        } else {
          const ComputeSplit split = split_of(op.items);
          record_split(i, split);
          out.flops[i] = split.flops;
        }
        break;
      case OpType::kCopyIn:
      case OpType::kCopyH2D:
      case OpType::kCopyD2H:
        if (op.items.empty()) {
          record_split(i, cost.CopySplitNs(op.type, op.bytes));
        } else {
          const ComputeSplit split = split_of(op.items);
          record_split(i, split);
          out.flops[i] = split.flops;
        }
        break;
      default:  // kWait: a join point, no work
        out.ns[i] = 0;
        break;
    }
    // The engine adds and stretches these: a total below kMaxDurationNs keeps every time it
    // computes inside int64. Only absurd op dimensions (a 2^40-wide linear) get here.
    if (out.ns[i] >= kMaxDurationNs || !(total_ns = CheckedAdd(*total_ns, out.ns[i])) ||
        *total_ns >= kMaxDurationNs) {
      return InvalidInput(fmt::format(
          "schedule: op '{}' ({:.3g} s) brings the step past the simulator's limit of 2^60 ns "
          "(36.5 years); check the model's op dimensions",
          OpIdOf(schedule, op), static_cast<double>(out.ns[i]) * 1e-9));
    }
  }
  return out;
}

}  // namespace shardscope::sim
