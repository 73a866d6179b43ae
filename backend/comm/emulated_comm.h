// The communicators of `--emulate-world N --rank R`: one process runs rank R of an N-rank plan
// with no peers. Each collective becomes a local operation on its lane that writes its output
// deterministically and holds the lane for the cost model's predicted time (sim/cost
// CollectiveNs over the group's shape), with as many thread blocks as NCCL's channels would
// take, so the overlap contention a real run suffers is measured, not assumed.
//
// Contents:
//   EmulationOptions        world size, rank, GPUs per node, the cost model pricing the holds
//   MakeEmulatedCommFactory the factory (backends.h lists it with the others)
//
// Output values (deterministic, the same for any device): an all-gather keeps this rank's
// contribution and fills the other ranks' slots with DeterministicValue(SeedOf(op_id), i), i
// the element's index in the output; a reduce-scatter and an all-reduce write post_scale ·
// R(pre_scale · x) with every other rank's operand taken equal to this rank's (sum: size · x; avg:
// x); an all-to-all keeps its own block and fills the rest like an all-gather; a receive fills its
// buffer from SeedOf(op_id).
#pragma once

#include <memory>

#include "backend/comm/communicator.h"
#include "sim/cost/cost_model.h"

namespace shardscope::backend {

struct EmulationOptions {
  int world_size = 1;
  int rank = 0;
  int gpus_per_node = 8;            // decides the group shapes the holds are priced on
  const CostModel* cost = nullptr;  // must outlive the factory and its communicators
};

std::unique_ptr<CommFactory> MakeEmulatedCommFactory(const EmulationOptions& options);

}  // namespace shardscope::backend
