#include "core/model/tree_json.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/limits.h"

namespace shardscope {
namespace {

using nlohmann::json;

// Deep JSON would otherwise recurse without bound (fuzzed input); real trees nest < 20 deep.
constexpr int kMaxDepth = 200;
// Larger tensors are certainly a mistake, and the bound keeps element counts far from
// int64 overflow when they are summed.
constexpr int64_t kMaxElements = int64_t{1} << 48;

// No model dimension comes near 2^32 (vocabularies and windows are below 2^25); the bound
// keeps CeilDiv and the op-cost products of the dimensions far from int64 overflow.
constexpr int64_t kMaxOpDim = int64_t{1} << 32;

// The descriptor keys that are 0/1 switches (descriptor.h), not sizes.
bool IsFlagDim(std::string_view key) {
  return key == "bias" || key == "shared_input" || key == "gated" || key == "causal" ||
         key == "sinks";
}

std::string JoinKeys(const std::vector<std::string_view>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ", ";
    out += keys[i];
  }
  return out;
}

Status CheckKeys(const json& obj, const std::vector<std::string_view>& allowed,
                 const std::string& path) {
  for (const auto& [key, value] : obj.items()) {
    (void)value;
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return InvalidInput(path + ": unknown key '" + key +
                          "' (expected one of: " + JoinKeys(allowed) + ")");
    }
  }
  return Status::Ok();
}

Result<std::string> GetString(const json& obj, const char* key, const std::string& path,
                              bool required, std::string fallback = "") {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) return InvalidInput(path + ": missing required key '" + key + "'");
    return fallback;
  }
  if (!it->is_string()) return InvalidInput(path + "." + key + ": expected a string");
  return it->get<std::string>();
}

Result<bool> GetBool(const json& obj, const char* key, const std::string& path, bool fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (!it->is_boolean()) return InvalidInput(path + "." + key + ": expected true or false");
  return it->get<bool>();
}

// A JSON integer that fits int64 and is >= 0.
bool NonNegativeInt(const json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < 0) return false;
    *out = i;
    return true;
  }
  return false;
}

Result<std::vector<int64_t>> ParseShape(const json& v, const std::string& path) {
  const std::string expected = path + ": expected an array of non-negative integers";
  if (!v.is_array()) return InvalidInput(expected);
  std::vector<int64_t> shape;
  int64_t elements = 1;
  for (const json& d : v) {
    int64_t n = 0;
    if (!NonNegativeInt(d, &n)) return InvalidInput(expected);
    shape.push_back(n);
    if (n != 0 && elements > kMaxElements / n) {
      return InvalidInput(path + ": tensor has more than 2^48 elements");
    }
    elements *= n;
  }
  return shape;
}

// Facts a tied parameter's entries must agree on.
struct TieFacts {
  std::vector<int64_t> shape;
  DType dtype;
  bool requires_grad;
  std::string path;
};

struct ParseState {
  ModelTree tree;
  std::string source;
  std::unordered_map<std::string, int> module_by_id;  // module id → node index
  std::set<std::string> open_ids;                     // ids of modules being parsed (ancestors)
  std::unordered_map<std::string, TieFacts> param_by_id;
};

