#include "core/schedule/step_basis.h"

#include <utility>

namespace shardscope {

Result<StepBasis> MakeStepBasis(const ModelTree& tree, const Plan& plan,
                                const ScheduleOptions& options, const StepBasisKey& key) {
  StepBasis b;
  b.key = key;
  SS_ASSIGN_OR_RETURN(std::vector<UnitWork> work,
                      BuildUnitWork(tree, plan, options, key.ctx, key.groups, b.modules));
  // BuildUnitWork names one module per module visit with an op (EnumerateModules' order).
  b.modules_with_op = static_cast<int64_t>(b.modules.size());
  SS_ASSIGN_OR_RETURN(b.chunks, SplitIntoChunks(plan, std::move(work), b.modules, key.chunks));
  b.sizes.reserve(b.chunks.units.size());
  for (const UnitPlan& unit : b.chunks.units) b.sizes.push_back(ComputeUnitSizes(unit));
  b.chunk_of.assign(b.chunks.units.size(), 0);
  for (size_t c = 0; c < b.chunks.members.size(); ++c) {
    for (int u : b.chunks.members[c]) b.chunk_of[u] = static_cast<int>(c);
  }
  return b;
}

Result<std::shared_ptr<const StepBasis>> StepBasisCache::Get(
    const std::shared_ptr<const ModelTree>& tree, const std::shared_ptr<const Plan>& plan,
    const ScheduleOptions& options, const StepBasisKey& key) {
  std::tuple<const ModelTree*, const Plan*, StepBasisKey> at{tree.get(), plan.get(), key};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = bases_.find(at); it != bases_.end()) return it->second.basis;
  }
  // Made outside the lock: two threads may make one basis at once; the first kept wins, and
  // they are alike.
  SS_ASSIGN_OR_RETURN(StepBasis made, MakeStepBasis(*tree, *plan, options, key));
  auto basis = std::make_shared<const StepBasis>(std::move(made));
  std::lock_guard<std::mutex> lock(mu_);
  if (bases_.size() >= kMaxBases) return basis;
  return bases_.emplace(std::move(at), Entry{tree, plan, basis}).first->second.basis;
}

size_t StepBasisCache::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return bases_.size();
}

}  // namespace shardscope
