#include "sim/explore/sweep.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <optional>
#include <queue>
#include <set>
#include <thread>

#include "core/util/count_text.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/units.h"
#include "sim/advisor/fit_advisor.h"
#include "sim/engine/compute_floor.h"
#include "sim/engine/simulator.h"
#include "sim/hardware/hardware.h"

namespace shardscope::sim {
namespace {

// The field an error names: "job.json: parallelism.tp: expected ..." → "parallelism.tp",
// "parallelism.dp_shard = 8: world size ..." → "parallelism.dp_shard". Messages that do not
// start with a key path count under `fallback`.
std::string ReasonOf(const std::string& message, const std::string& source,
                     const std::string& fallback) {
  std::string_view m = message;
  if (!source.empty() && m.rfind(source + ": ", 0) == 0) m.remove_prefix(source.size() + 2);
  size_t n = 0;
  while (n < m.size() &&
         (std::islower(static_cast<unsigned char>(m[n])) ||
          std::isdigit(static_cast<unsigned char>(m[n])) || m[n] == '_' || m[n] == '.')) {
    ++n;
  }
  if (n == 0 || n == m.size() || (m[n] != ':' && m[n] != ' ')) return fallback;
  return std::string(m.substr(0, n));
}

// The base with the --set flags, then the variant's own overrides: what its flags reproduce.
Result<Scenario> ParseVariant(const SweepBase& base, const std::vector<std::string>& sets) {
  std::vector<std::string> overrides = base.sets;
  overrides.insert(overrides.end(), sets.begin(), sets.end());
  return ParseScenario(base.doc, base.source, base.base_dir, overrides);
}

VariantResult Evaluate(const SweepBase& base, std::vector<std::string> sets,
                       const PriceTable& prices, bool exact, bool fsdp_independent_floor,
                       ModelTreeCache& trees, PlanCache& plans, StepBasisCache& bases,
                       ScheduleMemo* schedules) {
  VariantResult r;
  r.sets = std::move(sets);
  Result<Scenario> variant = ParseVariant(base, r.sets);
  if (!variant.ok()) {
    r.message = variant.status().message();
    r.reason = ReasonOf(r.message, base.source, "scenario");
    return r;
  }
  SimulateOptions peaks_only;
  peaks_only.keep_memory_samples = false;
  peaks_only.exact = exact;
  // Only the variants that fit are ranked: one that holds more than the capacity whatever
  // the timing is not run (43% of the 70B grid's time, bench/explore_benchmark.cpp).
  peaks_only.stop_when_not_fitting = true;
  peaks_only.figures_only = true;  // what VariantFigures reads, no more
  peaks_only.threads = 1;          // the variants run in parallel
  peaks_only.trees = &trees;
  peaks_only.plans = &plans;
  peaks_only.bases = &bases;
  peaks_only.schedules = schedules;
  Result<Simulation> run = SimulateScenario(*variant, peaks_only);
  if (!run.ok()) {
    r.message = run.status().message();
    r.reason = ReasonOf(r.message, base.source, "simulate");
    return r;
  }
  const Summary& s = run->summary;
  VariantFigures& f = r.figures;
  f.gpu = run->gpu_name;
  f.world_size = s.world_size;
  if (run->floor_over_capacity) {
    f.usable_gib = s.usable_gib;
    f.peak_reserved_gib = ToGiB(run->floor_over_capacity->bytes);
    f.headroom_gib = f.usable_gib - f.peak_reserved_gib;
    r.outcome = VariantOutcome::kDoesNotFit;
    return r;
  }
  f.tokens_per_s_per_gpu = s.tokens_per_s_per_gpu;
  f.step_time_s = s.step_time_s;
  f.peak_reserved_gib = s.peak_memory_reserved_gib;
  f.usable_gib = s.usable_gib;
  f.headroom_gib = s.usable_gib - s.peak_memory_reserved_gib;
  f.exposed_comm_s = s.exposed_comm_s;
  f.compute_s = s.compute_s;
  f.idle_s = s.idle_s;
  if (fsdp_independent_floor) f.fsdp_independent_floor_s = FsdpIndependentFloorSeconds(*run);
  f.mfu = s.mfu;
  f.usd_per_gpu_hour = prices.PerGpuHour(f.gpu);
  if (f.usd_per_gpu_hour) {
    f.cost_per_mtok_usd = CostPerMillionTokens(*f.usd_per_gpu_hour, f.tokens_per_s_per_gpu);
  }
  const double cluster_tps = f.tokens_per_s_per_gpu * f.world_size;
  f.s_per_mtok = cluster_tps > 0 ? 1e6 / cluster_tps : 0;
  r.outcome = s.fits ? VariantOutcome::kFits : VariantOutcome::kDoesNotFit;
  return r;
}

// Variants whose overrides differ only in what the cost model prices share their plan and
// schedules (schedule_memo.h): such a group runs on one thread, one variant after another, with
// one memo. The overrides only group them; the memo compares the resolved scenarios, so a
// group whose scenarios differ after all (an override the key cannot see through) still gets
// the right schedules, each built anew.
struct RunOrder {
  std::vector<int64_t> variants;  // every variant once, each group's together
  std::vector<size_t> starts;     // where each group begins in `variants`, then its size
};
// Groups of equal `keys` (one per variant) in order of their first variant.
RunOrder GroupByKey(const std::vector<size_t>& keys) {
  const size_t n = keys.size();
  std::vector<std::pair<size_t, int64_t>> keyed(n);  // (key, variant)
  for (size_t i = 0; i < n; ++i) keyed[i] = {keys[i], static_cast<int64_t>(i)};
  // By key, then variant: a group's first entry is its first variant.
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::pair<int64_t, size_t>> firsts;  // (first variant, where the group begins)
  for (size_t i = 0; i < n; ++i) {
    if (i == 0 || keyed[i].first != keyed[i - 1].first) firsts.emplace_back(keyed[i].second, i);
  }
  std::sort(firsts.begin(), firsts.end());
  RunOrder order;
  order.variants.reserve(n);
  for (const auto& [first, begin] : firsts) {
    order.starts.push_back(order.variants.size());
    for (size_t i = begin; i < n && keyed[i].first == keyed[begin].first; ++i) {
      order.variants.push_back(keyed[i].second);
    }
  }
  order.starts.push_back(n);
  return order;
}

// Fewer groups than `parts` (threads or ranks) would leave some idle while one runs a whole
// group (a single mesh on four GPUs): the largest group is halved until every part has one or
// no group has two variants. A half shares within itself.
void FillParts(RunOrder& order, int parts) {
  while (order.starts.size() >= 2 && static_cast<int64_t>(order.starts.size()) - 1 < parts) {
    size_t largest = 0;
    for (size_t g = 1; g + 1 < order.starts.size(); ++g) {
      if (order.starts[g + 1] - order.starts[g] >
          order.starts[largest + 1] - order.starts[largest]) {
        largest = g;
      }
    }
    const size_t size = order.starts[largest + 1] - order.starts[largest];
    if (size < 2) return;
    order.starts.insert(order.starts.begin() + static_cast<std::ptrdiff_t>(largest) + 1,
                        order.starts[largest] + (size + 1) / 2);
  }
}

// The groups of `count` variants whose overrides `sets_of(i)` gives (a reference or a value),
// for `parts` threads or ranks; without `share`, one group per variant.
template <typename SetsOf>
RunOrder PricingGroups(int64_t count, const SetsOf& sets_of, bool share, int parts) {
  std::vector<size_t> keys(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    keys[static_cast<size_t>(i)] =
        share ? std::hash<std::string>{}(ScheduleMemo::OverridesKey(sets_of(i)))
              : static_cast<size_t>(i);
  }
  RunOrder order = GroupByKey(keys);
  FillParts(order, parts);
  return order;
}

}  // namespace

bool IsThin(const VariantResult& v, double margin_gib) {
  return v.outcome == VariantOutcome::kFits &&
         ThinHeadroom(v.figures.usable_gib, v.figures.headroom_gib, margin_gib);
}

double RankedFigure(double figure) {
  if (figure == 0 || !std::isfinite(figure)) return figure;
  constexpr int kDigits = 6;
  const double scale = std::pow(10.0, kDigits - 1 - std::floor(std::log10(std::fabs(figure))));
  return std::round(figure * scale) / scale;
}

double ObjectiveKey(const VariantFigures& f, Objective objective) {
  switch (objective) {
    case Objective::kThroughput:
      return RankedFigure(-f.tokens_per_s_per_gpu);
    case Objective::kCost:
      return f.cost_per_mtok_usd ? RankedFigure(*f.cost_per_mtok_usd) : HUGE_VAL;
    case Objective::kMemory:
      return RankedFigure(f.peak_reserved_gib);
    case Objective::kTime:
      return RankedFigure(f.s_per_mtok);
  }
  return 0;
}

namespace {
// The base must stand on its own: its errors are the user's, not one variant's.
Result<SweepBase> CheckedBase(SweepBase base) {
  Result<Scenario> check = ParseScenario(base.doc, base.source, base.base_dir, base.sets);
  if (!check.ok()) return check.status();
  return base;
}
}  // namespace

Result<SweepBase> LoadSweepBase(const std::string& path, const std::vector<std::string>& sets) {
  SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  SweepBase base;
  SS_ASSIGN_OR_RETURN(base.doc, ParseJsonInput(text, path));
  base.source = path;
  base.base_dir = std::filesystem::path(path).parent_path().string();
  base.sets = sets;
  return CheckedBase(std::move(base));
}

Result<SweepBase> DefaultSweepBase(const std::vector<std::string>& sets) {
  ScenarioDocument fallback = DefaultScenarioDocument();
  SweepBase base;
  base.doc = std::move(fallback.doc);
  base.source = std::move(fallback.source);
  base.base_dir = std::move(fallback.base_dir);
  base.sets = sets;
  return CheckedBase(std::move(base));
}

Result<Objective> ParseObjective(std::string_view name) {
  for (Objective o :
       {Objective::kThroughput, Objective::kCost, Objective::kMemory, Objective::kTime}) {
    if (ObjectiveName(o) == name) return o;
  }
  return InvalidInput(
      fmt::format("--objective {}: expected throughput, cost, memory or time", name));
}

std::string_view ObjectiveName(Objective o) {
  switch (o) {
    case Objective::kThroughput:
      return "throughput";
    case Objective::kCost:
      return "cost";
    case Objective::kMemory:
      return "memory";
    case Objective::kTime:
      return "time";
  }
  return "?";
}

namespace {
// A variant's sort keys, each figure rounded once (RankedFigure); equal keys sort by index.
using RankedKeys = std::array<double, 3>;
}  // namespace

std::vector<int> RankVariants(const std::vector<VariantResult>& variants, Objective objective) {
  // The objective, then throughput, so equal-memory or equal-cost variants show the faster one
  // first; then memory, so of equally fast ones the one with more headroom.
  std::vector<std::pair<RankedKeys, int>> keyed;
  for (int i = 0; i < static_cast<int>(variants.size()); ++i) {
    if (variants[i].outcome != VariantOutcome::kFits) continue;
    const VariantFigures& f = variants[i].figures;
    keyed.push_back({{ObjectiveKey(f, objective), RankedFigure(-f.tokens_per_s_per_gpu),
                      RankedFigure(f.peak_reserved_gib)},
                     i});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> out;
  out.reserve(keyed.size());
  for (const auto& [keys, i] : keyed) out.push_back(i);
  return out;
}

std::vector<int> ParetoFront(const std::vector<VariantResult>& variants) {
  // Fastest first (ties: cheaper, then less memory, then index); a variant is on the front when
  // it is cheaper than every faster one.
  std::vector<std::pair<RankedKeys, int>> keyed;
  for (int i = 0; i < static_cast<int>(variants.size()); ++i) {
    const VariantFigures& f = variants[i].figures;
    if (variants[i].outcome != VariantOutcome::kFits || !f.cost_per_mtok_usd ||
        !(f.s_per_mtok > 0)) {
      continue;
    }
    keyed.push_back({{RankedFigure(f.s_per_mtok), RankedFigure(*f.cost_per_mtok_usd),
                      RankedFigure(f.peak_reserved_gib)},
                     i});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> front;
  double best_cost = HUGE_VAL;
  for (const auto& [keys, i] : keyed) {
    if (keys[1] < best_cost) {
      front.push_back(i);
      best_cost = keys[1];
    }
  }
  return front;
}

Result<SweepResult> RunVariants(const SweepBase& base, std::vector<std::vector<std::string>> sets,
                                const SweepOptions& options) {
  if (options.threads < 0 || options.threads > kMaxThreads) {
    return InvalidInput(
        fmt::format("--threads {}: expected 0 (all cores) to {}", options.threads, kMaxThreads));
  }
  const PriceTable& prices = options.prices != nullptr ? *options.prices : DefaultPriceTable();
  const int64_t total = static_cast<int64_t>(sets.size());
  SweepResult result;
  result.prices_source = prices.source;
  result.variants.resize(sets.size());
  ModelTreeCache own_trees;
  ModelTreeCache& trees = options.trees != nullptr ? *options.trees : own_trees;
  PlanCache own_plans;
  PlanCache& plans = options.plans != nullptr ? *options.plans : own_plans;
  StepBasisCache own_bases;
  StepBasisCache& bases = options.bases != nullptr ? *options.bases : own_bases;

  std::atomic<int64_t> done{0};
  std::mutex progress_mu;
  auto last_report = std::chrono::steady_clock::now();
  auto finished_one = [&] {
    const int64_t d = ++done;
    if (!options.progress) return;
    std::unique_lock<std::mutex> lock(progress_mu, std::try_to_lock);
    if (!lock.owns_lock()) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report < std::chrono::milliseconds(100)) return;
    last_report = now;
    options.progress(d, total);
  };
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // More threads than cores is allowed (tests compare 1 and 4 on a 2-core machine).
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism, threads);
  tbb::task_arena arena(threads);
  const RunOrder order = PricingGroups(
      total, [&](int64_t i) -> const std::vector<std::string>& { return sets[i]; },
      options.share_schedules, threads);
  const int64_t num_groups = static_cast<int64_t>(order.starts.size()) - 1;
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, num_groups, 1),
                      [&](const tbb::blocked_range<int64_t>& range) {
                        for (int64_t g = range.begin(); g != range.end(); ++g) {
                          const size_t begin = order.starts[g], end = order.starts[g + 1];
                          ScheduleMemo memo;
                          ScheduleMemo* shared = end - begin > 1 ? &memo : nullptr;
                          for (size_t k = begin; k < end; ++k) {
                            const int64_t i = order.variants[k];
                            if (shared != nullptr && k + 1 == end) memo.HandOverNext();
                            result.variants[i] = Evaluate(
                                base, std::move(sets[i]), prices, options.exact,
                                options.fsdp_independent_floor, trees, plans, bases, shared);
                            finished_one();
                          }
                        }
                      });
  });
  if (options.progress) options.progress(total, total);
  FinishSweep(options.objective, &result);
  return result;
}

