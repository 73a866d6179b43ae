// The files a scenario reads, named for the output checks of the commands that take one: an
// output must replace neither the scenario nor the model or calibration file it names.
#pragma once

#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/util/output_files.h"

namespace shardscope::cli {

inline std::vector<NamedPath> ScenarioFiles(const Scenario& sc, const std::string& scenario_path) {
  std::vector<NamedPath> files = {{"scenario", scenario_path}};
  if (sc.model.kind == ModelSource::Kind::kHfConfigFile ||
      sc.model.kind == ModelSource::Kind::kModuleTreeFile) {
    files.push_back({"scenario's model file", sc.model.name_or_path});
  }
  if (!sc.cluster.cost_model.empty()) {
    files.push_back({"scenario's cluster.cost_model", sc.cluster.cost_model});
  }
  return files;
}

}  // namespace shardscope::cli
