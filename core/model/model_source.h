// Where a scenario's model comes from, and how to turn that into a ModelTree (model zoo).
//
// Contents:
//   ModelSource       built-in name | HF config.json path | exported tree path | inline HF config
//   ModelBuildOptions what the builders need from the mesh (tp/ep source layouts, dtypes)
//   LoadModel         resolves a ModelSource into a ModelTree, errors naming the file/field
//   BuiltinModelNames the names `model` accepts, sorted
//   ClassifyModelArgument  a command-line NAME|config.json|tree.json → ModelSource
#pragma once

#include <compare>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/dtype.h"
#include "core/model/saved_tensors.h"
#include "core/model/tree.h"
#include "core/util/status.h"

namespace shardscope {

struct ModelSource {
  enum class Kind { kBuiltin, kHfConfigFile, kModuleTreeFile, kHfInline };
  Kind kind = Kind::kBuiltin;
  // Built-in name, or a path already resolved against the scenario; for an inline config, how
  // errors name it ("job.json: model.hf").
  std::string name_or_path;
  nlohmann::json inline_config;  // kHfInline only
  // model.implementation: whose module code runs it (transformers for HF configs and exported
  // trees unless the scenario says torchtitan); sets what autograd saves (saved_tensors.h).
  Implementation implementation = Implementation::kTransformers;
};

struct ModelBuildOptions {
  // Source layouts (planning.md §1.1) are attached only when tp > 1 or ep > 1.
  int tp = 1;
  int ep = 1;
  // dtype of the parameters as created (the training master weights).
  DType param_dtype = DType::kFloat32;
  // Ordered field by field: a cache of loaded trees (model_cache.h) keys on the whole struct,
  // so a field added here is part of its key without another change.
  auto operator<=>(const ModelBuildOptions&) const = default;
};

Result<ModelTree> LoadModel(const ModelSource& source, const ModelBuildOptions& options);

std::vector<std::string> BuiltinModelNames();

// A built-in name when it is one; otherwise a path, read to tell a module tree
// ("format": "shardscope-tree/1") from an HF config.json. Errors name the argument.
Result<ModelSource> ClassifyModelArgument(const std::string& arg);

}  // namespace shardscope