std::vector<int> DealCombinations(const std::vector<VaryAxis>& axes, int64_t count, int parts,
                                  bool share) {
  std::vector<int> part_of(static_cast<size_t>(count), 0);
  if (parts <= 1) return part_of;
  const RunOrder order = PricingGroups(
      count, [&](int64_t i) { return CombinationSets(axes, i); }, share, parts);
  // Each group, in order, to the part with the fewest variants so far (ties: the lowest part):
  // groups of one are dealt round-robin, and a group is split only to give every part work.
  using Load = std::pair<int64_t, int>;  // (variants, part)
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> loads;
  for (int p = 0; p < parts; ++p) loads.push({0, p});
  for (size_t g = 0; g + 1 < order.starts.size(); ++g) {
    auto [load, p] = loads.top();
    loads.pop();
    for (size_t k = order.starts[g]; k < order.starts[g + 1]; ++k) {
      part_of[static_cast<size_t>(order.variants[k])] = p;
    }
    loads.push({load + static_cast<int64_t>(order.starts[g + 1] - order.starts[g]), p});
  }
  return part_of;
}

void FinishSweep(Objective objective, SweepResult* r) {
  r->fitting = r->not_fitting = r->invalid = 0;
  r->invalid_by_reason.clear();
  for (VariantResult& v : r->variants) {
    v.pareto = false;
    switch (v.outcome) {
      case VariantOutcome::kFits:
        ++r->fitting;
        break;
      case VariantOutcome::kDoesNotFit:
        ++r->not_fitting;
        break;
      case VariantOutcome::kInvalid:
        ++r->invalid;
        ++r->invalid_by_reason[v.reason];
        break;
    }
  }
  r->ranking = RankVariants(r->variants, objective);
  r->pareto = ParetoFront(r->variants);
  for (int i : r->pareto) r->variants[i].pareto = true;
}

