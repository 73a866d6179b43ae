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
  for (NamedPath& f : ScenarioInputFiles(sc)) files.push_back({named + "'s " + f.what, f.path});
  return files;
}

}  // namespace shardscope::cli
