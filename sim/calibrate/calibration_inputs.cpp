#include "sim/calibrate/calibration_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/trace/trace_check.h"
#include "core/trace/trace_io.h"
#include "core/util/ascii_case.h"
#include "core/util/count_text.h"
#include "core/util/did_you_mean.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/output_files.h"
#include "core/util/terminal_text.h"

namespace shardscope::calibrate {
namespace {

using nlohmann::json;

constexpr const char* kRunsFormat = "shardscope-runs/1";

// The measured figures and the range a real measurement can take. A value outside it is a
// unit slip or garbage (1e-320 s, 1e300 s): fitted, it pins every figure at a bound and writes
// a calibration that predicts nothing. docs/calibration.md lists the same ranges.
struct MeasuredFigure {
  const char* key;
  double lo;
  double hi;
  const char* unit;
};
constexpr MeasuredFigure kMeasuredFigures[] = {
    {"step_time_s", 1e-6, 1e6, "s"},
    {"tokens_per_s_per_gpu", 1e-3, 1e9, "tokens/s"},
    {"peak_memory_reserved_gib", 1e-3, 1e5, "GiB"},
};

const std::vector<std::string>& MeasuredKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const MeasuredFigure& f : kMeasuredFigures) k.emplace_back(f.key);
    return k;
  }();
  return keys;
}

const MeasuredFigure& FigureOf(const std::string& key) {
  for (const MeasuredFigure& f : kMeasuredFigures) {
    if (key == f.key) return f;
  }
  return kMeasuredFigures[0];  // callers pass only MeasuredKeys()
}

Status CheckPlausible(const std::string& key, double value, const std::string& where) {
  if (std::isnan(value) || value <= 0) {
    return InvalidInput(fmt::format("{}: expected a positive number, got {}", where, value));
  }
  const MeasuredFigure& f = FigureOf(key);
  if (value < f.lo || value > f.hi) {
    return InvalidInput(fmt::format("{}: expected a measurement within {:g} .. {:g} {}, got {:g}",
                                    where, f.lo, f.hi, f.unit, value));
  }
  return Status::Ok();
}

// `"id"` as JSON writes it, so that an id with quotes or control characters reads unambiguously.
std::string Quoted(const std::string& id) { return DumpJson(nlohmann::json(id)); }

// "runs.json: runs[3]", and with the id once it is known: "runs.json: runs[3] (id "a")".
std::string RunWhere(const std::string& position, const std::string& id) {
  return id.empty() ? position : fmt::format("{} (id {})", position, Quoted(id));
}

// "unknown key (did you mean runs?)", or the keys expected when none is close.
std::string UnknownKey(const std::string& key, const std::vector<std::string>& known) {
  const std::string close = DidYouMean(key, known);
  if (!close.empty()) return "unknown key" + close;
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  return "unknown key (expected " + list + ")";
}

std::string DirOf(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

// A run's scenario path as it is read: relative to the table's folder.
std::string Resolved(const json& path, const std::string& base) {
  std::filesystem::path p(path.get<std::string>());
  if (p.is_relative()) p = std::filesystem::path(base) / p;
  return p.string();
}

Result<Scenario> ScenarioFrom(const json& v, const std::string& where, const std::string& base) {
  if (v.is_string()) {
    Result<Scenario> sc = LoadScenario(Resolved(v, base));
    if (!sc.ok()) return sc.status().WithContext(where);
    return sc;
  }
  if (!v.is_object()) {
    return InvalidInput(where + ": expected a scenario object or a scenario file path");
  }
  return ParseScenario(v, where, base);
}

Status SetMeasured(RunInput& run, const std::string& key, double value, const std::string& where) {
  SS_RETURN_IF_ERROR(CheckPlausible(key, value, where));
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

// Two runs with one id would make every message about either ambiguous.
Status CheckUniqueId(std::map<std::string, std::string>* first_at, const std::string& id,
                     const std::string& where, const std::string& position) {
  const auto [it, inserted] = first_at->emplace(id, position);
  if (inserted) return Status::Ok();
  return InvalidInput(fmt::format(
      "{}: id: the same id as {} (expected every run's id to be unique)", where, it->second));
}

// A CSV cell as the decimal number a spreadsheet writes. strtod alone also took hex
// ("0x1p3"), "inf" and "nan", and turned 1e400 into inf, which the range check then called
// "got inf". An underflow (1e-320) keeps its tiny value, so that the range check names the
// plausible range.
Result<double> DecimalCell(std::string_view cell, const std::string& field) {
  std::string_view digits = cell;
  if (digits.starts_with('+')) digits.remove_prefix(1);  // from_chars takes '-' only
  double v = 0;
  const auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), v, std::chars_format::general);
  const bool whole = !digits.empty() && end == digits.data() + digits.size();
  if (!whole || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return InvalidInput(fmt::format("{}: '{}' is not a decimal number", field, cell));
  }
  if (ec == std::errc::result_out_of_range) {
    v = std::strtod(std::string(digits).c_str(), nullptr);
    if (std::isinf(v)) return InvalidInput(fmt::format("{}: '{}' is too large", field, cell));
  }
  if (!std::isfinite(v)) {
    return InvalidInput(fmt::format("{}: '{}' is not a finite number", field, cell));
  }
  return v;
}

