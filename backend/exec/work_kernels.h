// A compute item (core/model/op_work.h) as device kernels at its shapes: the GEMMs of a linear
// (forward, or data- and weight-gradient GEMMs backward), grouped expert GEMMs, fused
// attention forward / backward, the passes of an eager chain, the loss's upcast and passes,
// the embedding's row reads. Weights come from the unit's gathered parameters, activations
// from an arena of real memory; outputs are written there. The values are the shapes' (not
// the model's) math; optimizer steps and FSDP copies are the executor's own data path.
//
// Contents:
//   ItemBuffers   the arena and the gathered parameters an item may use
//   ArenaBytes    how much arena an item needs (weights included when the gathered buffer
//                 is too small to hold them)
//   IssueItem     enqueues the item's kernels on a lane
#pragma once

#include <cstdint>

#include "backend/device/device.h"
#include "core/schedule/schedule.h"

namespace shardscope::backend {

struct ItemBuffers {
  char* arena = nullptr;
  int64_t arena_bytes = 0;
  const char* params = nullptr;  // the unit's gathered parameters (may be null)
  int64_t params_bytes = 0;
};

int64_t ArenaBytes(const ComputeItem& item, int64_t params_bytes);

// Optimizer steps and FSDP copies are not items of this kind: InvalidInput.
Status IssueItem(Device& device, Lane lane, const ComputeItem& item, const ItemBuffers& buffers);

}  // namespace shardscope::backend
