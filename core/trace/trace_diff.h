// Comparing two traces (or two summaries) for `shardscope diff`, made to gate CI.
//
// Contents:
//   ToleranceSide, Tolerance, Tolerances   per-metric limits: relative ("2%") or absolute
//                           ("50us", "1GiB"), two-sided or one-sided ("+2%", "-2%")
//   DefaultTolerances, ToleranceHelp   the defaults, and the text --help and errors show
//   ParseTolerances         "step_time=+2%,peak_memory=off,op=50us" (defaults fill the rest)
//   MetricDelta             one compared figure, in the unit its name says
//   DiffReport              structural differences, fit change, metric deltas by impact
//   DiffTraces              joins ops on op_id (fallback: rank, lane, name, occurrence)
//   DiffSummaries           compares two summary JSON objects (formats.md §2)
//   DiffToJson              the `--json` report
//
// Joining: the k-th event with one (rank, op_id) in A matches the k-th in B; events without an
// op_id match on (rank, lane, name, k). Unmatched events are "added"/"removed"; matched events
// whose order within their lane changed (outside a longest common ordering) are "reordered".
// Any structural difference, a job that fitted in A and does not in B (whatever the memory
// tolerance), or a metric beyond its tolerance fails the diff.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/trace.h"
#include "core/util/status.h"

namespace shardscope {

// Which change a tolerance limits. Every compared metric is worse when larger (time, memory),
// so an increase is a regression.
enum class ToleranceSide {
  kBoth,      // "2%": a change either way beyond the limit fails
  kIncrease,  // "+2%": only an increase (a regression) beyond the limit fails
  kDecrease,  // "-2%": only a decrease (an improvement) beyond the limit fails
};

struct Tolerance {
  double relative = -1;  // fraction of A's (the baseline's) magnitude, 0.02 for "2%"; < 0: unused
  double absolute = -1;  // in the metric's base unit (ns or bytes); < 0: unused
  ToleranceSide side = ToleranceSide::kBoth;
  std::string text;  // as given, for reports
  // True when the change from `a` to `b` (base units) is within the limit. A relative limit
  // allows no change at all from a = 0.
  bool Allows(double a, double b) const;
  // The largest |b − a| allowed from `a`, or -1 when the tolerance limits nothing.
  double Allowed(double a) const;
};

// Metric names: step_time, exposed_comm, compute, op (times: %, ns, us, ms, s) and
// peak_memory (%, B, KiB, MiB, GiB, KB, MB, GB); op is each matched operation's duration.
// A metric without a tolerance is reported and never fails.
using Tolerances = std::map<std::string, Tolerance>;
// step_time=2%, exposed_comm=5%, peak_memory=1%, op=50us; compute off.
Tolerances DefaultTolerances();
// The --tol grammar with the defaults, for `diff --help` and parse errors.
std::string ToleranceHelp();
// Parses a --tol list over the defaults: `metric=[+|-]N%`, `metric=[+|-]N<unit>` (a unit is
// required and must suit the metric) or `metric=off` (no limit). Errors name the bad item.
Result<Tolerances> ParseTolerances(std::string_view spec);

struct MetricDelta {
  std::string metric;  // "step_time", "step_time_s", "op fwd/layers.0/all_gather (rank 0)", ...
  std::string unit;    // the unit of a and b: "ns", "bytes" (traces), "s", "GiB" (summaries), ...
  double a = 0, b = 0;
  std::string tolerance;  // "" when the metric has none
  bool over = false;
  double impact = 0;  // |b − a| over the allowed difference (or |b − a| when none)
  // (b − a) / |a|; empty when a = 0 and b ≠ 0 (a figure that is new in B).
  std::optional<double> relative() const;
};

struct DiffReport {
  // "rank 0 all_gather: <op_id> (<name>)"; at most 1,000 listed each, the counts are exact.
  std::vector<std::string> added, removed, reordered;
  int64_t added_count = 0, removed_count = 0, reordered_count = 0;
  // Over-tolerance first, then by impact; headline figures plus at most 1,000 per-op entries
  // (ops_over counts every op beyond tolerance).
  std::vector<MetricDelta> metrics;
  int64_t ops_a = 0, ops_b = 0, ops_matched = 0, ops_over = 0;
  // From the summaries' `fits` (a trace's metadata summary): "fits → does not fit",
  // "does not fit → fits", or "" when unchanged or unknown. Losing the fit fails the diff.
  std::string fit_change;
  bool fit_lost = false;
  // "B is a failed run: <its failure>" for a summary (or trace metadata summary) with run's
  // `failure`: never within tolerance, whatever the figures.
  std::vector<std::string> failed_runs;
  // How the ranks were joined: a rank's file against a prediction's role, the ranks left out.
  std::vector<std::string> notes;
  bool within_tolerance = true;
};

Result<DiffReport> DiffTraces(const Trace& a, const Trace& b, const Tolerances& tolerances);
// InvalidInput naming `source` unless `j` is a summary object (it holds step_time_s): what
// diff reads a file without traceEvents as.
Status CheckSummaryDocument(const nlohmann::json& j, const std::string& source);
// `a`/`b` are summary objects; `source_a`/`source_b` name them in errors.
Result<DiffReport> DiffSummaries(const nlohmann::json& a, const nlohmann::json& b,
                                 const Tolerances& tolerances, const std::string& source_a,
                                 const std::string& source_b);
// `max_metrics` bounds the per-op entries written (the counts stay exact). Each metric entry
// holds a, b and delta in its `unit`, `relative` = (b − a) / |a| (null for a figure new in B).
nlohmann::json DiffToJson(const DiffReport& report, size_t max_metrics = 1000);

}  // namespace shardscope
