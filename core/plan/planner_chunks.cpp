// The pipeline extension of the planner (planning.md §2): with pp > 1 torchtitan splits the
// model into pp · pp_virtual_stages chunks and applies fully_shard to each chunk's model, so
// every chunk has its own FSDP root. The split:
//   - top-level units (units whose nearest enclosing unit is the root) in execution order,
//     split as torchtitan's generate_llm_fqn_per_model_part splits layers: the embedding and
//     the norm + head each weigh one unit on the first / last chunk (below);
//   - a root-owned module with compute goes to the chunk of the top-level unit before it in
//     module order (chunk 0 before any: the embedding), the loss to the last chunk (it
//     consumes the head's logits);
//   - a root parameter goes with its module (chunk 0 when that module has no compute); a tied
//     one whose aliases' modules run in several chunks (an embedding tied to the output head)
//     goes to each of them: torchtitan splits the model by deleting the modules a stage does
//     not run, so every chunk computing with the weight keeps the parameter and manages its
//     own copy (gathers, reduces and steps it). Nothing keeps the copies equal.
// The schedule builder (core/schedule/model_chunks.cpp) runs exactly these chunks.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <utility>

#include "core/plan/planner_internal.h"
#include "core/trace/op_id.h"

namespace shardscope::planner {
namespace {

// The module part of a parameter FQN ("model.norm.weight" → "model.norm").
std::string ModuleOf(const std::string& param_fqn) {
  const size_t dot = param_fqn.rfind('.');
  return dot == std::string::npos ? std::string() : param_fqn.substr(0, dot);
}

}  // namespace

Result<std::vector<ChunkRootPlan>> PlanPipelineChunks(const ModelTree& tree,
                                                      const std::vector<ModuleEntry>& modules,
                                                      const Plan& plan, int pp, int chunks,
                                                      std::vector<PlanWarning>& warnings) {
  const int root = static_cast<int>(plan.units.size()) - 1;
  std::map<int, int> unit_of_module;
  for (int u = 0; u < root; ++u) unit_of_module[plan.units[u].module] = u;
  // The root's own entries in module order: top-level units, and its modules with compute
  // (each with the number of top-level units before it).
  std::vector<int> top_level;
  std::vector<std::pair<std::string, size_t>> items;
  std::vector<std::string> losses;
  std::vector<std::pair<int, int>> stack = {{-1, root}};  // (module depth, unit)
  for (const ModuleEntry& e : modules) {
    while (stack.size() > 1 && stack.back().first >= e.depth) stack.pop_back();
    auto it = unit_of_module.find(e.module);
    if (e.first_visit && it != unit_of_module.end()) {
      if (stack.back().second == root) top_level.push_back(it->second);
      stack.emplace_back(e.depth, it->second);
    }
    if (stack.back().second != root || !tree.modules[e.module].op) continue;
    if (tree.modules[e.module].op->kind == OpKind::kLoss) {
      losses.push_back(e.fqn);
    } else {
      items.emplace_back(e.fqn, top_level.size());
    }
  }
  const int units = static_cast<int>(top_level.size());
  if (units < chunks) {
    return InvalidInput(fmt::format(
        "parallelism: pp · pp_virtual_stages = {} model chunks, but the plan has only {} "
        "top-level units to split among them",
        chunks, units));
  }
  std::stable_sort(top_level.begin(), top_level.end(), [&](int a, int b) {
    return plan.units[a].execution_index.value_or(-1) < plan.units[b].execution_index.value_or(-1);
  });
  // torchtitan's generate_llm_fqn_per_model_part: the input modules (embedding) and the
  // output modules (norm, head) each weigh one layer where the root computes before the first
  // / after the last top-level unit; the units and weights are split evenly, the first
  // (units + weights) % chunks chunks taking one more, and the first and last chunks hold their
  // weight's modules in place of a unit. Where that would leave a chunk without a unit (fewer
  // than two units a chunk), the units alone are split evenly.
  bool input_work = false, output_work = !losses.empty();
  for (const auto& [fqn, before] : items) {
    input_work = input_work || before == 0;
    output_work = output_work || before == static_cast<size_t>(units);
  }
  const int effective = units + (input_work ? 1 : 0) + (output_work ? 1 : 0);
  std::vector<int> counts(static_cast<size_t>(chunks));  // units per chunk
  bool weighted = true;
  for (int c = 0; c < chunks; ++c) {
    int n = effective / chunks + (c < effective % chunks ? 1 : 0);
    if (c == 0 && input_work) --n;
    if (c == chunks - 1 && output_work) --n;
    counts[static_cast<size_t>(c)] = n;
    weighted = weighted && n >= 1;
  }
  if (!weighted) {  // unit k of T to chunk ⌊k · chunks / T⌋
    counts.assign(static_cast<size_t>(chunks), 0);
    for (int k = 0; k < units; ++k) ++counts[static_cast<size_t>(int64_t{k} * chunks / units)];
  }
  std::vector<int> chunk_of_slot;  // per top-level unit, in execution order
  for (int c = 0; c < chunks; ++c) {
    chunk_of_slot.insert(chunk_of_slot.end(), static_cast<size_t>(counts[static_cast<size_t>(c)]),
                         c);
  }
  std::vector<ChunkRootPlan> out(chunks);
  for (int c = 0; c < chunks; ++c) {
    out[c].chunk = c;
    out[c].stage = c % pp;
    out[c].label = ChunkRootLabel(c);
  }
  for (size_t k = 0; k < top_level.size(); ++k) {
    out[chunk_of_slot[k]].units.push_back(plan.units[top_level[k]].fqn);
  }
  std::map<std::string, int> chunk_of_module;
  for (const auto& [fqn, before] : items) {
    if (chunk_of_module.emplace(fqn, before == 0 ? 0 : chunk_of_slot[before - 1]).second) {
      out[chunk_of_module[fqn]].modules.push_back(fqn);
    }
  }
  for (const std::string& fqn : losses) {
    if (chunk_of_module.emplace(fqn, chunks - 1).second) out[chunks - 1].modules.push_back(fqn);
  }
  const auto place = [&](const ParamPlan& p, bool replicated) {
    std::vector<int> at;
    std::vector<std::string> users;
    for (const std::string& fqn : p.aliases.empty() ? std::vector<std::string>{p.fqn} : p.aliases) {
      const auto it = chunk_of_module.find(ModuleOf(fqn));
      if (it == chunk_of_module.end()) continue;
      users.push_back(fmt::format("{} in {}", fqn, out[it->second].label));
      if (std::find(at.begin(), at.end(), it->second) == at.end()) at.push_back(it->second);
    }
    if (at.empty()) at.push_back(0);
    std::sort(at.begin(), at.end());
    for (int c : at) (replicated ? out[c].replicate_params : out[c].params).push_back(p.fqn);
    if (at.size() > 1) {
      warnings.push_back(
          {"tied_across_chunks",
           fmt::format("tied parameter {} is used by several pipeline chunks ({}): each holds, "
                       "gathers, reduces and updates its own copy, as a split by module leaves "
                       "it; keeping the copies equal would need an all-reduce of their "
                       "gradients between the stages, which FSDP2 does not do and the "
                       "prediction does not include",
                       p.fqn, fmt::join(users, ", "))});
    }
  };
  for (const ParamPlan& p : plan.units[root].params) place(p, false);
  for (const ParamPlan& p : plan.units[root].replicate_params) place(p, true);
  return out;
}

}  // namespace shardscope::planner
