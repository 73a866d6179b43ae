// Step 3 of planning.md §2: which modules become FSDP units, in list order (automatic blocks,
// then adapter-declared units, then expert units).
#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "core/plan/planner_internal.h"

namespace shardscope::planner {

Result<std::vector<UnitDraft>> DiscoverUnits(const ModelTree& tree,
                                             const std::vector<ModuleEntry>& modules,
                                             const ResolvedAdapter* adapter,
                                             const SourceInfo& sources, const MeshContext& mesh) {
  const size_t n = modules.size();
  // Children as linked lists over the enumeration (no per-module allocation: trees of 60k
  // modules must plan in milliseconds).
  std::vector<int> first_child(n, -1), next_sibling(n, -1), last_child(n, -1);
  for (size_t i = 1; i < n; ++i) {
    const size_t p = static_cast<size_t>(modules[i].parent);
    if (last_child[p] < 0) {
      first_child[p] = static_cast<int>(i);
    } else {
      next_sibling[static_cast<size_t>(last_child[p])] = static_cast<int>(i);
    }
    last_child[p] = static_cast<int>(i);
  }
  std::vector<char> chosen(tree.modules.size(), 0);
  auto choose = [&](int module) {
    chosen[static_cast<size_t>(module)] = 1;
    // A checkpoint wrapper's block is the module it wraps.
    const Module& m = tree.modules[static_cast<size_t>(module)];
    if (m.checkpoint_wrapper && m.children.size() == 1)
      chosen[static_cast<size_t>(m.children[0])] = 1;
  };

  // 3a/3b. Declared units (already validated by ResolveAdapter) and the excluded set.
  std::vector<UnitDraft> declared;
  std::unordered_set<std::string_view> excluded_fqns;
  if (adapter != nullptr && !adapter->wrap_modules.empty()) {
    std::unordered_map<std::string_view, int> entry_of;
    for (const std::string& fqn : adapter->wrap_modules) entry_of.emplace(fqn, -1);
    for (size_t i = 0; i < n; ++i) {
      if (!modules[i].first_visit) continue;
      auto it = entry_of.find(modules[i].fqn);
      if (it != entry_of.end()) it->second = static_cast<int>(i);
    }
    for (const std::string& fqn : adapter->wrap_modules) {
      const int e = entry_of.at(fqn);
      if (e < 0) return InvalidInput("declared unit " + fqn + " is not a module FQN");
      declared.push_back({fqn, e, modules[static_cast<size_t>(e)].module});
      excluded_fqns.insert(fqn);
    }
  }
  if (adapter != nullptr) {
    for (const std::string& fqn : adapter->excluded_subtrees) excluded_fqns.insert(fqn);
  }
  for (const UnitDraft& d : declared) choose(d.module);
  // A module is excluded when it or an ancestor visit is (pre-order: parents come first).
  std::vector<char> excluded(n, 0);
  if (!excluded_fqns.empty()) {
    for (size_t i = 1; i < n; ++i) {
      const ModuleEntry& m = modules[i];
      excluded[i] = excluded[static_cast<size_t>(m.parent)] || excluded_fqns.count(m.fqn) > 0;
    }
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
    for (int c = first_child[i]; c >= 0; c = next_sibling[static_cast<size_t>(c)]) {
      if (excluded[static_cast<size_t>(c)]) continue;
      const ModuleEntry& child = modules[static_cast<size_t>(c)];
      if (tree.modules[static_cast<size_t>(child.module)].children.empty()) continue;
      for (int g = first_child[static_cast<size_t>(c)]; g >= 0;
           g = next_sibling[static_cast<size_t>(g)]) {
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
    // Views into the parameters' FQNs: "<prefix>.experts" is the FQN up to the infix's dot.
    std::unordered_set<std::string_view> unique;
    for (const ParamInfo& p : sources.params) {
      if (!p.expert) continue;
      for (const std::string& fqn : p.entry->fqns) {
        const size_t pos = fqn.find(".experts.");
        if (pos != std::string::npos) unique.insert(std::string_view(fqn).substr(0, pos + 8));
      }
    }
    std::vector<std::string> names(unique.begin(), unique.end());
    std::sort(names.begin(), names.end());
    // Entry of each name: the first visit, else any visit (a second name of a shared module).
    std::unordered_map<std::string_view, int> entry_of;
    for (const std::string& name : names) entry_of.emplace(name, -1);
    constexpr std::string_view kSuffix = ".experts";
    for (size_t i = 0; i < n && !names.empty(); ++i) {
      const std::string& f = modules[i].fqn;
      if (f.size() < kSuffix.size() ||
          f.compare(f.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
        continue;
      }
      auto it = entry_of.find(f);
      if (it == entry_of.end()) continue;
      if (it->second < 0 ||
          (modules[i].first_visit && !modules[static_cast<size_t>(it->second)].first_visit)) {
        it->second = static_cast<int>(i);
      }
    }
    for (const std::string& name : names) {
      const int entry = entry_of.at(name);
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
