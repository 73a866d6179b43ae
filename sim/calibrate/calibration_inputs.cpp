#include "sim/calibrate/calibration_inputs.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/trace/trace_io.h"
#include "core/util/file_io.h"

namespace shardscope::calibrate {
namespace {

using nlohmann::json;

constexpr const char* kRunsFormat = "shardscope-runs/1";
const std::vector<std::string>& MeasuredKeys() {
  static const std::vector<std::string> keys = {"step_time_s", "tokens_per_s_per_gpu",
                                                "peak_memory_reserved_gib"};
  return keys;
}

std::string DirOf(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

Result<Scenario> ScenarioFrom(const json& v, const std::string& where, const std::string& base) {
  if (v.is_string()) {
    std::filesystem::path p(v.get<std::string>());
    if (p.is_relative()) p = std::filesystem::path(base) / p;
    Result<Scenario> sc = LoadScenario(p.string());
    if (!sc.ok()) return sc.status().WithContext(where);
    return sc;
  }
  if (!v.is_object()) {
    return InvalidInput(where + ": expected a scenario object or a scenario file path");
  }
  return ParseScenario(v, where, base);
}

Status SetMeasured(RunInput& run, const std::string& key, double value, const std::string& where) {
  if (!std::isfinite(value) || value <= 0) {
    return InvalidInput(fmt::format("{}: expected a positive number, got {}", where, value));
  }
  if (key == "step_time_s") run.step_time_s = value;
  if (key == "tokens_per_s_per_gpu") run.tokens_per_s_per_gpu = value;
  if (key == "peak_memory_reserved_gib") run.peak_memory_reserved_gib = value;
  return Status::Ok();
}

std::string KnownKeys() {
  std::string s;
  for (const std::string& k : MeasuredKeys()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

bool IsMeasuredKey(const std::string& key) {
  for (const std::string& k : MeasuredKeys()) {
    if (k == key) return true;
  }
  return false;
}

Status NeedSomeFigure(const RunInput& run, const std::string& where) {
  if (!run.step_time_s && !run.tokens_per_s_per_gpu && !run.peak_memory_reserved_gib) {
    return InvalidInput(where + ": no measured figure (expected one of " + KnownKeys() + ")");
  }
  return Status::Ok();
}

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) {
    const size_t a = cell.find_first_not_of(" \t\r");
    const size_t b = cell.find_last_not_of(" \t\r");
    cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

Result<std::vector<TraceInput>> LoadTrace(const std::string& path) {
  SS_ASSIGN_OR_RETURN(Trace t, ReadTrace(path));
  if (t.metadata.scenario.is_null() || !t.metadata.scenario.is_object()) {
    return InvalidInput(path +
                        ": metadata.scenario: missing (calibrate needs the scenario the trace "
                        "ran; `shardscope run` and `simulate` write it)");
  }
  // The writer already resolved the scenario's file paths (model, cost model) against its own
  // working directory, so they are not relative to the trace's folder: resolving them there
  // again would look for tests/…/tiny_llama.config.json under the trace's folder.
  SS_ASSIGN_OR_RETURN(Scenario sc,
                      ParseScenario(t.metadata.scenario, path + ": metadata.scenario", ""));
  t.SortEvents();
  std::map<int, TraceInput> by_rank;
  std::map<std::pair<int, std::string>, int> seen;
  for (const WorkEvent& e : t.events) {
    const std::string op_id(t.Str(e.op_id));
    if (op_id.empty() || e.dur_ns <= 0) continue;
    TraceInput& in = by_rank[e.rank];
    in.rank = e.rank;
    in.ops.push_back({op_id, seen[{e.rank, op_id}]++, e.dur_ns});
  }
  if (by_rank.empty()) {
    return InvalidInput(path + ": traceEvents: no operation with an op_id and a duration");
  }
  std::vector<TraceInput> out;
  for (auto& [rank, in] : by_rank) {
    in.path = path;
    in.scenario = sc;
    if (t.metadata.summary.is_object() && t.metadata.summary.contains("step_time_s") &&
        t.metadata.summary["step_time_s"].is_number() && by_rank.size() == 1) {
      in.step_time_s = t.metadata.summary["step_time_s"].get<double>();
    }
    out.push_back(std::move(in));
  }
  return out;
}

}  // namespace

Result<std::vector<RunInput>> ParseRunsJson(std::string_view text, const std::string& source,
                                            const std::string& base_dir) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidInput(source + ": not a JSON object");
  if (!j.contains("format") || j["format"] != kRunsFormat) {
    return InvalidInput(fmt::format("{}: format: expected \"{}\"", source, kRunsFormat));
  }
  if (!j.contains("runs") || !j["runs"].is_array() || j["runs"].empty()) {
    return InvalidInput(source + ": runs: expected a non-empty array of runs");
  }
  std::vector<RunInput> runs;
  for (size_t i = 0; i < j["runs"].size(); ++i) {
    const json& r = j["runs"][i];
    const std::string where = fmt::format("{}: runs[{}]", source, i);
    if (!r.is_object()) return InvalidInput(where + ": expected an object");
    for (const auto& [key, value] : r.items()) {
      if (key != "id" && key != "scenario" && key != "measured" && key != "notes") {
        return InvalidInput(
            fmt::format("{}.{}: unknown key (expected id, scenario, measured)", where, key));
      }
    }
    RunInput run;
    if (!r.contains("id") || !r["id"].is_string() || r["id"].get<std::string>().empty()) {
      return InvalidInput(where + ".id: expected a non-empty string");
    }
    run.id = r["id"].get<std::string>();
    run.source = fmt::format("{} (id '{}')", where, run.id);
    if (!r.contains("scenario")) return InvalidInput(where + ".scenario: missing");
    SS_ASSIGN_OR_RETURN(run.scenario, ScenarioFrom(r["scenario"], where + ".scenario", base_dir));
    if (!r.contains("measured") || !r["measured"].is_object()) {
      return InvalidInput(where + ".measured: expected an object with any of " + KnownKeys());
    }
    for (const auto& [key, value] : r["measured"].items()) {
      const std::string field = where + ".measured." + key;
      if (!IsMeasuredKey(key)) {
        return InvalidInput(field + ": unknown key (expected one of " + KnownKeys() + ")");
      }
      if (value.is_null()) continue;
      if (!value.is_number()) return InvalidInput(field + ": expected a number");
      SS_RETURN_IF_ERROR(SetMeasured(run, key, value.get<double>(), field));
    }
    SS_RETURN_IF_ERROR(NeedSomeFigure(run, where + ".measured"));
    runs.push_back(std::move(run));
  }
  return runs;
}

Result<std::vector<RunInput>> ParseRunsCsv(std::string_view text, const std::string& source,
                                           const std::string& base_dir) {
  std::istringstream in{std::string(text)};
  std::string line;
  std::vector<std::string> header;
  std::vector<RunInput> runs;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::vector<std::string> cells = SplitCsvLine(line);
    if (header.empty()) {
      header = cells;
      bool has_id = false, has_scenario = false;
      for (const std::string& h : header) {
        has_id = has_id || h == "id";
        has_scenario = has_scenario || h == "scenario";
        if (h != "id" && h != "scenario" && !IsMeasuredKey(h)) {
          return InvalidInput(
              fmt::format("{}: line 1: column '{}': unknown (expected id, scenario, {})", source, h,
                          KnownKeys()));
        }
      }
      if (!has_id || !has_scenario) {
        return InvalidInput(source + ": line 1: the header must name the columns id and scenario");
      }
      continue;
    }
    if (cells.size() != header.size()) {
      return InvalidInput(fmt::format("{}: line {}: {} cells, the header has {}", source, line_no,
                                      cells.size(), header.size()));
    }
    RunInput run;
    std::string scenario_path;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (header[c] == "id") run.id = cells[c];
      if (header[c] == "scenario") scenario_path = cells[c];
    }
    const std::string where = fmt::format("{}: line {}", source, line_no);
    if (run.id.empty()) return InvalidInput(where + ": column id: empty");
    if (scenario_path.empty()) return InvalidInput(where + ": column scenario: empty");
    run.source = fmt::format("{} (id '{}')", where, run.id);
    SS_ASSIGN_OR_RETURN(run.scenario,
                        ScenarioFrom(json(scenario_path), where + ": column scenario", base_dir));
    for (size_t c = 0; c < cells.size(); ++c) {
      if (!IsMeasuredKey(header[c]) || cells[c].empty()) continue;
      const std::string field = fmt::format("{}: column {}", where, header[c]);
      size_t used = 0;
      double v = 0;
      try {
        v = std::stod(cells[c], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != cells[c].size()) {
        return InvalidInput(fmt::format("{}: '{}' is not a number", field, cells[c]));
      }
      SS_RETURN_IF_ERROR(SetMeasured(run, header[c], v, field));
    }
    SS_RETURN_IF_ERROR(NeedSomeFigure(run, where));
    runs.push_back(std::move(run));
  }
  if (runs.empty()) return InvalidInput(source + ": no runs (expected a header and one row a run)");
  return runs;
}

Result<CalibrationInputs> LoadCalibrationInputs(const std::vector<std::string>& paths) {
  if (paths.empty()) return InvalidInput("calibrate: no input (measured traces or run tables)");
  CalibrationInputs inputs;
  for (const std::string& path : paths) {
    if (path.ends_with(".csv") || path.ends_with(".csv.gz")) {
      SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
      SS_ASSIGN_OR_RETURN(std::vector<RunInput> runs, ParseRunsCsv(text, path, DirOf(path)));
      for (RunInput& r : runs) inputs.runs.push_back(std::move(r));
      continue;
    }
    SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    // A run table says so in its first bytes; anything else is read as a trace.
    const json head = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!head.is_discarded() && head.is_object() && head.contains("format") &&
        head["format"] == kRunsFormat) {
      SS_ASSIGN_OR_RETURN(std::vector<RunInput> runs, ParseRunsJson(text, path, DirOf(path)));
      for (RunInput& r : runs) inputs.runs.push_back(std::move(r));
      continue;
    }
    if (!head.is_discarded() && head.is_object() && head.contains("runs")) {
      return InvalidInput(
          fmt::format("{}: format: expected \"{}\" for a run table", path, kRunsFormat));
    }
    SS_ASSIGN_OR_RETURN(std::vector<TraceInput> traces, LoadTrace(path));
    for (TraceInput& t : traces) inputs.traces.push_back(std::move(t));
  }
  return inputs;
}

}  // namespace shardscope::calibrate
