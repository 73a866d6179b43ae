#include "core/model/model_source.h"

#include <algorithm>
#include <filesystem>

#include "core/model/builtin_configs.h"
#include "core/model/hf_builder.h"
#include "core/model/tree_json.h"
#include "core/model/unknown_model.h"
#include "core/util/did_you_mean.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"

namespace shardscope {
namespace {

using nlohmann::json;

Result<json> ReadJsonFile(const std::string& path, const char* expected) {
  SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseJsonInput(text, path, expected);
}

}  // namespace

std::vector<std::string> BuiltinModelNames() {
  std::vector<std::string> names;
  for (const BuiltinConfig& c : BuiltinConfigs()) names.emplace_back(c.name);
  std::sort(names.begin(), names.end());
  return names;
}

Result<ModelTree> LoadModel(const ModelSource& source, const ModelBuildOptions& options) {
  switch (source.kind) {
    case ModelSource::Kind::kBuiltin: {
      for (const BuiltinConfig& c : BuiltinConfigs()) {
        if (c.name != source.name_or_path) continue;
        json config = json::parse(c.json, nullptr, false);
        if (config.is_discarded()) {
          return RuntimeError("built-in " + std::string(c.name) + ": embedded config is not JSON");
        }
        return BuildModelFromHfConfig(config, "built-in " + std::string(c.name), options);
      }
      return UnknownBuiltinModel(source.name_or_path);
    }
    case ModelSource::Kind::kHfConfigFile: {
      SS_ASSIGN_OR_RETURN(json config, ReadJsonFile(source.name_or_path, "a config.json"));
      return BuildModelFromHfConfig(config, source.name_or_path, options);
    }
    case ModelSource::Kind::kModuleTreeFile:
      return LoadModelTreeFile(source.name_or_path);
    case ModelSource::Kind::kHfInline:
      return BuildModelFromHfConfig(source.inline_config,
                                    source.name_or_path.empty() ? "model.hf" : source.name_or_path,
                                    options);
  }
  return InvalidInput("model: unknown source kind");
}

Result<ModelSource> ClassifyModelArgument(const std::string& arg) {
  ModelSource source;
  source.name_or_path = arg;
  const auto names = BuiltinModelNames();
  if (std::find(names.begin(), names.end(), arg) != names.end()) return source;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(arg, ec)) {
    return InvalidInput("model: '" + arg +
                        "' is neither a built-in model nor a readable file (a config.json or a "
                        "module tree)" +
                        DidYouMean(arg, names) + "; built-ins: " + BuiltinModelList());
  }
  SS_ASSIGN_OR_RETURN(json j, ReadJsonFile(arg, "a config.json or a shardscope-tree/1 file"));
  source.kind = j.is_object() && j.contains("format") ? ModelSource::Kind::kModuleTreeFile
                                                      : ModelSource::Kind::kHfConfigFile;
  return source;
}

}  // namespace shardscope
