// Per-unit byte figures the builder needs: shard, gathered buffer, gradients, reductions
// (internal to core/schedule). Everything in bytes per rank, padding included where the
// collective moves it.
#pragma once

#include <cstdint>

#include "core/model/dtype.h"
#include "core/plan/plan.h"

namespace shardscope {

struct UnitSizes {
  int shard_group = 1;                 // S: ranks the unit shards over
  int replicate_group = 1;             // R: HSDP replicas (1 without HSDP)
  int64_t shard_numel = 0;             // Σ sharded_numel of managed, sharded params (padded)
  int64_t shard_bytes = 0;             // same in each param's own dtype (persistent)
  int64_t shard_gather_bytes = 0;      // same in the all-gather dtype (param_dtype or own)
  int64_t gathered_bytes = 0;          // S · shard_gather_bytes: the all-gather output
  bool cast_in_copy_in = false;        // param_dtype differs from some param's own dtype
  int64_t grad_numel = 0;              // padded sharded numel of params that require grad
  int64_t grad_bytes = 0;              // unsharded grads (S · grad_numel, compute dtype)
  int64_t reduce_in_bytes = 0;         // reduce-scatter input: S · grad_numel · reduce dtype
  int64_t reduce_out_bytes = 0;        // its output: grad_numel · reduce dtype
  int64_t sharded_grad_bytes = 0;      // persistent reduced grads, own dtype
  int64_t optimizer_numel = 0;         // elements the optimizer updates (grads, incl. replicate)
  int64_t optimizer_param_bytes = 0;   // those params in their own dtype
  int64_t replicate_bytes = 0;         // replicate params, whole, own dtype
  int64_t replicate_grad_bytes = 0;    // their unsharded grads (compute dtype)
  int64_t replicate_reduce_bytes = 0;  // their all-reduce size (reduce dtype)
  int64_t reduce_dtype_bytes = 4;
  int64_t replicate_numel = 0;       // replicate params, whole (local tensors)
  int64_t replicate_grad_numel = 0;  // those that require grad
  // Element types of the buffers above (the unit's parameters in one dtype; kUInt8, raw
  // bytes, when they differ, as FSDP2's flat all-gather then is).
  DType own_dtype = DType::kUInt8;     // shard_bytes, sharded_grad_bytes, replicate_bytes
  DType gather_dtype = DType::kUInt8;  // gathered_bytes, grad_bytes, replicate_grad_bytes
  DType reduce_dtype = DType::kUInt8;  // reduce_in/out_bytes, replicate_reduce_bytes
};

UnitSizes ComputeUnitSizes(const UnitPlan& unit);

// Bytes of one sharded parameter's unsharded gradient, its part of grad_bytes: S ·
// sharded_numel elements (padding rows included) of its gather dtype; 0 without grad.
int64_t UnshardedGradBytes(const UnitPlan& unit, const ParamPlan& param, int shard_group);

// `bytes` as elements of `dtype`, or as raw bytes (kUInt8) when they are not whole elements
// (a workspace): how buffers and collectives are typed.
struct Elements {
  DType dtype = DType::kUInt8;
  int64_t numel = 0;
};
Elements ElementsOf(DType dtype, int64_t bytes);

}  // namespace shardscope