Result<Param> ParseParam(const json& j, const std::string& path, ParseState& st) {
  if (!j.is_object()) return InvalidInput(path + ": expected an object");
  SS_RETURN_IF_ERROR(
      CheckKeys(j, {"name", "shape", "dtype", "requires_grad", "id", "layout"}, path));
  Param p;
  SS_ASSIGN_OR_RETURN(p.name, GetString(j, "name", path, true));
  if (p.name.empty() || p.name.find('.') != std::string::npos) {
    return InvalidInput(path + ".name: expected a non-empty name without '.', got '" + p.name +
                        "'");
  }
  auto shape_it = j.find("shape");
  if (shape_it == j.end()) return InvalidInput(path + ": missing required key 'shape'");
  SS_ASSIGN_OR_RETURN(p.shape, ParseShape(*shape_it, path + ".shape"));
  SS_ASSIGN_OR_RETURN(std::string dtype, GetString(j, "dtype", path, true));
  SS_ASSIGN_OR_RETURN(p.dtype, ParseDType(dtype, path + ".dtype"));
  SS_ASSIGN_OR_RETURN(p.requires_grad, GetBool(j, "requires_grad", path, true));
  SS_ASSIGN_OR_RETURN(p.id, GetString(j, "id", path, false));
  if (auto it = j.find("layout"); it != j.end()) {
    if (!it->is_object()) {
      return InvalidInput(path + ".layout: expected an object of mesh dim → placement");
    }
    SourceLayout layout;
    for (const auto& [dim, placement] : it->items()) {
      const std::string field = path + ".layout." + dim;
      if (dim.empty()) return InvalidInput(path + ".layout: empty mesh dim name");
      if (!placement.is_string()) {
        return InvalidInput(field + ": expected a placement string such as \"Shard(0)\"");
      }
      SS_ASSIGN_OR_RETURN(Placement pl, ParsePlacement(placement.get<std::string>(), field));
      // Read on its own (`model` summarises a tree without planning it), a shard of a
      // dimension the tensor lacks is still the file's error.
      if (pl.kind == Placement::Kind::kShard && pl.dim >= static_cast<int>(p.shape.size())) {
        return InvalidInput(field + ": Shard(" + std::to_string(pl.dim) +
                            ") but the parameter has " + std::to_string(p.shape.size()) + " dims");
      }
      layout[dim] = pl;
    }
    p.layout = std::move(layout);
  }
  if (!p.id.empty()) {
    auto [it, inserted] =
        st.param_by_id.emplace(p.id, TieFacts{p.shape, p.dtype, p.requires_grad, path});
    if (!inserted) {
      const TieFacts& first = it->second;
      if (first.shape != p.shape || first.dtype != p.dtype ||
          first.requires_grad != p.requires_grad) {
        return InvalidInput(path + ": tied parameter id '" + p.id +
                            "' differs in shape, dtype or requires_grad from " + first.path);
      }
    }
  }
  return p;
}

// Copies module `src` (and its subtree) under `parent` as `name`, tying every parameter to the
// original's: the same tensors registered under a second name. Each copy can double the tree,
// so the module limit is checked as it grows.
Status CopyTied(ParseState& st, int parent, int src, const std::string& name) {
  ModelTree& tree = st.tree;
  SS_RETURN_IF_ERROR(CheckLimit(Limit::kModules, static_cast<int64_t>(tree.modules.size()) + 1,
                                st.source + ": module tree"));
  Module copy = tree.modules[static_cast<size_t>(src)];
  copy.name = name;
  copy.children.clear();
  copy.id.clear();  // a distinct node; its tie to the original is carried by the param ids
  for (size_t i = 0; i < copy.params.size(); ++i) {
    Param& original = tree.modules[static_cast<size_t>(src)].params[i];
    if (original.id.empty()) original.id = "~m" + std::to_string(src) + "." + original.name;
    copy.params[i].id = original.id;
  }
  const int index = tree.AddModule(parent, std::move(copy));
  const std::vector<int> children = tree.modules[static_cast<size_t>(src)].children;
  for (int c : children) {
    SS_RETURN_IF_ERROR(CopyTied(st, index, c, tree.modules[static_cast<size_t>(c)].name));
  }
  return Status::Ok();
}

// Modules and parameter entries as EnumerateModules / EnumerateParams visit them: a module
// registered under two parents counts twice, with its subtree, so a few kilobytes of shared
// modules can stand for 2^60 visits. Saturates at 2^62; children form a DAG (no cycles).
struct Visits {
  int64_t modules = 0;
  int64_t params = 0;
};
Visits CountVisits(const ModelTree& tree, int index, std::vector<std::optional<Visits>>& memo) {
  std::optional<Visits>& slot = memo[static_cast<size_t>(index)];
  if (slot) return *slot;
  constexpr int64_t kCap = int64_t{1} << 62;
  const Module& m = tree.modules[static_cast<size_t>(index)];
  Visits v{1, static_cast<int64_t>(m.params.size())};
  for (int c : m.children) {
    const Visits cv = CountVisits(tree, c, memo);
    v.modules = std::min(kCap, v.modules + cv.modules);
    v.params = std::min(kCap, v.params + cv.params);
  }
  slot = v;
  return v;
}

Status ParseModuleInto(const json& j, const std::string& path, int index, int depth,
                       ParseState& st);

