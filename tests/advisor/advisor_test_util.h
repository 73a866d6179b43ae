// Helpers shared by the advisor tests: example paths and re-running a suggestion.
#pragma once

#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "sim/engine/simulator.h"

namespace shardscope::testing_util {

inline std::string ExamplePath(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/examples/" + name;
}

// What the user gets by passing `sets` as --set flags to `simulate FILE`.
inline Result<sim::Simulation> SimulateWith(const std::string& path,
                                            const std::vector<std::string>& sets) {
  SS_ASSIGN_OR_RETURN(Scenario sc, LoadScenario(path, sets));
  return sim::SimulateScenario(sc, {});
}

}  // namespace shardscope::testing_util
