// The files a scenario reads, named for the output checks of the commands that take one: an
// output must replace neither the scenario nor the model or calibration file it names.
#pragma once

#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/util/output_files.h"

namespace shardscope::cli {

// `scenario_path` is "" for a scenario embedded in another file (a trace's, a run table's);
// `named` names the scenario in messages.
inline std::vector<NamedPath> ScenarioFiles(const Scenario& sc, const std::string& scenario_path,
                                            const std::string& named = "scenario") {
  std::vector<NamedPath> files = {{named, scenario_path}};
  if (sc.model.kind == ModelSource::Kind::kHfConfigFile ||
      sc.model.kind == ModelSource::Kind::kModuleTreeFile) {
    files.push_back({named + "'s model file", sc.model.name_or_path});
  }
  if (!sc.cluster.cost_model.empty()) {
    files.push_back({named + "'s cluster.cost_model", sc.cluster.cost_model});
  }
  return files;
}

}  // namespace shardscope::cli
