#include "core/config/model_consistency.h"

#include <fmt/core.h>

namespace shardscope {

bool HasRoutedExperts(const ModelTree& tree) {
  for (const Module& m : tree.modules) {
    if (m.op && m.op->kind == OpKind::kExperts) return true;
    for (const Param& p : m.params) {
      if (p.layout && p.layout->count("ep")) return true;
    }
  }
  return false;
}

Status CheckScenarioAgainstModel(const Scenario& scenario, const ModelTree& tree) {
  const ParallelismConfig& par = scenario.parallelism;
  // An expert mesh over a dense model shards nothing: every rank of an ep group would hold
  // the same weights, and the prediction would silently describe a job that cannot exist.
  if (par.ep > 1 && !HasRoutedExperts(tree)) {
    return InvalidInput(fmt::format(
        "{}: parallelism.ep = {} (edp_shard = {}): the model has no routed experts, so expert "
        "parallelism does not apply (expected ep = 1 for a dense model)",
        scenario.source, par.ep, par.edp_shard));
  }
  return Status::Ok();
}

}  // namespace shardscope
