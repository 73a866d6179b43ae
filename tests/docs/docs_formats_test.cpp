// docs/scenario.md and docs/summary.md name every scenario key and summary field the code
// has; the README links to docs/, not outside the repository.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "core/config/scenario_schema.h"
#include "core/util/file_io.h"
#include "sim/advisor/fit_advisor.h"
#include "sim/cost/calibration.h"
#include "sim/engine/simulator.h"
#include "sim/hardware/hardware.h"

namespace shardscope {
namespace {

std::string SourcePath(const std::string& rel) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/" + rel;
}

std::string MustRead(const std::string& rel) {
  Result<std::string> text = ReadFile(SourcePath(rel));
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? *text : std::string();
}

bool Mentions(const std::string& doc, const std::string& name) {
  return doc.find("`" + name + "`") != std::string::npos;
}

// A nested field: `name…` or `….name` in code, e.g. `cause.persistent` or `suggestions[].set`.
bool MentionsField(const std::string& doc, const std::string& name) {
  return doc.find("`" + name) != std::string::npos ||
         doc.find("." + name + "`") != std::string::npos;
}

TEST(DocsFormatsTest, ScenarioDocListsEveryKey) {
  const std::string doc = MustRead("docs/scenario.md");
  for (const SchemaKey& key : ScenarioSchema()) {
    if (key.type == KeyType::kSection) continue;
    EXPECT_TRUE(Mentions(doc, key.path)) << "docs/scenario.md: scenario key `" << key.path
                                         << "` is not documented; add a row to the Keys table";
  }
}

TEST(DocsFormatsTest, ScenarioDocListsEveryGpu) {
  const std::string doc = MustRead("docs/scenario.md");
  const size_t row = doc.find("\n| `cluster.gpu` |");
  ASSERT_NE(row, std::string::npos) << "docs/scenario.md: no `cluster.gpu` row";
  const std::string line = doc.substr(row + 1, doc.find('\n', row + 1) - row - 1);
  for (const std::string& gpu : CatalogGpuNames()) {
    EXPECT_TRUE(Mentions(line, gpu)) << "docs/scenario.md: the `cluster.gpu` row does not list `"
                                     << gpu << "`, which the hardware catalog has";
  }
}

TEST(DocsFormatsTest, CalibrationDocListsEveryKey) {
  const std::string doc = MustRead("docs/calibration.md");
  for (const std::string& key : CalibrationKeys()) {
    EXPECT_TRUE(Mentions(doc, key)) << "docs/calibration.md: calibration key `" << key
                                    << "` is not documented; add it to 'The calibration file'";
  }
}

TEST(DocsFormatsTest, ScenarioDocListsNoKeyTheSchemaLacks) {
  const std::string doc = MustRead("docs/scenario.md");
  // Rows of the Keys table: "| `section.key` | default | meaning |".
  const std::regex row(R"(\n\| `([a-z_]+(\.[a-z_]+)+)` \|)");
  int rows = 0;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it) {
    ++rows;
    const std::string path = (*it)[1];
    EXPECT_NE(FindSchemaKey(path), nullptr)
        << "docs/scenario.md documents `" << path << "`, which the scenario schema lacks";
  }
  EXPECT_GT(rows, 30);
}

TEST(DocsFormatsTest, SummaryDocListsEveryField) {
  const std::string doc = MustRead("docs/summary.md");
  Result<Scenario> sc = LoadScenario(SourcePath("examples/does_not_fit_qwen2.5_7b_a100_40g.json"));
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  sim::SimulateOptions peaks_only;
  peaks_only.keep_memory_samples = false;
  Result<sim::Simulation> s = sim::SimulateScenario(*sc, peaks_only);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const nlohmann::json summary = sim::SummaryToJson(s->summary);
  for (const auto& [key, value] : summary.items()) {
    EXPECT_TRUE(Mentions(doc, key)) << "docs/summary.md: summary field `" << key
                                    << "` is not documented; add a row to its table";
  }
  Result<sim::FitAdvice> advice = sim::AdviseFit(*sc, *s, {});
  ASSERT_TRUE(advice.ok()) << advice.status().message();
  ASSERT_FALSE(advice->suggestions.empty());
  const nlohmann::json j = sim::FitAdviceToJson(*advice);
  for (const auto& [key, value] : j.items()) {
    EXPECT_TRUE(MentionsField(doc, key))
        << "docs/summary.md: advice field `" << key << "` is not documented";
  }
  for (const auto& [key, value] : j["cause"].items()) {
    EXPECT_TRUE(MentionsField(doc, "cause." + key) || MentionsField(doc, key))
        << "docs/summary.md: advice.cause field `" << key << "` is not documented";
  }
  for (const auto& [key, value] : j["suggestions"][0].items()) {
    EXPECT_TRUE(MentionsField(doc, "suggestions[]." + key) || MentionsField(doc, key))
        << "docs/summary.md: advice.suggestions[] field `" << key << "` is not documented";
  }
}

TEST(DocsFormatsTest, ReadmeLinksStayInTheRepository) {
  const std::string readme = MustRead("README.md");
  EXPECT_EQ(readme.find("../shared/spec"), std::string::npos)
      << "README.md sends readers to ../shared/spec, which a clone lacks; link docs/ instead";
  const std::regex link(R"(\]\(((docs|examples)/[^)#]+))");
  int links = 0;
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), link);
       it != std::sregex_iterator(); ++it) {
    ++links;
    EXPECT_TRUE(std::filesystem::exists(SourcePath((*it)[1])))
        << "README.md links " << (*it)[1] << ", which does not exist";
  }
  EXPECT_GE(links, 5);
}

}  // namespace
}  // namespace shardscope