// The first traceEvents[i] whose pid is `rank`, for messages; -1 when none says so (a PyTorch
// trace's rank comes from its distributedInfo, not from pid).
int64_t EventWithPid(const json& doc, int rank) {
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) return -1;
  const json& events = doc["traceEvents"];
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (e.is_object() && e.contains("pid") && e["pid"].is_number_integer() &&
        e["pid"].get<int64_t>() == rank) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

// `t`: the trace ParseTrace read from `text`, the file as read; `text` is parsed as JSON again
// only to locate an event for a message.
Result<std::vector<TraceInput>> LoadTrace(const std::string& path, std::string_view text, Trace t) {
  if (t.metadata.scenario.is_null()) {
    return InvalidInput(path +
                        ": metadata.scenario: missing (calibrate needs the scenario the trace "
                        "ran; `shardscope run` and `simulate` write it)");
  }
  if (!t.metadata.scenario.is_object()) {
    return InvalidInput(fmt::format(
        "{}: metadata.scenario: expected an object (the scenario the trace ran), got {}", path,
        t.metadata.scenario.type_name()));
  }
  // A run that failed stops at its failure (a timeout, out of memory): its operations are not
  // one step's. An emulated world's collectives are the cost model's own prediction slept:
  // fitting them would fit the model to itself.
  if (t.metadata.summary.is_object() && t.metadata.summary.contains("failure") &&
      !t.metadata.summary["failure"].is_null()) {
    return InvalidInput(fmt::format(
        "{}: metadata.summary.failure: a failed run ({}); calibrate on runs that completed", path,
        Shortened(t.metadata.summary["failure"].dump(), 120)));
  }
  if (t.metadata.device.is_object() && t.metadata.device.value("communicators", "") == "emulated") {
    return InvalidInput(fmt::format(
        "{}: metadata.device.communicators: \"emulated\": run --emulate-world holds each "
        "collective for the cost model's own time, so fitting it fits the model to itself; "
        "calibrate on ranks launched together (mpiexec, or GPUs)",
        path));
  }
  // The writer already resolved the scenario's file paths (model, cost model) against its own
  // working directory, so they are not relative to the trace's folder: resolving them there
  // again would look for tests/…/tiny_llama.config.json under the trace's folder.
  SS_ASSIGN_OR_RETURN(Scenario sc,
                      ParseScenario(t.metadata.scenario, path + ": metadata.scenario", ""));
  const int world = sc.cluster.world_size();
  t.SortEvents();
  // A trace of ours that check-trace refuses (events overlapping in a lane, op_ids repeated)
  // is not a measurement: fitted, its durations pin every figure at a bound and the file
  // written predicts nothing.
  if (t.import.source == "shardscope") {
    if (const std::vector<std::string> problems = CheckTrace(t); !problems.empty()) {
      return InvalidInput(fmt::format(
          "{}: not a valid trace ({}; the first: {}; `shardscope "
          "check-trace {}` lists them)",
          path, CountOf(static_cast<int64_t>(problems.size()), "problem"), problems.front(), path));
    }
  }
  std::map<int, TraceInput> by_rank;
  std::map<std::pair<int, std::string>, int> seen;
  std::map<int, int64_t> zero_duration;  // per rank
  for (const WorkEvent& e : t.events) {
    const std::string op_id(t.Str(e.op_id));
    if (op_id.empty()) continue;
    if (e.dur_ns <= 0) {
      ++zero_duration[e.rank];
      continue;
    }
    if (e.rank < 0 || e.rank >= world) {
      const int64_t at =
          EventWithPid(json::parse(text, nullptr, /*allow_exceptions=*/false), e.rank);
      const std::string field =
          at >= 0 ? fmt::format("traceEvents[{}].pid", at) : fmt::format("rank {}", e.rank);
      return InvalidInput(fmt::format(
          "{}: {}: {} is not a rank of metadata.scenario (expected 0 .. {}: it has {} GPUs)", path,
          field, e.rank, world - 1, world));
    }
    TraceInput& in = by_rank[e.rank];
    in.rank = e.rank;
    in.ops.push_back({op_id, seen[{e.rank, op_id}]++, e.dur_ns});
  }
  if (by_rank.empty()) {
    return InvalidInput(path + ": traceEvents: no operation with an op_id and a duration");
  }
  double step_time_s = 0;
  if (t.metadata.summary.is_object() && t.metadata.summary.contains("step_time_s") &&
      t.metadata.summary["step_time_s"].is_number() && by_rank.size() == 1) {
    step_time_s = t.metadata.summary["step_time_s"].get<double>();
    SS_RETURN_IF_ERROR(
        CheckPlausible("step_time_s", step_time_s, path + ": metadata.summary.step_time_s"));
  }
  std::string run_id;
  if (const auto it = t.metadata.extra.find("run_id");
      it != t.metadata.extra.end() && !it->is_null()) {  // null: absent, as in run tables
    if (!it->is_string() || it->get<std::string>().empty()) {
      return InvalidInput(fmt::format(
          "{}: metadata.run_id: expected a non-empty string (the id `shardscope run` gives "
          "every rank's trace of one run), got {}",
          path, Shortened(it->dump(), 60)));
    }
    run_id = it->get<std::string>();
  } else if (by_rank.size() > 1) {
    run_id = "file " + path;
  }
  std::vector<TraceInput> out;
  for (auto& [rank, in] : by_rank) {
    in.path = path;
    in.scenario = sc;
    in.step_time_s = step_time_s;
    in.run_id = run_id;
    if (const auto z = zero_duration.find(rank); z != zero_duration.end())
      in.zero_duration_ops = z->second;
    out.push_back(std::move(in));
  }
  return out;
}

