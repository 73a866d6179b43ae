// The fit advisor: when a job does not fit its GPUs, or fits with less headroom than a margin,
// says by how much and why (fit_cause.h) and lists the nearest changes that fit, each one
// re-simulated.
//
// Contents:
//   FitVerdict         fits | thin_margin | does_not_fit
//   FitAdviceOptions   margin, how many suggestions, a bound on the simulations
//   FitSuggestion      one variant of the job: its --set flags and its predicted figures
//   FitAdvice          verdict, cause, suggestions (fastest first), how many variants ran
//   JudgeFit           a summary + margin → verdict
//   AdviseFit          scenario + its simulation → advice
//   FitAdviceToJson    the summary's "advice" object (formats: docs/summary.md)
//   FormatFitAdvice    the block `simulate` prints
//
// Variants are made with the scenario's own override path (ParseScenario with `--set
// path=value` strings applied to the resolved scenario), so each one is a valid scenario the
// user reproduces with the printed flags. The variants: activation checkpoint modes; local
// batch split into gradient-accumulation steps (same global batch) crossed with those modes;
// and the caching allocator's expandable segments, loss parallelism (under tp), wider sharding
// (dp_replicate folded into dp_shard), reshard_after_forward and CPU offload, each crossed
// with the modes. Only when none of those fits with the margin at half the job's tokens/s/GPU
// or more: twice the nodes (dp_shard doubled; the global batch doubles), crossed with the
// modes. Every variant is simulated (peaks only); those that fit are kept and ranked by
// tokens/s/GPU, one or two per idea (variants differing only in the checkpoint mode are one
// idea).
//
// Example:
//   SS_ASSIGN_OR_RETURN(Simulation sim, SimulateScenario(sc, {}));
//   if (JudgeFit(sim.summary, 2.0) != FitVerdict::kFits) {
//     SS_ASSIGN_OR_RETURN(FitAdvice advice, AdviseFit(sc, sim, {}));
//     fmt::print("{}", FormatFitAdvice(advice));
//   }
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/scenario.h"
#include "core/util/status.h"
#include "sim/advisor/fit_cause.h"
#include "sim/engine/simulator.h"

namespace shardscope::sim {

// Headroom (usable − peak reserved) under which a job that fits is still "thin": the caching
// allocator's reserve is an estimate, and a real step's fragmentation varies. `simulate`'s fit
// advice and `recommend`'s plans use it unless --margin says otherwise.
inline constexpr double kDefaultMarginGib = 2.0;

// The one rule of "thin": a job that fits with less headroom (usable − peak reserved) than the
// margin; never when the memory is unlimited (usable <= 0). JudgeFit, sweep and recommend ask it.
inline bool ThinHeadroom(double usable_gib, double headroom_gib, double margin_gib) {
  return usable_gib > 0 && headroom_gib < margin_gib;
}

enum class FitVerdict { kFits, kThinMargin, kDoesNotFit };
std::string_view FitVerdictName(FitVerdict v);  // "fits" | "thin_margin" | "does_not_fit"

struct FitAdviceOptions {
  double margin_gib = kDefaultMarginGib;  // headroom (usable − peak reserved) below: "thin"
  int max_suggestions = 5;                // shown; the rest are counted
  int max_simulations = 64;               // bound on the variants simulated
};

struct FitSuggestion {
  std::vector<std::string> sets;  // "path=value", in the order to pass them as --set
  std::string change;             // what changes, in words
  double peak_reserved_gib = 0;
  double peak_allocated_gib = 0;
  double headroom_gib = 0;  // usable − peak reserved
  double tokens_per_s_per_gpu = 0;
  double step_time_s = 0;
  bool thin = false;  // fits, but with less headroom than the margin
};

struct FitAdvice {
  FitVerdict verdict = FitVerdict::kFits;
  double margin_gib = 0;
  double usable_gib = 0;
  double peak_reserved_gib = 0;
  double over_gib = 0;              // peak reserved − usable (negative: headroom)
  double tokens_per_s_per_gpu = 0;  // of the job as given, to compare the suggestions with
  FitCause cause;
  std::vector<FitSuggestion> suggestions;  // fastest first, at most max_suggestions
  int variants_simulated = 0;
  int variants_fitting = 0;  // including those not shown
  int variants_invalid = 0;  // rejected by the scenario checks or the simulator
};

FitVerdict JudgeFit(const Summary& summary, double margin_gib);

// `sim` is SimulateScenario(scenario). Errors only for a negative margin; a variant that is
// not a valid scenario is counted in variants_invalid and skipped.
Result<FitAdvice> AdviseFit(const Scenario& scenario, const Simulation& sim,
                            const FitAdviceOptions& options = {});

nlohmann::json FitAdviceToJson(const FitAdvice& advice);
std::string FormatFitAdvice(const FitAdvice& advice);

}  // namespace shardscope::sim
