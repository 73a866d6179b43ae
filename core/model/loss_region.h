// The loss region's tensors one by one, as eager PyTorch allocates them (docs/memory.md): the
// loss op's workspace figures are their sums (op_cost.cpp), and the schedule allocates each as
// a buffer of its own (step_builder.cpp), since the caching allocator reuses a freed block only
// for a request that fits in it: one buffer of the sum would reserve what PyTorch does not.
//
// Contents:
//   LossRegion          per tensor, in bytes: forward's transients, backward's transients
//   LossRegionTensors   the tensors of a loss op's work
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/op_work.h"

namespace shardscope {

struct LossRegion {
  // Forward: the logits in their dtype and their copy in the loss dtype (logits.float()),
  // freed once the loss is computed; the log-probabilities log_softmax saves are the op's
  // saved bytes (saved_tensors.cpp), not listed here.
  std::vector<int64_t> forward;
  // Backward: the log-probabilities' gradient (nll_loss_backward) and the logits' gradient in
  // the loss dtype (_log_softmax_backward_data), live together with the saved log-probabilities.
  std::vector<int64_t> backward;
};

LossRegion LossRegionTensors(const LossWork& work);

}  // namespace shardscope
