// Prices every op of a Schedule with a CostModel: the only place the engine layer talks to
// the cost model (the engine loop itself takes plain durations).
//
// Contents:
//   OpPrices       per-op duration, and the collective / FLOP figures traces show
//   PriceSchedule  Schedule + CostModel → OpPrices
#pragma once

#include <cstdint>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/util/status.h"
#include "sim/cost/cost_model.h"

namespace shardscope::sim {

struct OpPrices {
  std::vector<int64_t> ns;         // unslowed duration per op
  std::vector<double> busbw_gbps;  // collectives: bus bandwidth of the estimate; else 0
  std::vector<double> flops;       // compute / optimizer: FLOPs of the items; else 0
  // What overlap contention acts on (engine.h OverlapContention), per op:
  std::vector<float> sm_share;       // GPU work: share of ns bound by SM throughput
  std::vector<float> hbm_share;      // GPU work: share of ns bound by HBM bandwidth
  std::vector<int> comm_blocks;      // collectives: thread blocks (channels) held while running
  std::vector<float> comm_hbm_gbps;  // collectives: HBM traffic while running
};

// Compute and optimizer ops: CostModel::ComputeOpSplit(items), or HostComputeOpNs(items) for an
// op with on_host (offloaded optimizer step). Collectives (all-gather,
// reduce-scatter, all-reduce, all-to-all, send, recv): CollectiveNs over the op's group shape
// (node = rank / gpus_per_node). Copy-in and host copies: CopyNs. Waits: 0.
// Errors name the op: a collective without a process group, negative bytes.
Result<OpPrices> PriceSchedule(const Schedule& schedule, const CostModel& cost, int gpus_per_node);

}  // namespace shardscope::sim
