#include "core/schedule/model_chunks.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <utility>

namespace shardscope {
namespace {

void CollectMembers(const std::vector<UnitWork>& work, int u, std::vector<int>& out) {
  out.push_back(u);
  for (const WorkEntry& e : work[u].entries) {
    if (e.kind == WorkEntry::Kind::kUnit) CollectMembers(work, e.unit, out);
  }
}

// Input activation of a unit: its first item's input, or its first nested unit's block input.
int64_t FirstInputBytes(const std::vector<UnitWork>& work, int u) {
  for (const WorkEntry& e : work[u].entries) {
    if (e.kind == WorkEntry::Kind::kItem) return e.item.cost.input_bytes;
    if (e.kind == WorkEntry::Kind::kUnit) return work[e.unit].input_bytes;
  }
  return 0;
}

}  // namespace

Result<ModelChunks> SplitIntoChunks(const Plan& plan, std::vector<UnitWork> work,
                                    const std::vector<std::string>& modules, int chunks) {
  const int root = static_cast<int>(plan.units.size()) - 1;
  UnitWork& root_work = work[root];
  if (chunks > 1 && static_cast<int>(plan.pipeline_chunks.size()) != chunks) {
    return InvalidInput(fmt::format(
        "plan: {} pipeline chunk roots, but pp · pp_virtual_stages = {} model chunks; plan with "
        "the same parallelism.pp and pp_virtual_stages",
        plan.pipeline_chunks.size(), chunks));
  }
  // The plan's split (planning.md §2, pipeline extension): which chunk runs each top-level
  // unit and each root module, and which root parameters each chunk root manages.
  std::map<std::string, int> chunk_of_unit, chunk_of_module;
  std::map<std::string, std::vector<int>> chunks_of_param;  // a tied one may be in several
  if (chunks > 1) {
    for (const ChunkRootPlan& c : plan.pipeline_chunks) {
      for (const std::string& u : c.units) chunk_of_unit[u] = c.chunk;
      for (const std::string& m : c.modules) chunk_of_module[m] = c.chunk;
      for (const std::string& p : c.params) chunks_of_param[p].push_back(c.chunk);
      for (const std::string& p : c.replicate_params) chunks_of_param[p].push_back(c.chunk);
    }
  }
  ModelChunks out;
  out.units.reserve(plan.units.size() - 1 + chunks);
  out.work.reserve(plan.units.size() - 1 + chunks);
  for (int u = 0; u < root; ++u) {
    out.units.push_back(plan.units[u]);
    out.work.push_back(std::move(work[u]));
    out.labels.push_back(plan.units[u].fqn);
  }
  // Collective points of the root go with the entry before them (chunk 0 before any).
  std::vector<UnitWork> chunk_work(chunks);
  int current = 0;
  for (WorkEntry& e : root_work.entries) {
    if (chunks > 1 && e.kind == WorkEntry::Kind::kUnit) {
      auto it = chunk_of_unit.find(plan.units[e.unit].fqn);
      if (it == chunk_of_unit.end()) {
        return InvalidInput(fmt::format("plan: top-level unit '{}' is in no pipeline chunk",
                                        plan.units[e.unit].fqn));
      }
      current = it->second;
    }
    int chunk = current;
    if (chunks > 1 && e.kind == WorkEntry::Kind::kItem) {
      auto it = chunk_of_module.find(modules[e.item.module]);
      if (it != chunk_of_module.end()) chunk = it->second;
    }
    chunk_work[chunk].entries.push_back(std::move(e));
  }
  const UnitPlan& plan_root = plan.units[root];
  for (int c = 0; c < chunks; ++c) {
    UnitPlan r = plan_root;
    if (chunks > 1) {
      r.params.clear();
      r.replicate_params.clear();
      auto keep = [&](const ParamPlan& p) {
        auto it = chunks_of_param.find(p.fqn);
        return it == chunks_of_param.end()
                   ? c == 0
                   : std::find(it->second.begin(), it->second.end(), c) != it->second.end();
      };
      for (const ParamPlan& p : plan_root.params) {
        if (keep(p)) r.params.push_back(p);
      }
      for (const ParamPlan& p : plan_root.replicate_params) {
        if (keep(p)) r.replicate_params.push_back(p);
      }
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
    out.labels.push_back(chunks == 1 ? UnitOpLabel("") : plan.pipeline_chunks[c].label);
  }
  out.members.resize(chunks);
  for (int c = 0; c < chunks; ++c) {
    CollectMembers(out.work, out.roots[c], out.members[c]);
    out.input_bytes.push_back(FirstInputBytes(out.work, out.roots[c]));
  }
  return out;
}

}  // namespace shardscope
