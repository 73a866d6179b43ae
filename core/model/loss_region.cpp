#include "core/model/loss_region.h"

namespace shardscope {

LossRegion LossRegionTensors(const LossWork& work) {
  const int64_t logits = work.tokens * work.vocab;
  const int64_t loss_dtype = logits * DTypeBytes(work.compute_dtype);
  LossRegion r;
  r.forward = {logits * DTypeBytes(work.logits_dtype), loss_dtype};
  r.backward = {loss_dtype, loss_dtype};
  return r;
}

}  // namespace shardscope
