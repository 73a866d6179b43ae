#include "core/plan/adapter.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

#include "core/util/ascii_case.h"

namespace shardscope {
namespace {

AdapterRegistry MakeBuiltins() {
  AdapterRegistry r;
  // Qwen2-VL / Qwen2.5-VL: the vision tower is a `gradient_checkpointing` model of its own, so
  // discovery would split its patch embedding and merger into tiny units. Exclude the tower,
  // declare its blocks and the merger (the projector into the language model). transformers
  // < 4.52 registers the tower as `visual`, later versions as `model.visual`.
  AdapterSpec qwen_vl;
  qwen_vl.name = "built-in adapter qwen2_vl";
  qwen_vl.fsdp_wrap_modules = {"visual.blocks.*", "visual.merger", "model.visual.blocks.*",
                               "model.visual.merger"};
  qwen_vl.fsdp_excluded_subtrees = {"visual", "model.visual"};
  qwen_vl.allow_unmatched = true;
  r.Register(qwen_vl, {"qwen2_vl", "qwen2_5_vl"});
  // LLaVA-style models (LLaVA, LLaVA-NeXT, Gemma 3, Mistral 3, PaliGemma): the vision
  // encoder's layers are found automatically (its encoder carries gradient_checkpointing),
  // but the multi-modal projector is a plain module: declare it as a unit of its own.
  AdapterSpec llava;
  llava.name = "built-in adapter llava";
  llava.fsdp_wrap_modules = {"multi_modal_projector", "model.multi_modal_projector"};
  llava.allow_unmatched = true;
  r.Register(llava, {"llava", "llava_next", "gemma3", "mistral3", "paligemma"});
  // DeepSeek-V3: no adapter. Hugging Face's DeepseekV3ForCausalLM does not instantiate the
  // multi-token-prediction layer (its weights are dropped on load), so a real tree has nothing
  // beyond the decoder layers and the routed-expert units that discovery already finds.
  return r;
}

}  // namespace

std::string NormalizeModelName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c == '_' || c == '-') continue;
    out.push_back(AsciiLower(c));
  }
  static constexpr std::array<std::string_view, 10> kSuffixes = {"forconditionalgeneration",
                                                                 "forsequenceclassification",
                                                                 "fortokenclassification",
                                                                 "forquestionanswering",
                                                                 "forcausallm",
                                                                 "formaskedlm",
                                                                 "forpretraining",
                                                                 "lmheadmodel",
                                                                 "pretrainedmodel",
                                                                 "model"};
  for (std::string_view suffix : kSuffixes) {
    if (out.ends_with(suffix) && out.size() > suffix.size()) {
      out.resize(out.size() - suffix.size());
      break;
    }
  }
  return out;
}

void AdapterRegistry::Register(const AdapterSpec& spec, const std::vector<std::string>& names) {
  for (const std::string& n : names) entries_.emplace_back(NormalizeModelName(n), spec);
}

const AdapterSpec* AdapterRegistry::FindByName(std::string_view name) const {
  const std::string key = NormalizeModelName(name);
  if (key.empty()) return nullptr;
  for (const auto& [n, spec] : entries_) {
    if (n == key) return &spec;
  }
  return nullptr;
}

const AdapterSpec* AdapterRegistry::Find(const ConfigIdentity& identity) const {
  if (const AdapterSpec* a = FindByName(identity.model_type)) return a;
  return FindByName(identity.architecture);
}

const AdapterRegistry& BuiltinAdapters() {
  static const AdapterRegistry registry = MakeBuiltins();
  return registry;
}

bool GlobMatch(std::string_view pattern, std::string_view fqn) {
  while (true) {
    const size_t pd = pattern.find('.');
    const size_t fd = fqn.find('.');
    const std::string_view pc = pattern.substr(0, pd);
    const std::string_view fc = fqn.substr(0, fd);
    if (pc != "*" && pc != fc) return false;
    if (pc == "*" && fc.empty()) return false;
    if (pd == std::string_view::npos || fd == std::string_view::npos) {
      return pd == std::string_view::npos && fd == std::string_view::npos;
    }
    pattern.remove_prefix(pd + 1);
    fqn.remove_prefix(fd + 1);
  }
}

Result<ResolvedAdapter> ResolveAdapter(const AdapterSpec& spec,
                                       const std::vector<ModuleEntry>& modules) {
  ResolvedAdapter out;
  out.name = spec.name;
  std::unordered_map<std::string_view, const ModuleEntry*> canonical;
  std::unordered_map<std::string_view, const ModuleEntry*> alias;
  for (const ModuleEntry& m : modules) {
    if (m.first_visit) {
      canonical.emplace(m.fqn, &m);
    } else {
      alias.emplace(m.fqn, &m);
    }
  }
  // Expands one list; `must_exist` false lets exact names through for the planner to check.
  auto expand = [&](const std::vector<std::string>& entries, const char* field,
                    bool must_exist) -> Result<std::vector<std::string>> {
    std::vector<std::string> result;
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string& e = entries[i];
      if (e.empty()) {
        return InvalidInput(
            fmt::format("{}: {}[{}] is empty (expected a module FQN)", spec.name, field, i));
      }
      if (e.find('*') != std::string::npos) {
        size_t matched = 0;
        for (const ModuleEntry& m : modules) {
          if (m.first_visit && !m.fqn.empty() && GlobMatch(e, m.fqn)) {
            result.push_back(m.fqn);
            ++matched;
          }
        }
        if (matched == 0 && !spec.allow_unmatched) {
          return InvalidInput(
              fmt::format("{}: {}[{}] = '{}' matches no module", spec.name, field, i, e));
        }
        continue;
      }
      if (canonical.count(e)) {
        result.push_back(e);
        continue;
      }
      if (!must_exist) {
        result.push_back(e);
        continue;
      }
      if (spec.allow_unmatched) continue;
      if (alias.count(e)) {
        return InvalidInput(fmt::format(
            "{}: {}[{}] = '{}' is a second name of a shared module (use its first name in "
            "pre-order)",
            spec.name, field, i, e));
      }
      return InvalidInput(fmt::format("{}: {}[{}] = '{}' is not a module FQN of this model",
                                      spec.name, field, i, e));
    }
    return result;
  };
  SS_ASSIGN_OR_RETURN(out.wrap_modules, expand(spec.fsdp_wrap_modules, "fsdp_wrap_modules", true));
  SS_ASSIGN_OR_RETURN(out.excluded_subtrees,
                      expand(spec.fsdp_excluded_subtrees, "fsdp_excluded_subtrees", true));
  SS_ASSIGN_OR_RETURN(out.execution_order,
                      expand(spec.fsdp_execution_order, "fsdp_execution_order", false));
  std::unordered_set<std::string_view> seen;
  for (const std::string& w : out.wrap_modules) {
    if (!seen.insert(w).second) {
      return InvalidInput(
          fmt::format("{}: fsdp_wrap_modules declares module '{}' twice", spec.name, w));
    }
  }
  return out;
}

}  // namespace shardscope