Status CheckAxisValues(const SweepBase& base, const std::vector<VaryAxis>& axes,
                       std::vector<NamedPath>* reads) {
  SS_ASSIGN_OR_RETURN(const int64_t count, CombinationCount(axes));
  const size_t n = axes.size();
  auto note_reads = [&](const Scenario& sc) {
    if (reads == nullptr) return;
    for (NamedPath& f : ScenarioInputFiles(sc)) {
      const bool known = std::any_of(reads->begin(), reads->end(),
                                     [&](const NamedPath& r) { return r.path == f.path; });
      if (!known) reads->push_back(std::move(f));
    }
  };
  if (n == 0) {
    // The base alone is the one variant: its error is the sweep's to report.
    if (Result<Scenario> sc = ParseVariant(base, {}); sc.ok()) note_reads(*sc);
    return Status::Ok();
  }
  // Combination index = Σ value index · stride, the last axis fastest (CombinationSets).
  std::vector<int64_t> size(n), stride(n, 1);
  for (size_t a = 0; a < n; ++a) size[a] = static_cast<int64_t>(axes[a].values.size());
  for (size_t a = n; a-- > 1;) stride[a - 1] = stride[a] * size[a];
  std::vector<std::vector<char>> parses(n);
  for (size_t a = 0; a < n; ++a) parses[a].assign(static_cast<size_t>(size[a]), 0);
  bool any_parsed = false;
  auto parse = [&](int64_t index) {
    Result<Scenario> sc = ParseVariant(base, CombinationSets(axes, index));
    // The GPU too, as the simulator looks it up: a name the catalog lacks (`h100` for
    // h100-sxm), or more GPUs per node than its node holds, ran and only left a note.
    if (sc.ok()) {
      if (Result<Hardware> hw =
              LookupHardware(sc->cluster.gpu, sc->cluster.gpus_per_node, sc->cluster.nodes);
          !hw.ok()) {
        return hw.status().WithContext(sc->source + ": cluster.gpu");
      }
    }
    if (sc.ok()) {
      any_parsed = true;
      note_reads(*sc);
      for (size_t a = 0; a < n; ++a)
        parses[a][static_cast<size_t>(index / stride[a] % size[a])] = 1;
    }
    return sc.status();
  };
  // First the diagonal (value k of every axis, modulo its size): where every value is valid,
  // as in nearly every sweep, that settles them all in as many parses as the longest axis has
  // values.
  const int64_t longest = *std::max_element(size.begin(), size.end());
  for (int64_t k = 0; k < longest; ++k) {
    int64_t index = 0;
    for (size_t a = 0; a < n; ++a) index += k % size[a] * stride[a];
    (void)parse(index);
  }
  // Then each value not settled: its combinations in order, until one parses. The first value
  // that none does is reported, unless no combination parses at all (the values of the first
  // axis cover every combination): then the base or the axes together are wrong, not a value.
  struct Failure {
    size_t axis = 0;
    int64_t value = 0;
    int64_t index = -1;  // its first combination
    Status status;
  };
  std::optional<Failure> failure;
  for (size_t a = 0; a < n && !(failure && any_parsed); ++a) {
    for (int64_t j = 0; j < size[a] && !(failure && any_parsed); ++j) {
      Failure f{a, j, -1, Status::Ok()};
      for (int64_t r = 0; r < count / size[a] && !parses[a][static_cast<size_t>(j)]; ++r) {
        const int64_t index = r / stride[a] * stride[a] * size[a] + j * stride[a] + r % stride[a];
        Status s = parse(index);
        if (!s.ok() && f.index < 0) {
          f.index = index;
          f.status = std::move(s);
        }
      }
      if (!parses[a][static_cast<size_t>(j)] && !failure) failure = std::move(f);
    }
    if (a == 0 && !any_parsed) {
      return InvalidInput(fmt::format("every combination is invalid; the first ({}): {}",
                                      fmt::join(CombinationSets(axes, 0), " "),
                                      failure->status.message()));
    }
  }
  if (!failure) return Status::Ok();
  const VaryAxis& axis = axes[failure->axis];
  const std::string& value = axis.values[static_cast<size_t>(failure->value)];
  if (n == 1) {
    return InvalidInput(
        fmt::format("--vary {}: value '{}': {}", axis.flag, value, failure->status.message()));
  }
  return InvalidInput(fmt::format(
      "--vary {}: value '{}' is invalid with every combination of the other axes; the first "
      "({}): {}",
      axis.flag, value, fmt::join(CombinationSets(axes, failure->index), " "),
      failure->status.message()));
}

