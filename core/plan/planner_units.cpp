// Step 3 of planning.md §2: which modules become FSDP units, in list order (automatic blocks,
// then adapter-declared units, then expert units).
#include <set>
#include <unordered_set>

#include <fmt/format.h>

#include "core/plan/planner_internal.h"

namespace shardscope::planner {

Result<std::vector<UnitDraft>> DiscoverUnits(const ModelTree& tree,
                                             const std::vector<ModuleEntry>& modules,
                                             const ResolvedAdapter* adapter,
                                             const SourceInfo& sources, const MeshContext& mesh) {
  const size_t n = modules.size();
  std::unordered_map<std::string_view, int> canonical;  // first-visit FQN → entry
  std::unordered_map<std::string_view, int> any_visit;
  canonical.reserve(n);
  std::vector<std::vector<int>> kids(n);
  for (size_t i = 0; i < n; ++i) {
    const ModuleEntry& m = modules[i];
    if (m.first_visit) canonical.emplace(m.fqn, static_cast<int>(i));
    any_visit.emplace(m.fqn, static_cast<int>(i));
    if (m.parent >= 0) kids[static_cast<size_t>(m.parent)].push_back(static_cast<int>(i));
  }
  std::vector<char> chosen(tree.modules.size(), 0);
  auto choose = [&](int module) {
    chosen[static_cast<size_t>(module)] = 1;
    // A checkpoint wrapper's block is the module it wraps.
    const Module& m = tree.modules[static_cast<size_t>(module)];
    if (m.checkpoint_wrapper && m.children.size() == 1) chosen[static_cast<size_t>(m.children[0])] = 1;
  };

  // 3a/3b. Declared units (already validated by ResolveAdapter) and the excluded set.
  std::vector<UnitDraft> declared;
  std::unordered_set<std::string_view> excluded_fqns;
  if (adapter != nullptr) {
    for (const std::string& fqn : adapter->wrap_modules) {
      const int e = canonical.at(fqn);
      declared.push_back({fqn, e, modules[static_cast<size_t>(e)].module});
      excluded_fqns.insert(fqn);
    }
    for (const std::string& fqn : adapter->excluded_subtrees) excluded_fqns.insert(fqn);
  }
  for (const UnitDraft& d : declared) choose(d.module);
  // A module is excluded when it or an ancestor visit is (pre-order: parents come first).
  std::vector<char> excluded(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const ModuleEntry& m = modules[i];
    excluded[i] = (m.parent >= 0 && excluded[static_cast<size_t>(m.parent)]) ||
                  (!m.fqn.empty() && excluded_fqns.count(m.fqn) > 0);
  }

  // 3c. Automatic discovery: grandchildren of `gradient_checkpointing` containers. A second
  // visit of a shared module is not walked again (it would name the same blocks twice).
  std::vector<UnitDraft> blocks;
  for (size_t i = 0; i < n; ++i) {
    const ModuleEntry& m = modules[i];
    const Module& mod = tree.modules[static_cast<size_t>(m.module)];
    if (!m.first_visit || excluded[i] || chosen[static_cast<size_t>(m.module)] ||
        !mod.gradient_checkpointing) {
      continue;
    }
    for (int c : kids[i]) {
      if (excluded[static_cast<size_t>(c)]) continue;
      const ModuleEntry& child = modules[static_cast<size_t>(c)];
      if (tree.modules[static_cast<size_t>(child.module)].children.empty()) continue;
      for (int g : kids[static_cast<size_t>(c)]) {
        const ModuleEntry& block = modules[static_cast<size_t>(g)];
        // Not in the reference's words, but needed: a grandchild that is excluded (declared)
        // or already a block must not become a second unit.
        if (excluded[static_cast<size_t>(g)] || chosen[static_cast<size_t>(block.module)]) continue;
        blocks.push_back({block.fqn, g, block.module});
        choose(block.module);
      }
    }
  }

  // 3d. Expert units: `<prefix>.experts` of every alias of a parameter on an `ep` mesh.
  std::vector<UnitDraft> experts;
  if (sources.present && mesh.has_expert_mesh()) {
    std::set<std::string> names;
    for (const ParamInfo& p : sources.params) {
      if (!p.expert) continue;
      for (const std::string& fqn : p.entry->fqns) {
        const size_t pos = fqn.find(".experts.");
        if (pos != std::string::npos) names.insert(fqn.substr(0, pos) + ".experts");
      }
    }
    for (const std::string& name : names) {
      int entry = -1;
      if (auto it = canonical.find(name); it != canonical.end()) {
        entry = it->second;
      } else if (auto it2 = any_visit.find(name); it2 != any_visit.end()) {
        entry = it2->second;
      }
      if (entry < 0) {
        return InvalidInput(fmt::format(
            "expert unit {}: no module has this FQN (expert parameters must live under a module "
            "named `experts`)",
            name));
      }
      const ModuleEntry& m = modules[static_cast<size_t>(entry)];
      if (chosen[static_cast<size_t>(m.module)]) continue;
      experts.push_back({name, entry, m.module});
      choose(m.module);
    }
  }

  std::vector<UnitDraft> units = std::move(blocks);
  units.insert(units.end(), declared.begin(), declared.end());
  units.insert(units.end(), experts.begin(), experts.end());
  if (units.empty()) {
    return InvalidInput(
        "wrap_policy='transformer_block' found no decoder, expert, or adapter-declared FSDP child "
        "unit");
  }
  return units;
}

}  // namespace shardscope::planner
