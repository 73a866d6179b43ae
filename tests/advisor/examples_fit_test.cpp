// Every example fits its GPUs, except the does_not_fit_* ones, which must not fit and whose
// advice must fit; examples/README.md describes every example.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/util/file_io.h"
#include "sim/advisor/fit_advisor.h"
#include "tests/advisor/advisor_test_util.h"

namespace shardscope::sim {
namespace {

using testing_util::ExamplePath;
using testing_util::SimulateWith;

constexpr std::string_view kDoesNotFitPrefix = "does_not_fit_";

std::vector<std::string> ExampleNames() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(ExamplePath(""))) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ExamplesFitTest, EveryExampleFitsUnlessNamedDoesNotFit) {
  int does_not_fit = 0;
  for (const std::string& name : ExampleNames()) {
    SCOPED_TRACE(name);
    Result<Scenario> sc = LoadScenario(ExamplePath(name));
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    Result<Simulation> sim = SimulateScenario(*sc, {});
    ASSERT_TRUE(sim.ok()) << sim.status().message();
    const Summary& s = sim->summary;
    if (name.rfind(kDoesNotFitPrefix, 0) != 0) {
      EXPECT_TRUE(s.fits) << "peak reserved " << s.peak_memory_reserved_gib << " GiB > "
                          << s.usable_gib << " GiB usable; fix the example or rename it "
                          << kDoesNotFitPrefix << "...";
      continue;
    }
    ++does_not_fit;
    EXPECT_FALSE(s.fits) << "named does_not_fit_ but fits";
    Result<FitAdvice> advice = AdviseFit(*sc, *sim, {});
    ASSERT_TRUE(advice.ok()) << advice.status().message();
    ASSERT_FALSE(advice->suggestions.empty()) << "a does-not-fit example must show advice";
    Result<Simulation> fixed = SimulateWith(ExamplePath(name), advice->suggestions[0].sets);
    ASSERT_TRUE(fixed.ok()) << fixed.status().message();
    EXPECT_TRUE(fixed->summary.fits);
  }
  EXPECT_GE(does_not_fit, 1);
}

TEST(ExamplesFitTest, ReadmeDescribesEveryExample) {
  Result<std::string> readme = ReadFile(ExamplePath("README.md"));
  ASSERT_TRUE(readme.ok()) << readme.status().message();
  for (const std::string& name : ExampleNames()) {
    const size_t at = readme->find("| `" + name + "` |");
    EXPECT_NE(at, std::string::npos) << "examples/README.md has no table row for " << name;
    if (at == std::string::npos || name.rfind(kDoesNotFitPrefix, 0) != 0) continue;
    const std::string row = readme->substr(at, readme->find('\n', at) - at);
    EXPECT_NE(row.find("does not fit"), std::string::npos)
        << "the README row of " << name << " must say it does not fit";
  }
}

}  // namespace
}  // namespace shardscope::sim