std::vector<std::string> UnpricedNotes(const std::vector<VariantResult>& variants,
                                       const std::string& prices_source) {
  std::map<std::string, int64_t> unpriced;  // GPU → fitting variants without a price
  for (const VariantResult& v : variants) {
    if (v.outcome == VariantOutcome::kFits && !v.figures.usd_per_gpu_hour)
      ++unpriced[v.figures.gpu];
  }
  std::vector<std::string> notes;
  for (const auto& [gpu, n] : unpriced) {
    notes.push_back(fmt::format(
        "{} has no price in {}: {} on it {} no cost (ranked last by cost, left off the Pareto "
        "front)",
        gpu, prices_source, CountOf(n, "fitting variant"), n == 1 ? "has" : "have"));
  }
  return notes;
}

std::string UnvalidatedNote(const std::vector<VariantResult>& variants) {
  std::set<std::string> gpus, checked;
  for (const VariantResult& v : variants) {
    if (v.outcome != VariantOutcome::kFits || !gpus.insert(v.figures.gpu).second) continue;
    Result<Hardware> hw = LookupHardware(v.figures.gpu, 1, 1);
    if (hw.ok() && !hw->gpu.validated_by.empty()) checked.insert(v.figures.gpu);
  }
  std::vector<std::string> unchecked;
  for (const std::string& g : gpus) {
    if (!checked.contains(g)) unchecked.push_back(g);
  }
  if (unchecked.empty()) return "";
  const std::string rank =
      checked.empty()
          ? std::string("their figures are estimates no measurement here confirms")
          : fmt::format("weigh their rank against {} with care", fmt::join(checked, ", "));
  return fmt::format(
      "no measured run checks the predictions for {} (the catalog's datasheet and benchmark "
      "figures alone; bench/validate/README.md lists the runs that check the others): {}",
      fmt::join(unchecked, ", "), rank);
}

