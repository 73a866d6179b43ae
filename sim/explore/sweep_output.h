// What a sweep prints and writes: the ranked table, CSV and JSON (formats in docs/sweep.md).
//
// Contents:
//   SweepReport        what the writers need beside the result (scenario, axes, objective)
//   FormatSweepTable   counts by outcome and reason, then the top K fitting variants
//   SweepToCsv         one row per fitting variant, ranked, every axis a column
//   SweepToJson        shardscope-sweep/1: counts, reasons, ranked variants, the Pareto front
//   ShortSet           "parallelism.tp=4" → "tp=4" (the table's variant column)
//
// Nothing here depends on the thread count or the clock, so equal results print equal bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/advisor/fit_advisor.h"
#include "sim/explore/sweep.h"

namespace shardscope::sim {

struct SweepReport {
  std::string scenario;                // the scenario's source
  std::vector<std::string> base_sets;  // the sweep's own --set flags (path=value), in order
  std::vector<std::string> paths;      // the axes' paths, in order
  Objective objective = Objective::kThroughput;
  int top = 20;  // table rows (0: all)
  // Fitting variants with less headroom than this are marked "thin" (peak reserved is an
  // estimate): a `!` after the table's headroom, "thin": true in the JSON. They stay ranked.
  double margin_gib = kDefaultMarginGib;
  // What the user should know beside the ranking (ValuesNeverValid's lines): printed on stderr
  // after the table, and the JSON's "notes".
  std::vector<std::string> notes;
};

std::string FormatSweepTable(const SweepResult& result, const SweepReport& report);
std::string SweepToCsv(const SweepResult& result, const SweepReport& report);
nlohmann::json SweepToJson(const SweepResult& result, const SweepReport& report);
std::string ShortSet(const std::string& set);

// A fitting variant's figures as the JSON reports write them (gpu, gpus, tokens_per_s_per_gpu,
// step_time_s, ..., pareto, thin): a sweep's variants and recommend's plans alike.
nlohmann::json VariantFiguresJson(const VariantResult& v, double margin_gib);

// One row of the ranked table (shared with `recommend`): the header, and a variant's cells.
std::string RankedTableHeader();
// `thin`: the variant fits with less headroom than the margin (a `!` after its headroom);
// `rank` 0: unranked, printed `-`.
std::string RankedTableRow(int rank, const VariantResult& v, const std::string& label,
                           bool thin = false);
// One line of a Pareto front's list (shared with `recommend`): time and cost per million tokens,
// the variant's label, and the thin-margin mark (the fastest point is often the tightest fit).
std::string ParetoFrontLine(const VariantResult& v, const std::string& label, double margin_gib);

}  // namespace shardscope::sim