// The traces that name one run (metadata.run_id) are its ranks, joined by the fit (each
// collective timed by its latest rank to arrive): one rank twice would count its operations
// twice, and traces of different jobs under one id would time a collective by another job's.
Status CheckRunsJoin(const std::vector<TraceInput>& traces) {
  std::map<std::string, const TraceInput*> first_of_run;
  std::map<std::pair<std::string, int>, const TraceInput*> rank_of_run;
  for (const TraceInput& t : traces) {
    if (t.run_id.empty()) continue;
    const auto [first, new_run] = first_of_run.emplace(t.run_id, &t);
    if (!new_run && first->second->scenario.resolved != t.scenario.resolved) {
      return InvalidInput(fmt::format(
          "{}: metadata.scenario: not the scenario of {}, whose metadata.run_id ({}) it shares "
          "(expected the ranks of one run to share their scenario; give each run its own id)",
          t.path, first->second->path, t.run_id));
    }
    const auto [same, new_rank] = rank_of_run.emplace(std::make_pair(t.run_id, t.rank), &t);
    if (!new_rank) {
      return InvalidInput(fmt::format(
          "{}: rank {} of run {} is already in {} (expected each rank of a run once: the same "
          "measurement twice would count every operation twice)",
          t.path, t.rank, t.run_id, same->second->path));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<RunInput>> ParseRunsJson(std::string_view text, const std::string& source,
                                            const std::string& base_dir) {
  static const std::vector<std::string> kTableKeys = {"format", "runs"};
  static const std::vector<std::string> kRunKeys = {"id", "scenario", "measured", "notes"};
  SS_ASSIGN_OR_RETURN(json j, ParseJsonInput(text, source));
  if (!j.is_object()) return InvalidInput(source + ": not a JSON object");
  if (!j.contains("format") || j["format"] != kRunsFormat) {
    return InvalidInput(fmt::format("{}: format: expected \"{}\"", source, kRunsFormat));
  }
  for (const auto& [key, value] : j.items()) {
    if (std::find(kTableKeys.begin(), kTableKeys.end(), key) == kTableKeys.end()) {
      return InvalidInput(fmt::format("{}: {}: {}", source, key, UnknownKey(key, kTableKeys)));
    }
  }
  if (!j.contains("runs") || !j["runs"].is_array() || j["runs"].empty()) {
    return InvalidInput(source + ": runs: expected a non-empty array of runs");
  }
  std::vector<RunInput> runs;
  std::map<std::string, std::string> first_at;
  for (size_t i = 0; i < j["runs"].size(); ++i) {
    const json& r = j["runs"][i];
    const std::string position = fmt::format("runs[{}]", i);
    if (!r.is_object()) {
      return InvalidInput(fmt::format("{}: {}: expected an object (a run)", source, position));
    }
    // The id first, so that every message about this run names it.
    const bool has_id =
        r.contains("id") && r["id"].is_string() && !r["id"].get<std::string>().empty();
    RunInput run;
    if (has_id) run.id = r["id"].get<std::string>();
    const std::string where = source + ": " + RunWhere(position, run.id);
    for (const auto& [key, value] : r.items()) {
      if (std::find(kRunKeys.begin(), kRunKeys.end(), key) == kRunKeys.end()) {
        return InvalidInput(fmt::format("{}.{}: {}", where, key, UnknownKey(key, kRunKeys)));
      }
    }
    if (!has_id) return InvalidInput(where + ".id: expected a non-empty string");
    SS_RETURN_IF_ERROR(CheckUniqueId(&first_at, run.id, where, position));
    run.source = where;
    if (!r.contains("scenario")) return InvalidInput(where + ".scenario: missing");
    if (r["scenario"].is_string()) run.scenario_file = Resolved(r["scenario"], base_dir);
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
  // Its cells become JSON strings (ids in the calibration report) and paths: text, as the JSON
  // table's parser demands of its strings.
  if (const std::optional<size_t> at = InvalidUtf8At(text)) {
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + *at, '\n'));
    return CheckUtf8(text, fmt::format("{}: line {}", source, line));
  }
  // A byte-order mark: spreadsheets (Excel's "CSV UTF-8") begin the file with one, which would
  // otherwise read as part of the first column's name.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.starts_with(kBom)) text.remove_prefix(kBom.size());
  std::istringstream in{std::string(text)};
  std::string line;
  std::vector<std::string> header;
  std::vector<RunInput> runs;
  std::map<std::string, std::string> first_at;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::vector<std::string> cells = SplitCsvLine(line);
    // Quoting is not read: a quoted cell would keep its quotes (an id "\"a\"") and a comma in
    // one would split it, so it is refused rather than taken literally.
    for (size_t c = 0; c < cells.size(); ++c) {
      if (cells[c].empty() || (cells[c].front() != '"' && cells[c].front() != '\'')) continue;
      const std::string column =
          c < header.size() ? fmt::format("column {}", header[c]) : fmt::format("cell {}", c + 1);
      return InvalidInput(fmt::format(
          "{}: line {}: {} ({}): quoted (expected plain cells: no quotes, no commas inside a cell)",
          source, line_no, column, TerminalSafe(cells[c])));
    }
    if (header.empty()) {
      header = cells;
      bool has_id = false, has_scenario = false;
      for (size_t c = 0; c < header.size(); ++c) {
        const std::string& h = header[c];
        has_id = has_id || h == "id";
        has_scenario = has_scenario || h == "scenario";
        if (h != "id" && h != "scenario" && !IsMeasuredKey(h)) {
          return InvalidInput(
              fmt::format("{}: line {}: column '{}': unknown (expected id, scenario, {})", source,
                          line_no, h, KnownKeys()));
        }
        // Two cells of one figure in a row could disagree; neither may silently win.
        for (size_t d = 0; d < c; ++d) {
          if (header[d] == h) {
            return InvalidInput(fmt::format(
                "{}: line {}: column '{}': named twice (columns {} and {}; expected each column "
                "once)",
                source, line_no, h, d + 1, c + 1));
          }
        }
      }
      if (!has_id || !has_scenario) {
        return InvalidInput(fmt::format(
            "{}: line {}: the header must name the columns id and scenario", source, line_no));
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
    const std::string position = fmt::format("line {}", line_no);
    const std::string where = source + ": " + RunWhere(position, run.id);
    if (run.id.empty()) return InvalidInput(where + ": column id: empty");
    SS_RETURN_IF_ERROR(CheckUniqueId(&first_at, run.id, where, position));
    if (scenario_path.empty()) return InvalidInput(where + ": column scenario: empty");
    run.source = where;
    run.scenario_file = Resolved(json(scenario_path), base_dir);
    SS_ASSIGN_OR_RETURN(run.scenario,
                        ScenarioFrom(json(scenario_path), where + ": column scenario", base_dir));
    for (size_t c = 0; c < cells.size(); ++c) {
      if (!IsMeasuredKey(header[c]) || cells[c].empty()) continue;
      const std::string field = fmt::format("{}: column {}", where, header[c]);
      SS_ASSIGN_OR_RETURN(const double v, DecimalCell(cells[c], field));
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
  std::vector<NamedPath> named;
  for (size_t i = 0; i < paths.size(); ++i) {
    named.push_back({fmt::format("input {}", i + 1), paths[i]});
  }
  SS_RETURN_IF_ERROR(CheckDistinctInputs(named).WithContext("calibrate"));
  CalibrationInputs inputs;
  auto add_runs = [&](std::vector<RunInput> runs) {
    for (RunInput& r : runs) inputs.runs.push_back(std::move(r));
  };
  for (const std::string& path : paths) {
    // By extension, in any case (Windows tools write RUNS.CSV).
    if (const std::string lower = AsciiLower(path);
        lower.ends_with(".csv") || lower.ends_with(".csv.gz")) {
      SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
      SS_ASSIGN_OR_RETURN(std::vector<RunInput> runs, ParseRunsCsv(text, path, DirOf(path)));
      add_runs(std::move(runs));
      continue;
    }
    SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    // A trace is read by the trace reader alone: parsed into a JSON document first as well, a
    // 32 MB trace took 90 MB more at calibrate's peak (362 against 272 MB). Only what the
    // reader refuses (a run table has no traceEvents) is parsed as JSON, to tell a run table
    // or another kind of file from a broken trace.
    Result<Trace> trace = ParseTrace(text, path);
    if (trace.ok()) {
      SS_ASSIGN_OR_RETURN(std::vector<TraceInput> traces,
                          LoadTrace(path, text, std::move(trace).value()));
      for (TraceInput& t : traces) inputs.traces.push_back(std::move(t));
      continue;
    }
    const json head = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!head.is_discarded() && head.is_object() && head.contains("format") &&
        head["format"] == kRunsFormat) {
      SS_ASSIGN_OR_RETURN(std::vector<RunInput> runs, ParseRunsJson(text, path, DirOf(path)));
      add_runs(std::move(runs));
      continue;
    }
    if (!head.is_discarded() && head.is_object() && head.contains("runs")) {
      return InvalidInput(
          fmt::format("{}: format: expected \"{}\" for a run table", path, kRunsFormat));
    }
    // Valid JSON without traceEvents (a price table, a scenario) would otherwise be reported
    // as a trace missing its events, which sends the user looking in the wrong place.
    if (!head.is_discarded() && (!head.is_object() || !head.contains("traceEvents"))) {
      std::string what;
      if (!head.is_object()) {
        what = fmt::format("a JSON {}", head.type_name());
      } else if (head.contains("format") && head["format"].is_string()) {
        what = fmt::format("its format is \"{}\"", head["format"].get<std::string>());
      } else if (head.contains("model")) {
        what = "it looks like a scenario (a run table names one in a run's scenario)";
      } else {
        what =
            fmt::format("an object with neither \"format\": \"{}\" nor traceEvents", kRunsFormat);
      }
      return InvalidInput(
          fmt::format("{}: neither a {} table nor a trace: {}", path, kRunsFormat, what));
    }
    return trace.status();
  }
  SS_RETURN_IF_ERROR(CheckRunsJoin(inputs.traces));
  // Across tables too: the same id in two tables (or one table given twice) is ambiguous.
  std::map<std::string, std::string> first_at;
  for (const RunInput& r : inputs.runs) {
    const auto [it, inserted] = first_at.emplace(r.id, r.source);
    if (!inserted) {
      return InvalidInput(fmt::format(
          "{}: id: the same id as {} (expected every run's id to be unique across the inputs)",
          r.source, it->second));
    }
  }
  return inputs;
}

}  // namespace shardscope::calibrate
