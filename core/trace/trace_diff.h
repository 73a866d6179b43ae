// Comparing two traces (or two summaries) for `shardscope diff`.
//
// Contents:
//   Tolerance, Tolerances   per-metric limits: relative ("2%") or absolute ("50us", "1GiB")
//   ParseTolerances         "step_time=2%,peak_memory=1%,op=50us" (defaults fill the rest)
//   MetricDelta             one compared figure
//   DiffReport              structural differences, then metric deltas sorted by impact
//   DiffTraces              joins ops on op_id (fallback: rank, lane, name, occurrence)
//   DiffSummaries           compares two summary JSON objects (formats.md §2)
//   DiffToJson              the `--json` report
//
// Joining: the k-th event with one (rank, op_id) in A matches the k-th in B; events without an
// op_id match on (rank, lane, name, k). Unmatched events are "added"/"removed"; matched events
// whose order within their lane changed (outside a longest common ordering) are "reordered".
// Any structural difference, or a metric beyond its tolerance, fails the diff.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/trace.h"
#include "core/util/status.h"

namespace shardscope {

struct Tolerance {
  double relative = -1;  // fraction of the larger magnitude (0.02 for "2%"); < 0: unused
  double absolute = -1;  // in the metric's unit (ns or bytes); < 0: unused
  std::string text;      // as given, for reports
  // True when |b − a| is within the limit.
  bool Allows(double a, double b) const;
};

// Metric names: step_time, exposed_comm, compute, peak_memory (whole-trace figures) and op
// (each matched operation's duration). Defaults: step_time=2%, exposed_comm=5%,
// peak_memory=1%, op=50us; compute has none (reported, never fails).
using Tolerances = std::map<std::string, Tolerance>;
Tolerances DefaultTolerances();
// Parses a --tol list over the defaults. Errors name the bad item and list valid metrics/units.
Result<Tolerances> ParseTolerances(std::string_view spec);

struct MetricDelta {
  std::string metric;  // "step_time", "op fwd/layers.0/all_gather (rank 0)", ...
  std::string unit;    // "ns", "bytes", "ratio", ...
  double a = 0, b = 0;
  std::string tolerance;  // "" when the metric has none
  bool over = false;
  double impact = 0;  // |b − a| over the allowed difference (or |b − a| when none)
};

struct DiffReport {
  // "rank 0 all_gather: <op_id> (<name>)"; at most 1,000 listed each, the counts are exact.
  std::vector<std::string> added, removed, reordered;
  int64_t added_count = 0, removed_count = 0, reordered_count = 0;
  // Over-tolerance first, then by impact; headline figures plus at most 1,000 per-op entries
  // (ops_over counts every op beyond tolerance).
  std::vector<MetricDelta> metrics;
  int64_t ops_a = 0, ops_b = 0, ops_matched = 0, ops_over = 0;
  bool within_tolerance = true;
};

Result<DiffReport> DiffTraces(const Trace& a, const Trace& b, const Tolerances& tolerances);
// `a`/`b` are summary objects; `source_a`/`source_b` name them in errors.
Result<DiffReport> DiffSummaries(const nlohmann::json& a, const nlohmann::json& b,
                                 const Tolerances& tolerances, const std::string& source_a,
                                 const std::string& source_b);
// `max_metrics` bounds the per-op entries written (the counts stay exact).
nlohmann::json DiffToJson(const DiffReport& report, size_t max_metrics = 1000);

}  // namespace shardscope