std::vector<std::string> ValuesNeverValid(const SweepResult& result,
                                          const std::vector<VaryAxis>& axes) {
  std::vector<std::string> notes;
  const int64_t count = static_cast<int64_t>(result.variants.size());
  int64_t stride = count;
  for (const VaryAxis& axis : axes) {
    const int64_t size = static_cast<int64_t>(axis.values.size());
    if (size == 0 || stride % size != 0) return {};  // not this sweep's axes
    stride /= size;
    for (int64_t j = 0; j < size; ++j) {
      const VariantResult* first = nullptr;
      bool valid = false;
      for (int64_t i = j * stride; i < count && !valid; i += stride * size) {
        for (int64_t k = i; k < i + stride; ++k) {
          const VariantResult& v = result.variants[static_cast<size_t>(k)];
          if (v.outcome != VariantOutcome::kInvalid) {
            valid = true;
            break;
          }
          if (first == nullptr) first = &v;
        }
      }
      if (valid || first == nullptr) continue;
      notes.push_back(fmt::format("{}={} was invalid in every combination; the first ({}): {}",
                                  axis.path, axis.values[static_cast<size_t>(j)],
                                  fmt::join(first->sets, " "), first->message));
    }
  }
  return notes;
}

Result<SweepResult> RunSweep(const SweepBase& base, const std::vector<VaryAxis>& axes,
                             const SweepOptions& options) {
  SS_ASSIGN_OR_RETURN(int64_t count, CombinationCount(axes));
  std::vector<std::vector<std::string>> sets;
  sets.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) sets.push_back(CombinationSets(axes, i));
  return RunVariants(base, std::move(sets), options);
}

}  // namespace shardscope::sim
