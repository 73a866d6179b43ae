#include "core/schedule/unit_sizes.h"

#include <string>

// Dtypes follow FSDP2 (_fsdp_param.py / _fsdp_collectives.py): the all-gather moves the shard
// cast to param_dtype; autograd produces unsharded gradients in that same dtype; the
// reduce-scatter input is cast to reduce_dtype (param_dtype when unset) and padded to S
// shards; the reduced shard is cast back to the parameter's own dtype as its sharded grad.
namespace shardscope {
namespace {

int DimProduct(const MeshSpec& mesh, const std::string& suffix) {
  int p = 1;
  for (size_t i = 0; i < mesh.dims.size() && i < mesh.sizes.size(); ++i) {
    const std::string& d = mesh.dims[i];
    if (d.size() >= suffix.size() &&
        d.compare(d.size() - suffix.size(), suffix.size(), suffix) == 0) {
      p *= mesh.sizes[i];
    }
  }
  return p;
}

// Folds one more element type into a buffer's: the first one seen, kUInt8 once two differ.
void Fold(DType d, bool& seen, DType& into) {
  if (!seen) {
    into = d;
    seen = true;
  } else if (into != d) {
    into = DType::kUInt8;
  }
}

}  // namespace

Elements ElementsOf(DType dtype, int64_t bytes) {
  Elements e;
  e.dtype = bytes % DTypeBytes(dtype) == 0 ? dtype : DType::kUInt8;
  e.numel = bytes / DTypeBytes(e.dtype);
  return e;
}

UnitSizes ComputeUnitSizes(const UnitPlan& unit) {
  UnitSizes s;
  s.shard_group = DimProduct(unit.mesh, "shard");
  s.replicate_group = DimProduct(unit.mesh, "replicate");
  const auto& mp = unit.mixed_precision;
  bool own_seen = false, gather_seen = false, reduce_seen = false;
  for (const std::vector<ParamPlan>* list : {&unit.params, &unit.replicate_params}) {
    for (const ParamPlan& p : *list) {
      const DType gather_dtype = mp.param_dtype.value_or(p.dtype);
      Fold(p.dtype, own_seen, s.own_dtype);
      Fold(gather_dtype, gather_seen, s.gather_dtype);
      Fold(mp.reduce_dtype.value_or(gather_dtype), reduce_seen, s.reduce_dtype);
    }
  }
  for (const ParamPlan& p : unit.params) {
    const int64_t own = DTypeBytes(p.dtype);
    const DType gather_dtype = mp.param_dtype.value_or(p.dtype);
    const int64_t gather = DTypeBytes(gather_dtype);
    const int64_t reduce = DTypeBytes(mp.reduce_dtype.value_or(gather_dtype));
    s.reduce_dtype_bytes = reduce;
    s.shard_numel += p.sharded_numel;
    s.shard_bytes += p.sharded_numel * own;
    s.shard_gather_bytes += p.sharded_numel * gather;
    if (gather_dtype != p.dtype) s.cast_in_copy_in = true;
    if (p.requires_grad) {
      s.grad_numel += p.sharded_numel;
      s.grad_bytes += UnshardedGradBytes(unit, p, s.shard_group);
      s.reduce_in_bytes += s.shard_group * p.sharded_numel * reduce;
      s.reduce_out_bytes += p.sharded_numel * reduce;
      s.sharded_grad_bytes += p.sharded_numel * own;
      s.optimizer_numel += p.sharded_numel;
      s.optimizer_param_bytes += p.sharded_numel * own;
    }
  }
  s.gathered_bytes = s.shard_group * s.shard_gather_bytes;
  for (const ParamPlan& p : unit.replicate_params) {
    const int64_t own = DTypeBytes(p.dtype);
    const DType gather_dtype = mp.param_dtype.value_or(p.dtype);
    const int64_t reduce = DTypeBytes(mp.reduce_dtype.value_or(gather_dtype));
    s.replicate_bytes += p.unsharded_numel * own;
    s.replicate_numel += p.unsharded_numel;
    if (p.requires_grad) {
      s.replicate_grad_numel += p.unsharded_numel;
      s.replicate_grad_bytes += p.unsharded_numel * DTypeBytes(gather_dtype);
      s.replicate_reduce_bytes += p.unsharded_numel * reduce;
      s.sharded_grad_bytes += p.unsharded_numel * own;
      s.optimizer_numel += p.unsharded_numel;
      s.optimizer_param_bytes += p.unsharded_numel * own;
    }
  }
  return s;
}

int64_t UnshardedGradBytes(const UnitPlan& unit, const ParamPlan& param, int shard_group) {
  if (!param.requires_grad) return 0;
  const int64_t gather = DTypeBytes(unit.mixed_precision.param_dtype.value_or(param.dtype));
  return shard_group * param.sharded_numel * gather;
}

}  // namespace shardscope
