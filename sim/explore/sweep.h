// A sweep: every combination of `--vary` axes over one scenario, simulated on all cores, the
// invalid ones counted by reason, those that fit ranked, and the Pareto front of cost against
// time marked.
//
// Contents:
//   Objective          throughput | cost | memory | time (what the ranking sorts by)
//   SweepOptions       threads, objective, prices, progress callback
//   VariantFigures     the predicted figures of one variant that ran
//   SweepResult        per-combination outcome, counts by reason, ranking, Pareto front
//   SweepBase / LoadSweepBase / DefaultSweepBase  the scenario document variants start from
//   RunVariants        the engine: a base scenario + a list of override sets → SweepResult
//   RunSweep           the axes' combinations through RunVariants
//   DealCombinations   which process of a split sweep runs each combination
//   CheckAxisValues    a --vary value that no combination parses: an error before any run
//   ValuesNeverValid   the values that ran in no combination (each invalid), for notes
//   UnpricedNotes      the GPUs of fitting variants the price table lacks, for notes
//   UnvalidatedNote    the GPUs of fitting variants no measured run checks, for a note
//   FinishSweep        counts, ranking and Pareto front of evaluated variants (RunVariants's
//                      last step; a sweep split over MPI ranks runs it on the gathered variants)
//   RankedFigure       a figure as rankings compare it (6 significant digits)
//   ObjectiveKey       the objective's key of one variant (lower is better)
//   RankVariants / ParetoFront   the ordering and the front, on their own (tests, recommend)
//
// Each variant is the base scenario document with its `path=value` overrides applied by the
// scenario's own ParseScenario (what `--set` does), so a variant's flags reproduce it.
// Variants run in parallel (oneTBB), each one single-threaded and deterministic, and results are
// stored by index: the output is the same whatever the thread count. Ranking ties break on the
// combination index.
//
// Time on the Pareto front is wall time per million tokens (1e6 / (tokens/s/GPU · GPUs)), not
// step time: variants with different batches or GPU counts have steps of different sizes.
//
// Example:
//   SS_ASSIGN_OR_RETURN(SweepBase base, LoadSweepBase("job.json", {}));
//   SS_ASSIGN_OR_RETURN(VaryAxis tp, ParseVary("parallelism.tp=1,2,4,8"));
//   SS_ASSIGN_OR_RETURN(SweepResult r, RunSweep(base, {tp}, {}));
//   for (int i : r.ranking) Use(r.variants[i].figures.tokens_per_s_per_gpu);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/scenario.h"
#include "core/model/model_cache.h"
#include "core/plan/plan_cache.h"
#include "core/schedule/step_basis.h"
#include "core/util/status.h"
#include "sim/explore/price_table.h"
#include "sim/explore/vary.h"

