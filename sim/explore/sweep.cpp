#include "sim/explore/sweep.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/units.h"
#include "sim/engine/simulator.h"

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

VariantResult Evaluate(const SweepBase& base, std::vector<std::string> sets,
                       const PriceTable& prices, bool exact) {
  VariantResult r;
  r.sets = std::move(sets);
  std::vector<std::string> overrides = base.sets;
  overrides.insert(overrides.end(), r.sets.begin(), r.sets.end());
  Result<Scenario> variant = ParseScenario(base.doc, base.source, base.base_dir, overrides);
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
  peaks_only.threads = 1;  // the variants run in parallel
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

}  // namespace

double ObjectiveKey(const VariantFigures& f, Objective objective) {
  switch (objective) {
    case Objective::kThroughput:
      return -f.tokens_per_s_per_gpu;
    case Objective::kCost:
      return f.cost_per_mtok_usd ? *f.cost_per_mtok_usd : HUGE_VAL;
    case Objective::kMemory:
      return f.peak_reserved_gib;
    case Objective::kTime:
      return f.s_per_mtok;
  }
  return 0;
}

Result<SweepBase> LoadSweepBase(const std::string& path, const std::vector<std::string>& sets) {
  SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  SweepBase base;
  SS_ASSIGN_OR_RETURN(base.doc, ParseJsonInput(text, path));
  base.source = path;
  base.base_dir = std::filesystem::path(path).parent_path().string();
  base.sets = sets;
  // The base must stand on its own: its errors are the user's, not one variant's.
  Result<Scenario> check = ParseScenario(base.doc, base.source, base.base_dir, base.sets);
  if (!check.ok()) return check.status();
  return base;
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

std::vector<int> RankVariants(const std::vector<VariantResult>& variants, Objective objective) {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(variants.size()); ++i) {
    if (variants[i].outcome == VariantOutcome::kFits) out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    const VariantFigures& fa = variants[a].figures;
    const VariantFigures& fb = variants[b].figures;
    const double ka = ObjectiveKey(fa, objective), kb = ObjectiveKey(fb, objective);
    if (ka != kb) return ka < kb;
    // Then throughput, so equal-memory or equal-cost variants show the faster one first.
    if (fa.tokens_per_s_per_gpu != fb.tokens_per_s_per_gpu)
      return fa.tokens_per_s_per_gpu > fb.tokens_per_s_per_gpu;
    return a < b;
  });
  return out;
}

std::vector<int> ParetoFront(const std::vector<VariantResult>& variants) {
  std::vector<int> candidates;
  for (int i = 0; i < static_cast<int>(variants.size()); ++i) {
    const VariantResult& v = variants[i];
    if (v.outcome == VariantOutcome::kFits && v.figures.cost_per_mtok_usd &&
        v.figures.s_per_mtok > 0) {
      candidates.push_back(i);
    }
  }
  // Fastest first (ties: cheaper, then index); a variant is on the front when it is cheaper
  // than every faster one.
  std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    const VariantFigures& fa = variants[a].figures;
    const VariantFigures& fb = variants[b].figures;
    if (fa.s_per_mtok != fb.s_per_mtok) return fa.s_per_mtok < fb.s_per_mtok;
    if (*fa.cost_per_mtok_usd != *fb.cost_per_mtok_usd)
      return *fa.cost_per_mtok_usd < *fb.cost_per_mtok_usd;
    return a < b;
  });
  std::vector<int> front;
  double best_cost = HUGE_VAL;
  for (int i : candidates) {
    const double cost = *variants[i].figures.cost_per_mtok_usd;
    if (cost < best_cost) {
      front.push_back(i);
      best_cost = cost;
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
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, total, 1), [&](const tbb::blocked_range<int64_t>& range) {
          for (int64_t i = range.begin(); i != range.end(); ++i) {
            result.variants[i] = Evaluate(base, std::move(sets[i]), prices, options.exact);
            finished_one();
          }
        });
  });
  if (options.progress) options.progress(total, total);
  FinishSweep(options.objective, &result);
  return result;
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

Result<SweepResult> RunSweep(const SweepBase& base, const std::vector<VaryAxis>& axes,
                             const SweepOptions& options) {
  SS_ASSIGN_OR_RETURN(int64_t count, CombinationCount(axes));
  std::vector<std::vector<std::string>> sets;
  sets.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) sets.push_back(CombinationSets(axes, i));
  return RunVariants(base, std::move(sets), options);
}

}  // namespace shardscope::sim
