#include "core/schedule/step_basis.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace shardscope {
namespace {

std::vector<WorkSegment> SegmentsOf(const UnitWork& w, int& chunks) {
  std::vector<WorkSegment> segs;
  chunks = 0;
  bool close_chunk = false;
  for (size_t i = 0; i < w.entries.size(); ++i) {
    const WorkEntry& e = w.entries[i];
    if (e.kind == WorkEntry::Kind::kItem) {
      // The loss runs as its own op each way (the loss region: its backward runs before any
      // parameter gradient of the unit exists).
      const bool own_chunk = e.item.kind == OpKind::kLoss;
      if (segs.empty() || segs.back().kind != WorkSegment::Kind::kChunk || own_chunk ||
          close_chunk) {
        WorkSegment c;
        c.kind = WorkSegment::Kind::kChunk;
        c.chunk = chunks++;
        segs.push_back(std::move(c));
      }
      segs.back().entries.push_back(static_cast<int>(i));
      close_chunk = own_chunk;
    } else {
      WorkSegment c;
      c.kind =
          e.kind == WorkEntry::Kind::kComm ? WorkSegment::Kind::kComm : WorkSegment::Kind::kUnit;
      c.entries.push_back(static_cast<int>(i));
      c.unit = e.unit;
      segs.push_back(std::move(c));
    }
  }
  return segs;
}

std::vector<GradGroup> GradGroupsOf(const UnitPlan& unit, const UnitWork& work,
                                    const std::vector<WorkSegment>& segments, int chunks,
                                    const UnitSizes& sizes,
                                    const std::vector<std::string>& modules) {
  // Views of `modules`: a string-keyed tree with a copy of every parameter's module path was 2%
  // of a sweep's time.
  std::unordered_map<std::string_view, int> chunk_of_module;
  for (const WorkSegment& seg : segments) {
    if (seg.kind != WorkSegment::Kind::kChunk) continue;
    for (int e : seg.entries) chunk_of_module[modules[work.entries[e].item.module]] = seg.chunk;
  }
  std::vector<GradGroup> groups(static_cast<size_t>(chunks) + 1);
  for (size_t i = 0; i < unit.params.size(); ++i) {
    const ParamPlan& p = unit.params[i];
    if (!p.requires_grad) continue;
    int chunk = -1;
    auto owner = [&](std::string_view fqn) {
      const size_t dot = fqn.rfind('.');
      auto it = chunk_of_module.find(dot == std::string_view::npos ? std::string_view()
                                                                   : fqn.substr(0, dot));
      if (it != chunk_of_module.end()) chunk = std::max(chunk, it->second);
    };
    if (p.aliases.empty()) owner(p.fqn);
    for (const std::string& fqn : p.aliases) owner(fqn);
    GradGroup& g = groups[chunk < 0 ? chunks : chunk];
    g.params.push_back(static_cast<int>(i));
    g.bytes += UnshardedGradBytes(unit, p, sizes.shard_group);
  }
  return groups;
}

}  // namespace

Result<StepBasis> MakeStepBasis(const ModelTree& tree, const Plan& plan, const StepBasisKey& key) {
  // The options BuildUnitWork reads, from the key, so that a basis depends on its key alone: a
  // field BuildUnitWork starts to read stays at its default here, for every schedule, cached or
  // not, until the key holds it, and the builder's tests see it (without loss_parallel here,
  // golden.tp_fsdp fails).
  ScheduleOptions options;
  options.sequence_parallel = key.sequence_parallel;
  options.loss_parallel = key.ctx.loss_parallel;
  options.estimator = key.estimator;
  StepBasis b;
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
  const size_t n = b.chunks.units.size();
  b.segments.resize(n);
  b.chunk_counts.assign(n, 0);
  b.grad_groups.resize(n);
  for (size_t u = 0; u < n; ++u) {
    b.segments[u] = SegmentsOf(b.chunks.work[u], b.chunk_counts[u]);
    b.grad_groups[u] = GradGroupsOf(b.chunks.units[u], b.chunks.work[u], b.segments[u],
                                    b.chunk_counts[u], b.sizes[u], b.modules);
  }
  return b;
}

Result<std::shared_ptr<const StepBasis>> StepBasisCache::Get(
    const std::shared_ptr<const ModelTree>& tree, const std::shared_ptr<const Plan>& plan,
    const StepBasisKey& key) {
  std::tuple<const ModelTree*, const Plan*, StepBasisKey> at{tree.get(), plan.get(), key};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = bases_.find(at); it != bases_.end()) return it->second.basis;
  }
  // Made outside the lock: two threads may make one basis at once; the first kept wins, and
  // they are alike.
  SS_ASSIGN_OR_RETURN(StepBasis made, MakeStepBasis(*tree, *plan, key));
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