// Parses child entry `j` of `parent`.
Status ParseChild(const json& j, const std::string& path, int parent, int depth, ParseState& st) {
  if (!j.is_object()) return InvalidInput(path + ": expected a module object");
  SS_ASSIGN_OR_RETURN(std::string id, GetString(j, "id", path, false));
  if (!id.empty()) {
    auto it = st.module_by_id.find(id);
    if (it != st.module_by_id.end()) {
      SS_RETURN_IF_ERROR(
          CheckKeys(j, {"name", "class", "id"}, path + " (repeat of module id '" + id + "')"));
      if (st.open_ids.count(id)) {
        return InvalidInput(path + ": module id '" + id + "' repeats one of its own ancestors");
      }
      SS_ASSIGN_OR_RETURN(std::string name, GetString(j, "name", path, true));
      const Module& original = st.tree.modules[static_cast<size_t>(it->second)];
      SS_ASSIGN_OR_RETURN(std::string cls, GetString(j, "class", path, false, original.class_name));
      if (cls != original.class_name) {
        return InvalidInput(path + ".class: module id '" + id + "' was first '" +
                            original.class_name + "', here '" + cls + "'");
      }
      if (name == original.name) {
        st.tree.AddExistingChild(parent, it->second);
        return Status::Ok();
      }
      return CopyTied(st, parent, it->second, name);
    }
  }
  SS_RETURN_IF_ERROR(CheckLimit(Limit::kModules, static_cast<int64_t>(st.tree.modules.size()) + 1,
                                st.source + ": module tree"));
  const int index = st.tree.AddModule(parent, Module{});
  if (!id.empty()) {
    st.module_by_id[id] = index;
    st.open_ids.insert(id);
  }
  SS_RETURN_IF_ERROR(ParseModuleInto(j, path, index, depth, st));
  st.open_ids.erase(id);
  return Status::Ok();
}

Status ParseModuleInto(const json& j, const std::string& path, int index, int depth,
                       ParseState& st) {
  if (depth > kMaxDepth) return InvalidInput(path + ": modules nested deeper than 200 levels");
  if (!j.is_object()) return InvalidInput(path + ": expected a module object");
  SS_RETURN_IF_ERROR(CheckKeys(j,
                               {"name", "class", "children", "params", "gradient_checkpointing",
                                "checkpoint_wrapper", "op", "id"},
                               path));
  Module m;
  SS_ASSIGN_OR_RETURN(m.name, GetString(j, "name", path, true));
  if (depth == 0 && !m.name.empty()) {
    return InvalidInput(path + ".name: the root's name must be \"\", got '" + m.name + "'");
  }
  if (depth > 0 && (m.name.empty() || m.name.find('.') != std::string::npos)) {
    return InvalidInput(path + ".name: expected a non-empty name without '.', got '" + m.name +
                        "'");
  }
  SS_ASSIGN_OR_RETURN(m.class_name, GetString(j, "class", path, true));
  if (m.class_name.empty()) return InvalidInput(path + ".class: expected a non-empty class name");
  SS_ASSIGN_OR_RETURN(m.gradient_checkpointing, GetBool(j, "gradient_checkpointing", path, false));
  SS_ASSIGN_OR_RETURN(m.checkpoint_wrapper, GetBool(j, "checkpoint_wrapper", path, false));
  SS_ASSIGN_OR_RETURN(m.id, GetString(j, "id", path, false));
  if (auto it = j.find("op"); it != j.end()) {
    SS_ASSIGN_OR_RETURN(OpDescriptor op, ParseOpDescriptor(*it, path + ".op"));
    m.op = std::move(op);
  }
  std::set<std::string> names;  // params and children share one namespace, as in nn.Module
  if (auto it = j.find("params"); it != j.end()) {
    if (!it->is_array()) return InvalidInput(path + ".params: expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string ppath = path + ".params[" + std::to_string(i) + "]";
      SS_ASSIGN_OR_RETURN(Param p, ParseParam((*it)[i], ppath, st));
      if (!names.insert(p.name).second) {
        return InvalidInput(ppath + ".name: duplicate name '" + p.name + "' in " +
                            (path == "root" ? std::string("the root") : path));
      }
      m.params.push_back(std::move(p));
    }
  }
  st.tree.modules[static_cast<size_t>(index)] = std::move(m);
  size_t child_count = 0;
  if (auto it = j.find("children"); it != j.end()) {
    if (!it->is_array()) return InvalidInput(path + ".children: expected an array of modules");
    child_count = it->size();
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string cpath = path + ".children[" + std::to_string(i) + "]";
      SS_RETURN_IF_ERROR(ParseChild((*it)[i], cpath, index, depth + 1, st));
      const Module& parent = st.tree.modules[static_cast<size_t>(index)];
      const std::string& child_name =
          st.tree.modules[static_cast<size_t>(parent.children.back())].name;
      if (!names.insert(child_name).second) {
        return InvalidInput(cpath + ".name: duplicate name '" + child_name + "' in " +
                            (path == "root" ? std::string("the root") : path));
      }
    }
  }
  if (st.tree.modules[static_cast<size_t>(index)].checkpoint_wrapper && child_count != 1) {
    return InvalidInput(path +
                        ": a checkpoint_wrapper module must have exactly one child (the "
                        "wrapped block), found " +
                        std::to_string(child_count));
  }
  return Status::Ok();
}

}  // namespace

