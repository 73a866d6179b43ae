// libFuzzer target: arbitrary bytes as a scenario file with `--set` overrides, through
// validation, the model it names and the planner to the plan JSON. Every input must give a
// value or a Status (with a message), never a crash, a sanitizer report or an exception, and a
// scenario that validated must validate again from its resolved JSON, unchanged, and be UTF-8
// text throughout.
//
// Input: the lines before the first line that starts with `{` are overrides, one `path=value`
// each (as `--set` takes them); the rest is the scenario JSON. Relative model paths resolve
// against a folder that does not exist, so only built-in models and absolute paths load.
//
//   cmake -S . -B build-fuzz -DSHARDSCOPE_BUILD_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
//       -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined"
//   cmake --build build-fuzz --target scenario_fuzz && build-fuzz/tests/fuzz/scenario_fuzz \
//       -max_total_time=120 tests/fuzz/corpus/scenario
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/plan/plan_json.h"
#include "core/plan/planner.h"
#include "core/util/json_guard.h"

using namespace shardscope;

namespace {

void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "scenario_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void RequireMessage(const Status& s, const std::string& input) {
  if (s.message().empty()) Fail("an error without a message", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  size_t pos = 0;
  while (pos < text.size() && text[pos] != '{') {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) overrides.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  const std::string_view body =
      pos < text.size() ? std::string_view(text).substr(pos) : std::string_view("{}");
  if (!CheckJsonText(body, "fuzz.json").ok()) return 0;
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;

  const std::string base_dir = "/nonexistent-shardscope-fuzz";
  auto scenario = ParseScenario(doc, "fuzz.json", base_dir, overrides);
  if (!scenario.ok()) {
    RequireMessage(scenario.status(), text);
    return 0;
  }
  auto again = ParseScenario(scenario->resolved, "resolved.json", base_dir);
  if (!again.ok()) Fail("a resolved scenario does not validate", again.status().message());
  if (again->resolved != scenario->resolved) Fail("resolve is not a fixed point", text);
  // The resolved scenario is written into summaries and traces: every string in it must be
  // UTF-8 (nlohmann's strict dump throws otherwise; a --set value taken as a raw string did).
  try {
    (void)scenario->resolved.dump();
  } catch (const nlohmann::json::exception& e) {
    Fail("the resolved scenario is not UTF-8 text", e.what());
  }

  ModelBuildOptions build;
  build.tp = scenario->parallelism.tp;
  build.ep = scenario->parallelism.ep;
  auto tree = LoadModel(scenario->model, build);
  if (!tree.ok()) {
    RequireMessage(tree.status(), text);
    return 0;
  }
  auto plan = PlanScenario(*scenario, *tree);
  if (!plan.ok()) {
    RequireMessage(plan.status(), text);
    return 0;
  }
  (void)PlanToJson(*plan).dump();
  (void)FormatPlanTable(*plan);
  return 0;
}