namespace shardscope::sim {

// throughput: tokens/s/GPU, highest first; cost: USD per million tokens, lowest first; memory:
// peak reserved, lowest first; time: wall seconds per million tokens (the whole cluster).
enum class Objective { kThroughput, kCost, kMemory, kTime };
Result<Objective> ParseObjective(std::string_view name);  // error names --objective
std::string_view ObjectiveName(Objective o);  // "throughput" | "cost" | "memory" | "time"

// More is refused: each thread holds a simulation's working set (tens of MB for a long
// pipeline), and 20 million of them crashed the thread library (a hostile-input probe).
inline constexpr int kMaxThreads = 1024;

struct SweepOptions {
  int threads = 0;  // 0: every core; at most kMaxThreads
  Objective objective = Objective::kThroughput;
  const PriceTable* prices = nullptr;  // null: DefaultPriceTable()
  // false: variants with many micro-batches are extrapolated from their steady state
  // (sim/engine/steady_state.h); true: every step simulated whole.
  bool exact = false;
  // Called now and then (at most every 100 ms, and once at the end) with variants done / total,
  // from whichever thread finished one; calls never overlap.
  std::function<void(int64_t done, int64_t total)> progress;
  // The variants' model trees, loaded once per model and build options (not owned): a caller
  // running several sweeps of one model shares one. Null: each RunVariants keeps its own.
  ModelTreeCache* trees = nullptr;
  // The variants' plans, built once per tree and plan inputs (core/plan/plan_cache.h; not
  // owned): a caller running several sweeps of one model shares one. Null: each RunVariants
  // keeps its own.
  PlanCache* plans = nullptr;
  // The variants' step bases, made once per tree, plan and micro-batch shape
  // (core/schedule/step_basis.h; not owned): a caller running several sweeps of one model shares
  // one. Null: each RunVariants keeps its own.
  StepBasisCache* bases = nullptr;
  // true: variants that differ only in what the cost model prices (cluster.gpu,
  // cluster.cost_model) run together and share one plan and schedules per group
  // (sim/engine/schedule_memo.h), a group on one thread (with fewer groups than threads, the
  // largest are halved until every thread has one); the results are the same either way
  // (false: benchmarks and tests compare).
  bool share_schedules = true;
  // true: each variant that runs also gets VariantFigures::fsdp_independent_floor_s, which
  // recommend's refinement reads (a pass over the schedule's ops that plain sweeps skip).
  bool fsdp_independent_floor = false;
};

// The document every variant starts from: the scenario as written (so `dp_shard: -1` and
// omitted sizes are derived again for each variant) and the --set flags applied before the
// variant's own.
struct SweepBase {
  nlohmann::json doc;
  std::string source;    // names it in errors
  std::string base_dir;  // resolves relative model / cost-model paths
  std::vector<std::string> sets;
};
// Reads the scenario file and checks that it (with `sets`) is valid on its own.
Result<SweepBase> LoadSweepBase(const std::string& path, const std::vector<std::string>& sets);
// The built-in default scenario (sim/engine/simulator.h) as a base, relative paths resolved from
// the working directory.
Result<SweepBase> DefaultSweepBase(const std::vector<std::string>& sets);

struct VariantFigures {
  std::string gpu;  // catalog name
  int world_size = 0;
  double tokens_per_s_per_gpu = 0;
  double step_time_s = 0;
  double peak_reserved_gib = 0;
  double usable_gib = 0;
  double headroom_gib = 0;  // usable − peak reserved
  double exposed_comm_s = 0;
  double compute_s = 0;
  double idle_s = 0;  // waiting: pipeline bubbles, stragglers
  // The least step time other FSDP settings could give the same job (compute_floor.h), with
  // SweepOptions::fsdp_independent_floor (else 0); not written to the outputs: recommend's
  // refinement reads it.
  double fsdp_independent_floor_s = 0;
  double mfu = 0;
  std::optional<double> usd_per_gpu_hour;   // from the price table
  std::optional<double> cost_per_mtok_usd;  // USD per million tokens
  double s_per_mtok = 0;                    // wall seconds per million tokens, whole cluster
};

enum class VariantOutcome { kFits, kDoesNotFit, kInvalid };

struct VariantResult {
  std::vector<std::string> sets;  // path=value, in axis order
  VariantOutcome outcome = VariantOutcome::kInvalid;
  std::string reason;   // kInvalid: the field the error named (or "simulate"); kDoesNotFit: ""
  std::string message;  // kInvalid: the whole error
  // kFits and kDoesNotFit; a variant that does not fit by its schedule alone was not run
  // (SimulateOptions::stop_when_not_fitting): it has gpu, world size and usable memory, and as
  // peak reserved the least it holds (Simulation::floor_over_capacity).
  VariantFigures figures;
  bool pareto = false;
};

// Whether a variant fits with less headroom than `margin_gib` (ThinHeadroom, fit_advisor.h).
bool IsThin(const VariantResult& v, double margin_gib);

struct SweepResult {
  std::vector<VariantResult> variants;  // in combination order
  int64_t fitting = 0;
  int64_t not_fitting = 0;
  int64_t invalid = 0;
  std::map<std::string, int64_t> invalid_by_reason;
  std::vector<int> ranking;  // indices of the fitting variants, best first
  std::vector<int> pareto;   // indices on the front, fastest first
  std::string prices_source;
};

Result<SweepResult> RunVariants(const SweepBase& base, std::vector<std::vector<std::string>> sets,
                                const SweepOptions& options);
Result<SweepResult> RunSweep(const SweepBase& base, const std::vector<VaryAxis>& axes,
                             const SweepOptions& options);
// Which of `parts` processes (a sweep under mpirun) runs each of the `count` combinations of
// `axes`: with `share` (SweepOptions::share_schedules), the variants that would share
// schedules stay together in one part, so splitting a sweep keeps its sharing (unless there are
// fewer groups than parts: the largest are halved until every part has work, as RunVariants
// does for its threads); each group, in order of its first variant, goes to the part with the
// fewest variants so far (ties: the lowest), so groups of one are dealt round-robin. A function
// of its arguments alone: every rank computes the same deal.
std::vector<int> DealCombinations(const std::vector<VaryAxis>& axes, int64_t count, int parts,
                                  bool share);
// InvalidInput naming the --vary flag and the value when one value of an axis fails
// ParseScenario (a type, a range, a size that cannot divide) with every combination of the
// other axes, with the first combination's error: a typo (`parallelism.tp=1,abc`) is refused
// before anything runs. A parse costs tens of microseconds; the axes are usually settled by
// their diagonal (as many parses as the longest axis has values), and a value that fails is
// tried against the other axes' combinations until one parses. `reads`, when given, gets the
// files the parsed combinations read beside the scenario (ScenarioInputFiles, each once): every
// model or calibration file an axis value or the base names, when that value parses at all,
// so that no output of the sweep replaces one.
Status CheckAxisValues(const SweepBase& base, const std::vector<VaryAxis>& axes,
                       std::vector<NamedPath>* reads = nullptr);

// For `result` of RunSweep over `axes` (variants in combination order): one line per axis value
// whose every combination was invalid (it parsed, but the plan or the simulation refused it),
// "parallelism.tp=16 was invalid in every combination; the first (...): <error>".
// One note per GPU that fitting `variants` run on and the price table (`prices_source`) has no
// price for: those variants have no cost, rank last by cost and are not on the Pareto front.
std::vector<std::string> UnpricedNotes(const std::vector<VariantResult>& variants,
                                       const std::string& prices_source);

// The GPUs fitting `variants` run on whose predictions no measured run checks (the catalog's
// validated_by is empty: sim/hardware/catalog.json, bench/validate), named in one note; empty
// when there are none. Which GPU to buy should not rest on them unremarked.
std::string UnvalidatedNote(const std::vector<VariantResult>& variants);

std::vector<std::string> ValuesNeverValid(const SweepResult& result,
                                          const std::vector<VaryAxis>& axes);

// Fills the counts, `ranking`, `pareto` and each variant's `pareto` of `result` from its
// variants (which it resets first).
void FinishSweep(Objective objective, SweepResult* result);

// A figure as rankings and the Pareto front compare it: rounded to 6 significant digits. Two
// settings that change nothing can still give figures a nanosecond of a second-long step apart
// (the default job without checkpointing, prefetch depth 1 and 2: 1.060085948 and 1.060085947 s),
// which must not decide the order: equal once rounded, the next criterion does. Rounding rather
// than a tolerance keeps the order transitive. 0, infinities and NaN pass unchanged.
double RankedFigure(double figure);
// The objective's key of a variant that ran, lower is better (a missing cost sorts last), its
// figure rounded by RankedFigure: what RankVariants sorts by and recommend prunes against
// (recommend rounds its bounds the same way, which keeps a bound no higher than its key).
double ObjectiveKey(const VariantFigures& f, Objective objective);
// Fitting variants best first under `objective`; ties (RankedFigure) by throughput, then by
// peak reserved memory (more headroom first), then by index.
std::vector<int> RankVariants(const std::vector<VariantResult>& variants, Objective objective);
// Fitting variants with a cost that no other beats on both cost and time per million tokens
// (RankedFigure), fastest first; of variants equal on both, the one with less peak reserved
// memory (then the first by index).
std::vector<int> ParetoFront(const std::vector<VariantResult>& variants);

}  // namespace shardscope::sim
