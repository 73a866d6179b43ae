// The model tree: modules, parameters, tie identities, source layouts (planning.md §1.1).
//
// Contents:
//   Placement, SourceLayout   per-parameter layout over the non-FSDP mesh dims (tp, ep)
//   Param                     one registered parameter entry
//   Module                    one module; children are indices, so a module registered under
//                             two parents (same `id`) is one node listed twice
//   ModelTree                 modules[0] is the root; config identity and model-level figures
//   EnumerateModules          pre-order like named_modules(remove_duplicate=False)
//   EnumerateParams           one entry per parameter identity, every alias FQN in pre-order
//   CheckTreeSize             rejects trees whose element counts could overflow int64
//
// Example:
//   ModelTree t;
//   int model = t.AddModule(0, MakeModule("model", "LlamaModel", /*gradient_checkpointing=*/true));
//   for (const ParamEntry& p : EnumerateParams(t)) Use(p.fqns.front(), p.param->shape);
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model/descriptor.h"
#include "core/model/dtype.h"
#include "core/util/status.h"

namespace shardscope {

// One placement of a source layout. Partial exists only so the planner can reject it.
struct Placement {
  enum class Kind { kReplicate, kShard, kPartial };
  Kind kind = Kind::kReplicate;
  int dim = 0;  // for kShard

  static Placement Replicate() { return {}; }
  static Placement Shard(int d) { return {Kind::kShard, d}; }
  bool operator==(const Placement&) const = default;
};
// "Replicate()", "Replicate", "Shard(1)", "Partial()" → Placement; `what` names the field.
Result<Placement> ParsePlacement(std::string_view text, std::string_view what);
std::string PlacementName(const Placement& p);  // "Replicate()" / "Shard(0)" / "Partial()"

// Mesh dim name ("tp", "ep") → placement. Dims not listed are Replicate.
using SourceLayout = std::map<std::string, Placement>;

struct Param {
  std::string name;            // registered name within its module ("weight")
  std::vector<int64_t> shape;  // global shape
  DType dtype = DType::kFloat32;
  bool requires_grad = true;
  std::string id;  // tie identity: entries sharing a non-empty id are one tensor
  std::optional<SourceLayout> layout;  // present when the tree carries a source layout
};

struct Module {
  std::string name;                     // registered name relative to the parent; "" for the root
  std::string class_name;               // e.g. LlamaDecoderLayer
  bool gradient_checkpointing = false;  // carries the attribute: marks a block container
  bool checkpoint_wrapper = false;      // its single child is the wrapped block
  std::string id;                       // identity for a module registered twice
  std::vector<int> children;            // indices into ModelTree::modules, declared order
  std::vector<Param> params;            // directly owned parameters, declared order
  std::optional<OpDescriptor> op;       // what it computes (model zoo)
};

// A module with a name and class and no children yet (designated initializers on Module trip
// -Wmissing-field-initializers).
inline Module MakeModule(std::string name, std::string class_name,
                         bool gradient_checkpointing = false) {
  Module m;
  m.name = std::move(name);
  m.class_name = std::move(class_name);
  m.gradient_checkpointing = gradient_checkpointing;
  return m;
}

struct ConfigIdentity {
  std::string model_type;    // HF model_type, e.g. "llama"
  std::string architecture;  // first entry of HF `architectures`, e.g. "LlamaForCausalLM"
};

struct ModelTree {
  ConfigIdentity identity;
  nlohmann::json config = nlohmann::json::object();  // model-level figures (HF config subset)
  std::vector<Module> modules{Module{}};             // [0] is the root

  Module& root() { return modules[0]; }
  const Module& root() const { return modules[0]; }
  // Appends `m` as the last child of `parent` and returns its index.
  int AddModule(int parent, Module m);
  // Registers an existing module `child` under `parent` again (shared submodule).
  void AddExistingChild(int parent, int child);
};

// One visit of a module in pre-order. A module registered under two parents is visited twice;
// `first_visit` is true on the first, whose FQN is the module's canonical FQN.
struct ModuleEntry {
  std::string fqn;
  int module = 0;   // index into ModelTree::modules
  int depth = 0;    // root 0
  int parent = -1;  // index into the returned vector, -1 for the root
  bool first_visit = true;
};
std::vector<ModuleEntry> EnumerateModules(const ModelTree& tree);

// One parameter tensor with all its names (aliases) in pre-order.
struct ParamEntry {
  std::vector<std::string> fqns;      // fqns[0] is the canonical FQN
  const Param* param = nullptr;       // the first entry (shape, dtype, layout)
  std::vector<const Param*> entries;  // one per alias, same order as fqns
};
// Ordered by first occurrence. Identity: a non-empty `Param::id`, else the (module, index)
// slot, so params of a shared module are one tensor under each of its names.
std::vector<ParamEntry> EnumerateParams(const ModelTree& tree);
// The same over an enumeration the caller already has (must be EnumerateModules(tree)), so a
// caller that needs both walks the tree once.
std::vector<ParamEntry> EnumerateParams(const ModelTree& tree,
                                        const std::vector<ModuleEntry>& modules);

// Product of the dims (1 for a scalar).
int64_t NumElements(const std::vector<int64_t>& shape);

// InvalidInput (prefixed with `source`) when a tensor has more than 2^48 elements or all
// tensors together more than 2^50: bounds far above any real model that keep every count and
// byte total inside int64.
Status CheckTreeSize(const ModelTree& tree, const std::string& source);

}  // namespace shardscope
