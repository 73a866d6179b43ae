// The scenario of a command that takes one, and the files it reads, named for the output
// checks: an output must replace neither the scenario nor the model or calibration file it names.
#pragma once

#include <fmt/core.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/util/output_files.h"
#include "sim/engine/simulator.h"

namespace shardscope::cli {

// The help of a command's optional scenario argument.
inline constexpr const char* kScenarioOrDefaultHelp =
    "scenario JSON file (default: the built-in Llama 3 8B job)";

// The scenario file at `path` with `sets` applied or, where `path` is "", the built-in default
// (sim::DefaultScenarioDocument), saying on stdout that it is `doing` ("running") that.
inline Result<Scenario> LoadScenarioOrDefault(const std::string& path,
                                              const std::vector<std::string>& sets,
                                              std::string_view doing) {
  if (!path.empty()) return LoadScenario(path, sets);
  fmt::print("No scenario given: {} {}.\n", doing, sim::kDefaultScenarioWhat);
  const sim::ScenarioDocument fallback = sim::DefaultScenarioDocument();
  return ParseScenario(fallback.doc, fallback.source, fallback.base_dir, sets);
}

// `scenario_path` is "" for a scenario embedded in another file (a trace's, a run table's);
// `named` names the scenario in messages.
inline std::vector<NamedPath> ScenarioFiles(const Scenario& sc, const std::string& scenario_path,
                                            const std::string& named = "scenario") {
  std::vector<NamedPath> files = {{named, scenario_path}};
  for (NamedPath& f : ScenarioInputFiles(sc)) files.push_back({named + "'s " + f.what, f.path});
  return files;
}

}  // namespace shardscope::cli
