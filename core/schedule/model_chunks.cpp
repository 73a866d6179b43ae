#include "core/schedule/model_chunks.h"

#include <fmt/core.h>

#include <map>

namespace shardscope {
namespace {

// The module part of a parameter FQN ("model.norm.weight" → "model.norm").
std::string ModuleOf(const std::string& param_fqn) {
  const size_t dot = param_fqn.rfind('.');
  return dot == std::string::npos ? std::string() : param_fqn.substr(0, dot);
}

void CollectMembers(const std::vector<UnitWork>& work, int u, std::vector<int>& out) {
  out.push_back(u);
  for (const WorkEntry& e : work[u].entries) {
    if (e.kind == WorkEntry::Kind::kUnit) CollectMembers(work, e.unit, out);
  }
}

// Input activation of a unit: its first item's input, or its first nested unit's.
int64_t FirstInputBytes(const std::vector<UnitWork>& work, int u) {
  for (const WorkEntry& e : work[u].entries) {
    if (e.kind == WorkEntry::Kind::kItem) return e.item.cost.input_bytes;
    if (e.kind == WorkEntry::Kind::kUnit) return FirstInputBytes(work, e.unit);
  }
  return 0;
}

}  // namespace

Result<ModelChunks> SplitIntoChunks(const Plan& plan, const std::vector<UnitWork>& work,
                                    const std::vector<std::string>& modules, int chunks) {
  const int root = static_cast<int>(plan.units.size()) - 1;
  const UnitWork& root_work = work[root];
  int top_level = 0;
  for (const WorkEntry& e : root_work.entries) top_level += e.kind == WorkEntry::Kind::kUnit;
  if (chunks > 1 && top_level < chunks) {
    return InvalidInput(fmt::format(
        "parallelism: pp · pp_virtual_stages = {} model chunks, but the plan has only {} "
        "top-level units to split among them",
        chunks, top_level));
  }
  ModelChunks out;
  for (int u = 0; u < root; ++u) {
    out.units.push_back(plan.units[u]);
    out.work.push_back(work[u]);
    out.labels.push_back(plan.units[u].fqn);
  }
  // Entries of the root go to the chunk of the unit before them (chunk 0 before any unit).
  std::vector<UnitWork> chunk_work(chunks);
  std::map<std::string, int> chunk_of_module;
  int seen = 0, current = 0;
  for (const WorkEntry& e : root_work.entries) {
    if (e.kind == WorkEntry::Kind::kUnit)
      current = static_cast<int>(int64_t{seen++} * chunks / top_level);
    if (e.kind == WorkEntry::Kind::kItem) chunk_of_module.emplace(modules[e.item.module], current);
    chunk_work[current].entries.push_back(e);
  }
  const UnitPlan& plan_root = plan.units[root];
  for (int c = 0; c < chunks; ++c) {
    UnitPlan r = plan_root;
    r.params.clear();
    r.replicate_params.clear();
    auto keep = [&](const ParamPlan& p) {
      auto it = chunk_of_module.find(ModuleOf(p.fqn));
      return (it == chunk_of_module.end() ? 0 : it->second) == c;
    };
    for (const ParamPlan& p : plan_root.params) {
      if (keep(p)) r.params.push_back(p);
    }
    for (const ParamPlan& p : plan_root.replicate_params) {
      if (keep(p)) r.replicate_params.push_back(p);
    }
    for (const WorkEntry& e : chunk_work[c].entries) {
      if (e.kind == WorkEntry::Kind::kItem) {
        chunk_work[c].input_bytes = e.item.cost.input_bytes;
        break;
      }
    }
    out.roots.push_back(static_cast<int>(out.units.size()));
    out.units.push_back(std::move(r));
    out.work.push_back(std::move(chunk_work[c]));
    out.labels.push_back(chunks == 1 ? UnitOpLabel("") : ChunkRootLabel(c));
  }
  out.members.resize(chunks);
  for (int c = 0; c < chunks; ++c) {
    CollectMembers(out.work, out.roots[c], out.members[c]);
    out.input_bytes.push_back(FirstInputBytes(out.work, out.roots[c]));
  }
  return out;
}

}  // namespace shardscope
