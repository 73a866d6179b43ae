// The module tree file (formats.md §1a): JSON <-> ModelTree.
//
// Contents:
//   kTreeFormat          the `format` tag this version writes and accepts
//   ParseModelTree       JSON value → ModelTree, every error naming the source and JSON path
//   LoadModelTreeFile    reads a file (.json or .json.gz) and parses it
//   ModelTreeToJson      ModelTree → JSON (round-trips through ParseModelTree)
//   OpDescriptorToJson / ParseOpDescriptor   the `op` object of a module
//
// Example:
//   SS_ASSIGN_OR_RETURN(ModelTree tree, LoadModelTreeFile("llama.tree.json"));
//   std::string text = ModelTreeToJson(tree).dump(1);
//
// Shared modules: a module entry whose `id` repeats an earlier module's `id` is that module
// registered again. The repeat carries only `name`, `class` (must match) and `id`; under the
// same name it becomes the same node (ModelTree::AddExistingChild), under another name a copy
// whose parameters are tied to the original's (the tree keeps one name per node).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/model/descriptor.h"
#include "core/model/tree.h"
#include "core/util/status.h"

namespace shardscope {

inline constexpr const char* kTreeFormat = "shardscope-tree/1";

// Parses `json`; `source_name` (usually the file name) prefixes every error message.
// Rejects unknown keys, duplicate sibling names, bad shapes/dtypes/placements, a
// checkpoint wrapper without exactly one child, and tied parameters that disagree in
// shape, dtype or requires_grad.
Result<ModelTree> ParseModelTree(const nlohmann::json& json, const std::string& source_name);

// Reads and parses `path`; JSON syntax errors name the file and byte offset.
Result<ModelTree> LoadModelTreeFile(const std::string& path);

// The tree in formats.md §1a form. Modules reached twice are written once in full and then as
// references (`name`, `class`, `id`); ids are generated for them when the tree has none.
nlohmann::json ModelTreeToJson(const ModelTree& tree);

// {"kind": "linear", "variant": "...", "<dim>": n, ...}; `variant` is omitted when empty.
nlohmann::json OpDescriptorToJson(const OpDescriptor& op);
// Parses the object above; `path` is the error prefix (e.g. "tree.json: root.children[0].op").
// Dimension keys must belong to the kind (descriptor.h's table) and be non-negative integers.
Result<OpDescriptor> ParseOpDescriptor(const nlohmann::json& json, const std::string& path);

}  // namespace shardscope