Result<OpDescriptor> ParseOpDescriptor(const json& j, const std::string& path) {
  if (!j.is_object()) return InvalidInput(path + ": expected an object with a 'kind'");
  SS_ASSIGN_OR_RETURN(std::string kind_name, GetString(j, "kind", path, true));
  OpDescriptor op;
  SS_ASSIGN_OR_RETURN(op.kind, ParseOpKind(kind_name, path + ".kind"));
  std::vector<std::string_view> allowed = {"kind", "variant"};
  const auto& dims = OpDimKeys(op.kind);
  allowed.insert(allowed.end(), dims.begin(), dims.end());
  SS_RETURN_IF_ERROR(CheckKeys(j, allowed, path));
  SS_ASSIGN_OR_RETURN(op.variant, GetString(j, "variant", path, false));
  const auto& variants = OpVariants(op.kind);
  if (!op.variant.empty() &&
      std::find(variants.begin(), variants.end(), op.variant) == variants.end()) {
    return InvalidInput(path + ".variant: unknown variant '" + op.variant + "' for kind " +
                        kind_name +
                        (variants.empty() ? std::string(" (it takes none)")
                                          : " (expected one of: " + JoinKeys(variants) + ")"));
  }
  for (std::string_view key : dims) {
    auto it = j.find(std::string(key));
    if (it == j.end()) continue;
    int64_t n = 0;
    const bool flag = IsFlagDim(key);
    const int64_t limit = flag ? 1 : kMaxOpDim;
    if (!NonNegativeInt(*it, &n) || n > limit) {
      return InvalidInput(path + "." + std::string(key) + " = " + it->dump() + ": expected " +
                          (flag ? std::string("0 or 1") : "an integer from 0 to 2^32"));
    }
    op.dims[std::string(key)] = n;
  }
  return op;
}

json OpDescriptorToJson(const OpDescriptor& op) {
  json j = json::object();
  j["kind"] = std::string(OpKindName(op.kind));
  if (!op.variant.empty()) j["variant"] = op.variant;
  for (const auto& [key, value] : op.dims) j[key] = value;
  return j;
}

Result<ModelTree> ParseModelTree(const json& j, const std::string& source_name) {
  const std::string& src = source_name;
  if (!j.is_object()) return InvalidInput(src + ": expected a JSON object (a module tree)");
  SS_RETURN_IF_ERROR(CheckKeys(j, {"format", "config", "root"}, src));
  SS_ASSIGN_OR_RETURN(std::string format, GetString(j, "format", src, true));
  if (format != kTreeFormat) {
    return InvalidInput(src + ": format: expected \"" + std::string(kTreeFormat) + "\", got \"" +
                        format + "\"");
  }
  ParseState st;
  st.source = src;
  if (auto it = j.find("config"); it != j.end()) {
    if (!it->is_object()) return InvalidInput(src + ": config: expected an object");
    st.tree.config = *it;
    SS_ASSIGN_OR_RETURN(st.tree.identity.model_type,
                        GetString(*it, "model_type", src + ": config", false));
    if (auto arch = it->find("architectures"); arch != it->end()) {
      if (!arch->is_array() || (!arch->empty() && !(*arch)[0].is_string())) {
        return InvalidInput(src + ": config.architectures: expected an array of strings");
      }
      if (!arch->empty()) st.tree.identity.architecture = (*arch)[0].get<std::string>();
    }
  }
  auto root = j.find("root");
  if (root == j.end()) return InvalidInput(src + ": missing required key 'root'");
  // The root's id is open for its whole subtree, like any module's: a descendant repeating it
  // would make the tree a cycle.
  if (root->is_object()) {
    SS_ASSIGN_OR_RETURN(std::string root_id, GetString(*root, "id", src + ": root", false));
    if (!root_id.empty()) {
      st.module_by_id[root_id] = 0;
      st.open_ids.insert(root_id);
    }
  }
  SS_RETURN_IF_ERROR(ParseModuleInto(*root, src + ": root", 0, 0, st));
  std::vector<std::optional<Visits>> memo(st.tree.modules.size());
  const Visits visits = CountVisits(st.tree, 0, memo);
  SS_RETURN_IF_ERROR(CheckLimit(Limit::kModules, visits.modules,
                                src + ": module tree (shared modules counted per registration)"));
  SS_RETURN_IF_ERROR(CheckLimit(Limit::kParams, visits.params,
                                src + ": module tree (shared modules counted per registration)"));
  SS_RETURN_IF_ERROR(CheckTreeSize(st.tree, src));
  return std::move(st.tree);
}

