#include "core/model/model_summary.h"

#include <set>
#include <unordered_map>

namespace shardscope {
namespace {

bool Under(const std::string& fqn, const std::string& prefix) {
  return fqn == prefix || (fqn.size() > prefix.size() &&
                           fqn.compare(0, prefix.size(), prefix) == 0 && fqn[prefix.size()] == '.');
}

}  // namespace

std::vector<std::string> FindUnitCandidates(const ModelTree& tree) {
  const std::vector<ModuleEntry> modules = EnumerateModules(tree);
  // Children of each entry, by entry index, in order.
  std::vector<std::vector<int>> kids(modules.size());
  for (size_t i = 1; i < modules.size(); ++i) {
    kids[static_cast<size_t>(modules[i].parent)].push_back(static_cast<int>(i));
  }
  std::vector<std::string> chosen;
  std::set<std::string> chosen_set;
  auto in_chosen = [&](const std::string& fqn) {
    for (const std::string& c : chosen) {
      if (Under(fqn, c)) return true;
    }
    return false;
  };
  for (size_t i = 0; i < modules.size(); ++i) {
    const ModuleEntry& e = modules[i];
    const Module& m = tree.modules[static_cast<size_t>(e.module)];
    if (!m.gradient_checkpointing || in_chosen(e.fqn)) continue;
    for (int child : kids[i]) {
      for (int grandchild : kids[static_cast<size_t>(child)]) {
        const std::string& fqn = modules[static_cast<size_t>(grandchild)].fqn;
        if (chosen_set.insert(fqn).second) chosen.push_back(fqn);
      }
    }
  }
  return chosen;
}

ModelSummary SummarizeModel(const ModelTree& tree) {
  ModelSummary s;
  s.model_type = tree.identity.model_type;
  s.architecture = tree.identity.architecture;
  // Which module each parameter entry belongs to, to read the owner's op.
  std::unordered_map<const Param*, const Module*> owner;
  for (const Module& m : tree.modules) {
    for (const Param& p : m.params) owner[&p] = &m;
  }
  s.blocks = FindUnitCandidates(tree);
  s.block_params.assign(s.blocks.size(), 0);
  std::set<std::string> experts_seen;
  double active = 0;
  for (const ParamEntry& p : EnumerateParams(tree)) {
    const int64_t n = NumElements(p.param->shape);
    s.total_params += n;
    if (p.param->requires_grad) s.trainable_params += n;
    s.param_bytes += n * DTypeBytes(p.param->dtype);
    if (p.fqns.size() > 1) s.tied = true;
    bool is_embedding = false, is_expert = false;
    int64_t top_k = 0, num_experts = 0;
    for (const Param* alias : p.entries) {
      const Module* m = owner[alias];
      if (m && m->op && m->op->kind == OpKind::kEmbedding) is_embedding = true;
      if (m && m->op && m->op->kind == OpKind::kExperts) {
        is_expert = true;
        top_k = m->op->dim("top_k");
        num_experts = m->op->dim("experts");
      }
    }
    if (is_embedding) s.embedding_params += n;
    if (is_expert && num_experts > 0) {
      s.routed_expert_params += n;
      active +=
          static_cast<double>(n) * static_cast<double>(top_k) / static_cast<double>(num_experts);
      const std::string& fqn = p.fqns[0];
      const size_t cut = fqn.rfind('.');
      if (cut != std::string::npos && experts_seen.insert(fqn.substr(0, cut)).second) {
        s.expert_modules.push_back(fqn.substr(0, cut));
      }
    } else {
      active += static_cast<double>(n);
    }
    // A tensor counts toward the candidate that holds all of its names (planning's owner rule).
    for (size_t b = 0; b < s.blocks.size(); ++b) {
      bool all = true;
      for (const std::string& f : p.fqns) all = all && Under(f, s.blocks[b]);
      if (all) s.block_params[b] += n;
    }
  }
  s.active_params_per_token = static_cast<int64_t>(active + 0.5);
  // Group consecutive blocks of one class and size (dense vs MoE layers).
  std::unordered_map<std::string, std::string> class_of;
  for (const ModuleEntry& e : EnumerateModules(tree)) {
    class_of[e.fqn] = tree.modules[static_cast<size_t>(e.module)].class_name;
  }
  for (size_t b = 0; b < s.blocks.size(); ++b) {
    const std::string& cls = class_of[s.blocks[b]];
    if (!s.layer_groups.empty() && s.layer_groups.back().class_name == cls &&
        s.layer_groups.back().params == s.block_params[b]) {
      ++s.layer_groups.back().count;
    } else {
      s.layer_groups.push_back({static_cast<int>(b), 1, cls, s.block_params[b]});
    }
  }
  return s;
}

nlohmann::json ModelSummaryToJson(const ModelSummary& s) {
  nlohmann::json groups = nlohmann::json::array();
  for (const LayerGroup& g : s.layer_groups) {
    groups.push_back({{"first", s.blocks[static_cast<size_t>(g.first)]},
                      {"count", g.count},
                      {"class", g.class_name},
                      {"params_per_layer", g.params}});
  }
  return {{"model_type", s.model_type},
          {"architecture", s.architecture},
          {"total_params", s.total_params},
          {"trainable_params", s.trainable_params},
          {"embedding_params", s.embedding_params},
          {"non_embedding_params", s.total_params - s.embedding_params},
          {"layers", static_cast<int64_t>(s.blocks.size())},
          {"active_params_per_token", s.active_params_per_token},
          {"routed_expert_params", s.routed_expert_params},
          {"param_bytes", s.param_bytes},
          {"tied", s.tied},
          {"layer_groups", groups},
          {"unit_candidates", s.blocks},
          {"expert_units", s.expert_modules}};
}

}  // namespace shardscope
