// libFuzzer target: the inputs of `sweep`, `recommend` and `calibrate` (issue 14) that the
// other targets do not reach: --vary axes, price tables, calibration (cost model) files and run
// tables in JSON and CSV; and `diff`'s --tol list. Every input must give a value or a Status with a
// message, never a crash, a sanitizer report or an exception; and what parsed must keep the
// promises its header makes (below, per parser).
//
// Input: the first byte picks the parser (modulo 6), the rest is its text:
//   0  --vary flags, one per line (ParseVary), then CombinationCount and CombinationSets
//   1  a price table (ParsePriceTable)
//   2  a calibration file (ParseCalibration; its canonical JSON reads back the same; then
//      ApplyCalibration onto the H100 SXM catalog entry)
//   3  a JSON run table (ParseRunsJson)
//   4  a CSV run table (ParseRunsCsv)
//   5  a --tol list (ParseTolerances)
// Relative scenario paths resolve against a folder that does not exist, so run tables load
// only inline scenarios, built-in models and absolute paths.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/trace_diff.h"
#include "sim/calibrate/calibration_inputs.h"
#include "sim/cost/calibration.h"
#include "sim/cost/cost_params.h"
#include "sim/explore/price_table.h"
#include "sim/explore/vary.h"
#include "sim/hardware/hardware.h"

using namespace shardscope;

namespace {

void Fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "explore_fuzz: %s\n%.*s\n", what, static_cast<int>(input.size()),
               input.data());
  std::abort();
}

void RequireMessage(const Status& s, std::string_view input) {
  if (!s.ok() && s.message().empty()) Fail("an error without a message", input);
}

constexpr const char* kNoFolder = "/nonexistent-shardscope-fuzz";

// vary.h: values non-empty and distinct, at most kMaxAxisValues; a count within
// kMaxCombinations; combination i sets every axis once, in axis order.
void Vary(std::string_view text) {
  std::vector<sim::VaryAxis> axes;
  size_t pos = 0;
  while (pos < text.size() && axes.size() < 8) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    Result<sim::VaryAxis> axis = sim::ParseVary(text.substr(pos, end - pos));
    pos = end + 1;
    RequireMessage(axis.status(), text);
    if (!axis.ok()) continue;
    if (axis->path.empty()) Fail("an axis without a path", text);
    if (axis->values.empty()) Fail("an axis without values", text);
    if (static_cast<int64_t>(axis->values.size()) > sim::kMaxAxisValues) {
      Fail("more values than kMaxAxisValues", text);
    }
    std::set<std::string> seen(axis->values.begin(), axis->values.end());
    if (seen.size() != axis->values.size()) Fail("a value twice in one axis", text);
    axes.push_back(std::move(axis).value());
  }
  Result<int64_t> count = sim::CombinationCount(axes);
  RequireMessage(count.status(), text);
  if (!count.ok()) return;
  if (*count < 1 || *count > sim::kMaxCombinations) Fail("a count out of bounds", text);
  for (int64_t index : {int64_t{0}, *count - 1}) {
    const std::vector<std::string> sets = sim::CombinationSets(axes, index);
    if (sets.size() != axes.size()) Fail("a combination without every axis", text);
    for (size_t a = 0; a < axes.size(); ++a) {
      if (sets[a].rfind(axes[a].path + "=", 0) != 0) Fail("a set of another axis", text);
    }
  }
}

// price_table.h: every price positive and finite, found again by its GPU's name.
void Prices(std::string_view text) {
  Result<sim::PriceTable> table = sim::ParsePriceTable(text, "fuzz.json");
  RequireMessage(table.status(), text);
  if (!table.ok()) return;
  for (const auto& [gpu, price] : table->per_gpu_hour) {
    if (!std::isfinite(price) || price <= 0) Fail("a price not positive and finite", text);
    const std::optional<double> again = table->PerGpuHour(gpu);
    if (!again || *again != price) Fail("a price not found by its GPU's name", text);
  }
}

// calibration.h: the canonical JSON of a parsed file parses to the same overrides; applying it
// to a catalog GPU succeeds or says why.
void CalibrationFile(std::string_view text) {
  Result<Calibration> cal = ParseCalibration(text, "fuzz.json");
  RequireMessage(cal.status(), text);
  if (!cal.ok()) return;
  const std::string canonical = CalibrationToJson(*cal);
  Result<Calibration> again = ParseCalibration(canonical, "canonical.json");
  if (!again.ok())
    Fail(("the canonical JSON does not parse: " + again.status().message()).c_str(), text);
  if (again->overrides != cal->overrides)
    Fail("the canonical JSON parses to other overrides", text);
  Result<Hardware> hw = LookupHardware("h100-sxm", 8, 1);
  if (!hw.ok()) Fail("the catalog has no h100-sxm", text);
  CostParams params = DefaultCostParams(*hw);
  RequireMessage(ApplyCalibration(*cal, &*hw, &params), text);
}

// calibration_inputs.h: each run has an id and at least one measured figure, each positive and
// finite; ids are unique.
void Runs(std::string_view text, bool csv) {
  Result<std::vector<calibrate::RunInput>> runs =
      csv ? calibrate::ParseRunsCsv(text, "fuzz.csv", kNoFolder)
          : calibrate::ParseRunsJson(text, "fuzz.json", kNoFolder);
  RequireMessage(runs.status(), text);
  if (!runs.ok()) return;
  std::set<std::string> ids;
  for (const calibrate::RunInput& run : *runs) {
    if (!ids.insert(run.id).second) Fail("an id twice", text);
    if (run.source.empty()) Fail("a run without its source", text);
    int figures = 0;
    for (const std::optional<double>& x :
         {run.step_time_s, run.tokens_per_s_per_gpu, run.peak_memory_reserved_gib}) {
      if (!x) continue;
      ++figures;
      if (!std::isfinite(*x) || *x <= 0) Fail("a measured figure not positive and finite", text);
    }
    if (figures == 0) Fail("a run without a measured figure", text);
  }
}

// trace_diff.h: every metric's limit is off or a non-negative finite figure; no change is
// always allowed, and the allowed difference is -1 (no limit) or non-negative.
void ToleranceList(std::string_view text) {
  Result<Tolerances> tol = ParseTolerances(text);
  RequireMessage(tol.status(), text);
  if (!tol.ok()) return;
  for (const auto& [metric, t] : *tol) {
    for (double limit : {t.relative, t.absolute}) {
      if (!std::isfinite(limit) || (limit < 0 && limit != -1)) Fail("a limit out of range", text);
    }
    for (double a : {0.0, 1.0, 1e9}) {
      if (!t.Allows(a, a)) Fail(("no change is refused for " + metric).c_str(), text);
      const double allowed = t.Allowed(a);
      if (allowed != -1 && !(allowed >= 0)) Fail("an allowed difference below 0", text);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0:
      Vary(text);
      break;
    case 1:
      Prices(text);
      break;
    case 2:
      CalibrationFile(text);
      break;
    case 3:
      Runs(text, /*csv=*/false);
      break;
    case 4:
      Runs(text, /*csv=*/true);
      break;
    default:
      ToleranceList(text);
      break;
  }
  return 0;
}