Result<ModelTree> LoadModelTreeFile(const std::string& path) {
  SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  SS_ASSIGN_OR_RETURN(json j, ParseJsonInput(text, path, "a shardscope-tree/1 module tree"));
  return ParseModelTree(j, path);
}

namespace {

json ParamToJson(const Param& p) {
  json j = json::object();
  j["name"] = p.name;
  j["shape"] = p.shape;
  j["dtype"] = std::string(DTypeName(p.dtype));
  if (!p.requires_grad) j["requires_grad"] = false;
  if (!p.id.empty()) j["id"] = p.id;
  if (p.layout) {
    json layout = json::object();
    for (const auto& [dim, placement] : *p.layout) layout[dim] = PlacementName(placement);
    j["layout"] = std::move(layout);
  }
  return j;
}

}  // namespace

json ModelTreeToJson(const ModelTree& tree) {
  // Modules reached more than once need an id so the repeat can name them.
  std::vector<int> visits(tree.modules.size(), 0);
  for (const ModuleEntry& e : EnumerateModules(tree)) ++visits[static_cast<size_t>(e.module)];
  std::vector<std::string> ids(tree.modules.size());
  std::set<std::string> used;
  for (const Module& m : tree.modules) {
    if (!m.id.empty()) used.insert(m.id);
  }
  for (size_t i = 0; i < tree.modules.size(); ++i) {
    ids[i] = tree.modules[i].id;
    if (ids[i].empty() && visits[i] > 1) {
      std::string candidate = "module" + std::to_string(i);
      while (used.count(candidate)) candidate += "_";
      used.insert(candidate);
      ids[i] = candidate;
    }
  }
  std::vector<char> written(tree.modules.size(), 0);
  // Iterative post-order build: children JSON first, then the parent object.
  struct Frame {
    explicit Frame(int m) : module(m) {}
    int module;
    size_t next_child = 0;
    json children = json::array();
  };
  auto head = [&](int index) {
    const Module& m = tree.modules[static_cast<size_t>(index)];
    json j = json::object();
    j["name"] = m.name;
    j["class"] = m.class_name;
    if (!ids[static_cast<size_t>(index)].empty()) j["id"] = ids[static_cast<size_t>(index)];
    return j;
  };
  auto body = [&](int index, json j, json children) {
    const Module& m = tree.modules[static_cast<size_t>(index)];
    if (m.gradient_checkpointing) j["gradient_checkpointing"] = true;
    if (m.checkpoint_wrapper) j["checkpoint_wrapper"] = true;
    if (m.op) j["op"] = OpDescriptorToJson(*m.op);
    if (!m.params.empty()) {
      json params = json::array();
      for (const Param& p : m.params) params.push_back(ParamToJson(p));
      j["params"] = std::move(params);
    }
    if (!children.empty()) j["children"] = std::move(children);
    return j;
  };
  std::vector<Frame> stack;
  stack.emplace_back(0);
  written[0] = 1;
  json root;
  while (!stack.empty()) {
    Frame& f = stack.back();
    const Module& m = tree.modules[static_cast<size_t>(f.module)];
    if (f.next_child < m.children.size()) {
      const int c = m.children[f.next_child++];
      if (written[static_cast<size_t>(c)]) {
        f.children.push_back(head(c));
      } else {
        written[static_cast<size_t>(c)] = 1;
        stack.emplace_back(c);
      }
      continue;
    }
    json done = body(f.module, head(f.module), std::move(f.children));
    stack.pop_back();
    if (stack.empty()) {
      root = std::move(done);
    } else {
      stack.back().children.push_back(std::move(done));
    }
  }
  json out = json::object();
  out["format"] = kTreeFormat;
  json config = tree.config.is_object() ? tree.config : json::object();
  if (!tree.identity.model_type.empty()) config["model_type"] = tree.identity.model_type;
  if (!tree.identity.architecture.empty() && !config.contains("architectures")) {
    config["architectures"] = json::array({tree.identity.architecture});
  }
  out["config"] = std::move(config);
  out["root"] = std::move(root);
  return out;
}

}  // namespace shardscope
