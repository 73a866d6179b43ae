#include "core/plan/plan.h"

namespace shardscope {
int MeshSpec::shard_size() const {
  int n = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].ends_with("shard")) n *= sizes[i];
  }
  return n;
}

int MeshSpec::replicate_size() const {
  int n = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].ends_with("replicate")) n *= sizes[i];
  }
  return n;
}

int64_t UnitPlan::sharded_numel() const {
  int64_t n = 0;
  for (const ParamPlan& p : params) n += p.sharded_numel;
  return n;
}

int64_t UnitPlan::unsharded_numel() const {
  int64_t n = 0;
  for (const ParamPlan& p : params) n += p.unsharded_numel;
  for (const ParamPlan& p : replicate_params) n += p.unsharded_numel;
  return n;
}

int64_t UnitPlan::sharded_bytes() const {
  int64_t n = 0;
  for (const ParamPlan& p : params) n += p.sharded_numel * DTypeBytes(p.dtype);
  return n;
}

int64_t UnitPlan::unsharded_bytes() const {
  int64_t n = 0;
  for (const ParamPlan& p : params) n += p.unsharded_numel * DTypeBytes(p.dtype);
  for (const ParamPlan& p : replicate_params) n += p.unsharded_numel * DTypeBytes(p.dtype);
  return n;
}

int Plan::FindUnit(const std::string& fqn) const {
  for (size_t i = 0; i < units.size(); ++i) {
    if (units[i].fqn == fqn) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace shardscope
