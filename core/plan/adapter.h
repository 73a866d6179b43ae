// Model adapters (planning.md §1.4): extra FSDP units, excluded subtrees and an execution
// order that automatic block discovery cannot infer (vision towers, projectors, MTP layers).
//
// Contents:
//   AdapterSpec          the three optional lists; entries are FQNs or globs (`*` = one component)
//   NormalizeModelName   case-folded, `_`/`-` removed, HF task suffixes stripped
//   AdapterRegistry      name → adapter; Find looks up model_type, then the first architecture
//   BuiltinAdapters      the registry with the adapters shipped in code
//   ResolvedAdapter      the lists expanded against a tree (exact module FQNs)
//   ResolveAdapter       expands globs, checks every entry (errors per planning.md §2.3a)
//   GlobMatch            `a.*.c` against `a.b.c`
//
// Example:
//   const AdapterSpec* a = BuiltinAdapters().Find(tree.identity);   // qwen2_vl → vision blocks
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model/tree.h"
#include "core/util/status.h"

namespace shardscope {

struct AdapterSpec {
  std::string name;  // for messages ("built-in adapter qwen2_vl", "scenario adapter")
  std::vector<std::string> fsdp_wrap_modules;
  std::vector<std::string> fsdp_excluded_subtrees;
  std::vector<std::string> fsdp_execution_order;
  // Built-ins declare patterns for several versions of a model's code: a pattern matching no
  // module is skipped. A user adapter's entries must all match (false).
  bool allow_unmatched = false;
};

// "Qwen2_5_VLForConditionalGeneration" → "qwen25vl"; "deepseek-v3" → "deepseekv3".
std::string NormalizeModelName(std::string_view name);

class AdapterRegistry {
 public:
  // Registers `spec` under each of `names` (normalised).
  void Register(const AdapterSpec& spec, const std::vector<std::string>& names);
  // By model_type, then by the first architecture; null when neither is registered.
  const AdapterSpec* Find(const ConfigIdentity& identity) const;
  const AdapterSpec* FindByName(std::string_view name) const;

 private:
  std::vector<std::pair<std::string, AdapterSpec>> entries_;
};

const AdapterRegistry& BuiltinAdapters();

struct ResolvedAdapter {
  std::string name;
  std::vector<std::string> wrap_modules;  // canonical module FQNs, declared order
  std::vector<std::string> excluded_subtrees;
  std::vector<std::string> execution_order;  // unit FQNs; empty: pre-order
};

// True when `fqn` matches `pattern` component by component; `*` matches one component.
bool GlobMatch(std::string_view pattern, std::string_view fqn);

// Expands globs in pre-order over `modules` (first visits: canonical FQNs) and validates:
// non-empty strings, existing module FQNs, no module twice in fsdp_wrap_modules.
Result<ResolvedAdapter> ResolveAdapter(const AdapterSpec& spec,
                                       const std::vector<ModuleEntry>& modules);

}  // namespace shardscope
