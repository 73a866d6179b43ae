// What `calibrate` reads: measured traces (operation durations, joined to the prediction by
// op_id) and measured run tables (whole-step figures), each with the scenario it ran.
//
// Contents:
//   MeasuredOp          one operation of a measured trace (op_id, its occurrence, duration)
//   TraceInput          one rank of a measured trace + its scenario
//   RunInput            one row of a run table
//   CalibrationInputs   all of them
//   LoadCalibrationInputs  files → CalibrationInputs (errors name the file and the field)
//   ParseRunsJson / ParseRunsCsv   the two run-table forms (docs/calibration.md)
//
// Run tables (docs/calibration.md):
//   {"format": "shardscope-runs/1", "runs": [{"id": "a", "scenario": {...} | "path.json",
//     "measured": {"step_time_s": 1.2, "tokens_per_s_per_gpu": 6800,
//                  "peak_memory_reserved_gib": 61.0}}]}
// any subset of the measured keys (at least one), each within a plausible range (a step time
// of 1 µs .. 1e6 s, docs/calibration.md); ids unique across all inputs; or CSV with a header naming
// the columns id, scenario (a scenario file path) and any of the measured keys, empty cells for
// absent figures. Relative scenario paths resolve against the table's folder. A trace needs its
// metadata.scenario (what `shardscope run` and `simulate` write).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/scenario.h"
#include "core/util/status.h"

namespace shardscope::calibrate {

struct MeasuredOp {
  std::string op_id;
  int occurrence = 0;  // k-th event with this op_id on the rank (0-based)
  int64_t dur_ns = 0;
};

struct TraceInput {
  std::string path;
  Scenario scenario;
  int rank = 0;
  std::vector<MeasuredOp> ops;
  double step_time_s = 0;  // metadata.summary.step_time_s of the trace (0: none)
  // Which run the rank belongs to: metadata.run_id (`shardscope run` writes the same in every
  // rank's file), else the file's path when it holds several ranks (one file, one run); "" when
  // unknown. PrepareSamples joins a run's ranks by it.
  std::string run_id;
  // Events with an op_id whose duration is zero (a kernel under the trace's microsecond
  // resolution, or a bad measurement): left out, and counted so the fit's notes say so.
  int64_t zero_duration_ops = 0;
};

struct RunInput {
  std::string source;  // "runs.json: runs[3] (id "a")", "runs.csv: line 4 (id "a")"
  std::string id;
  Scenario scenario;
  std::string scenario_file;  // the scenario's file as read ("" when the table holds it inline)
  std::optional<double> step_time_s;
  std::optional<double> tokens_per_s_per_gpu;
  std::optional<double> peak_memory_reserved_gib;
};

struct CalibrationInputs {
  std::vector<TraceInput> traces;
  std::vector<RunInput> runs;
};

// A `.csv` name is a CSV run table; JSON with "format": "shardscope-runs/1" a JSON one; any
// other JSON a trace (formats.md §3; `.gz` inflated).
Result<CalibrationInputs> LoadCalibrationInputs(const std::vector<std::string>& paths);

// `source` names the table in errors; `base_dir` resolves relative paths.
Result<std::vector<RunInput>> ParseRunsJson(std::string_view text, const std::string& source,
                                            const std::string& base_dir);
Result<std::vector<RunInput>> ParseRunsCsv(std::string_view text, const std::string& source,
                                           const std::string& base_dir);

}  // namespace shardscope::calibrate
