// A scenario of examples/ with --set flags applied, for tests (a failed load fails the test and
// gives an empty scenario).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config/scenario.h"

namespace shardscope::testing {

inline Scenario LoadExample(const std::string& name, const std::vector<std::string>& sets) {
  Result<Scenario> sc =
      LoadScenario(std::string(SHARDSCOPE_SOURCE_DIR) + "/examples/" + name, sets);
  EXPECT_TRUE(sc.ok()) << name << ": " << sc.status().message();
  return sc.ok() ? *sc : Scenario{};
}

}  // namespace shardscope::testing
