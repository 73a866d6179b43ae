// Search speed (issue 14): a sweep over a grid of 1,000 Llama 3 70B variants on 1,024 H100s
// (tp, pp, dp_replicate, checkpointing, prefetch, micro-batches, 1F1B / interleaved) on two
// threads, reported as variants/s (target ≥ 1,000/s on 2 cores); the same grid one variant at a
// time for the latency spread (median, p90, max) and the cost per schedule op of the jobs that
// run and of those stopped at the memory floor; a slice of it on one thread, for instruction
// counts; a quarter of the grid on four GPU types (the
// variants of one mesh sharing their schedules, and not); and a GPT-3-175B-like job with TP 8, PP 8
// and 8..64 micro-batches (target: 64 in ≤ 15 ms), and the stages of its extrapolated run alone.
//
// Run: build-rel/bench/explore_benchmark --benchmark_repetitions=3
//          --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_builder.h"
#include "core/schedule/schedule_options.h"
#include "core/timeline/op_accounting.h"
#include "core/util/units.h"
#include "sim/engine/engine.h"
#include "sim/engine/memory_floor.h"
#include "sim/engine/memory_tracker.h"
#include "sim/engine/simulator.h"
#include "sim/engine/steady_state.h"
#include "sim/explore/sweep.h"

namespace shardscope::sim {
namespace {

constexpr int kGridSize = 1000;

nlohmann::json Llama70bOn1024() {
  nlohmann::json j = DefaultScenarioJson();
  j["model"] = "llama3-70b";
  j["cluster"]["nodes"] = 128;
  return j;
}

// Every combination of the axes, then kGridSize of them evenly spaced: each axis keeps all its
// values in the grid. One sequence per micro-batch; without a pipeline the micro-batches are
// gradient-accumulation steps.
std::vector<std::vector<std::string>> Grid70b() {
  std::vector<std::vector<std::string>> all;
  for (int pp : {1, 2, 4, 8}) {
    for (const char* sched : {"1f1b", "interleaved_1f1b"}) {
      if (pp == 1 && std::string(sched) != "1f1b") continue;
      for (int tp : {1, 2, 4, 8}) {
        for (int rep : {1, 2, 8}) {
          for (const char* ac : {"none", "selective_op", "selective_op:2", "full"}) {
            for (int prefetch : {1, 2}) {
              for (int mult : {1, 2, 4}) {
                const int micro = pp * mult;
                const bool interleaved = std::string(sched) != "1f1b";
                all.push_back({
                    "parallelism.tp=" + std::to_string(tp),
                    "parallelism.pp=" + std::to_string(pp),
                    "parallelism.dp_replicate=" + std::to_string(rep),
                    "parallelism.dp_shard=-1",
                    std::string("parallelism.pp_schedule=") + sched,
                    "parallelism.pp_virtual_stages=" + std::to_string(interleaved ? 2 : 1),
                    "parallelism.pp_microbatches=" + std::to_string(pp > 1 ? micro : 1),
                    "training.local_batch=" + std::to_string(pp > 1 ? micro : 1),
                    "training.grad_accum=" + std::to_string(pp > 1 ? 1 : micro),
                    std::string("training.activation_checkpoint=") + ac,
                    "fsdp.forward_prefetch_depth=" + std::to_string(prefetch),
                    "fsdp.backward_prefetch_depth=" + std::to_string(prefetch),
                });
              }
            }
          }
        }
      }
    }
  }
  std::vector<std::vector<std::string>> grid;
  for (int i = 0; i < kGridSize; ++i) grid.push_back(all[i * all.size() / kGridSize]);
  return grid;
}

SweepBase Base(const nlohmann::json& doc) {
  SweepBase base;
  base.doc = doc;
  base.source = "<bench>";
  base.base_dir = ".";
  return base;
}

void BM_Grid70b_Sweep2Threads(benchmark::State& state) {
  const SweepBase base = Base(Llama70bOn1024());
  const std::vector<std::vector<std::string>> grid = Grid70b();
  SweepOptions options;
  options.threads = 2;
  int64_t variants = 0;
  for (auto _ : state) {
    Result<SweepResult> r = RunVariants(base, grid, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    variants += static_cast<int64_t>(grid.size());
    state.counters["invalid"] = static_cast<double>(r->invalid);
    state.counters["fitting"] = static_cast<double>(r->fitting);
  }
  state.counters["variants_per_s"] =
      benchmark::Counter(static_cast<double>(variants), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Grid70b_Sweep2Threads)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Iterations(1);

// A slice of the grid on one thread (its variants 450-549, consecutive: pipelines of 4 stages
// whose variants share plans and step bases as a whole grid's do), for instruction counts: one
// thread runs the same instructions whatever the machine's speed, so `valgrind --tool=callgrind
// build-rel/bench/explore_benchmark --benchmark_filter=Grid70b_Slice1Thread` compares two builds
// where the grid's timings drift by more than the change (docs/sweep.md, Speed).
void BM_Grid70b_Slice1Thread(benchmark::State& state) {
  const SweepBase base = Base(Llama70bOn1024());
  const std::vector<std::vector<std::string>> grid = Grid70b();
  const std::vector<std::vector<std::string>> slice(grid.begin() + 450, grid.begin() + 550);
  SweepOptions options;
  options.threads = 1;
  for (auto _ : state) {
    Result<SweepResult> r = RunVariants(base, slice, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    state.counters["fitting"] = static_cast<double>(r->fitting);
  }
}
BENCHMARK(BM_Grid70b_Slice1Thread)->Unit(benchmark::kMillisecond)->Iterations(1);

// One variant at a time, as a sweep runs them (memory peaks only): the latency spread.
// Which GPU (the first question of docs/sweep.md): a quarter of the 70B grid, evenly spaced, on
// each of four GPU types with the GPU axis last, 1,000 variants on 2 threads. range(0) = 1: the
// variants that differ only in the GPU share their plan and schedules (SweepOptions::
// share_schedules, sim/engine/schedule_memo.h); 0: each builds its own.
void BM_GpuComparison2Threads(benchmark::State& state) {
  const SweepBase base = Base(Llama70bOn1024());
  const std::vector<std::vector<std::string>> grid = Grid70b();
  std::vector<std::vector<std::string>> sets;
  for (size_t i = 0; i < grid.size(); i += 4) {
    for (const char* gpu : {"h100-sxm", "h200", "b200", "mi300x"}) {
      sets.push_back(grid[i]);
      sets.back().push_back(std::string("cluster.gpu=") + gpu);
    }
  }
  SweepOptions options;
  options.threads = 2;
  options.share_schedules = state.range(0) == 1;
  int64_t variants = 0;
  for (auto _ : state) {
    Result<SweepResult> r = RunVariants(base, sets, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    variants += static_cast<int64_t>(r->variants.size());
    state.counters["fitting"] = static_cast<double>(r->fitting);
    state.counters["invalid"] = static_cast<double>(r->invalid);
  }
  state.counters["variants_per_s"] =
      benchmark::Counter(static_cast<double>(variants), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_GpuComparison2Threads)
    ->ArgName("shared")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Iterations(1);

void BM_Grid70b_Latency(benchmark::State& state) {
  const nlohmann::json doc = Llama70bOn1024();
  const std::vector<std::vector<std::string>> grid = Grid70b();
  std::vector<double> ms;
  // Per outcome: jobs, milliseconds and schedule ops, so that the cost per op of a job that runs
  // and of one stopped at the memory floor read off the counters (docs/sweep.md, Speed).
  struct Outcome {
    int jobs = 0;
    double ms = 0;
    double ops = 0;
  };
  Outcome ran, stopped;
  // Per pipeline depth (1, 2, 4, 8): where the grid's time goes (docs/sweep.md, Speed).
  std::map<int, double> pp_ms;
  SimulateOptions options;
  options.keep_memory_samples = false;
  // As RunVariants: the steady state where it applies, and a job whose schedule alone does not
  // fit stopped there (it is not ranked).
  options.exact = false;
  options.stop_when_not_fitting = true;
  for (auto _ : state) {
    ms.clear();
    ran = stopped = Outcome{};
    for (const std::vector<std::string>& sets : grid) {
      const auto t0 = std::chrono::steady_clock::now();
      Result<Scenario> sc = ParseScenario(doc, "<bench>", ".", sets);
      Result<Simulation> sim = sc.ok() ? SimulateScenario(*sc, options) : sc.status();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (!sim.ok()) continue;
      pp_ms[sc->parallelism.pp] += ms.back();
      Outcome& o = sim->floor_over_capacity ? stopped : ran;
      ++o.jobs;
      o.ms += ms.back();
      o.ops += static_cast<double>(sim->schedule.ops.size());
    }
  }
  state.counters["ran"] = ran.jobs;
  state.counters["ran_us_per_op"] = ran.ops > 0 ? 1e3 * ran.ms / ran.ops : 0;
  state.counters["ran_ms"] = ran.ms;
  state.counters["stopped"] = stopped.jobs;
  state.counters["stopped_ms"] = stopped.ms;
  for (const auto& [pp, t] : pp_ms) state.counters["pp" + std::to_string(pp) + "_ms"] = t;
  state.counters["stopped_us_per_op"] = stopped.ops > 0 ? 1e3 * stopped.ms / stopped.ops : 0;
  // The grid's schedule ops in all (millions): what the 1,000 variants/s target allows per op
  // reads off them (2 cores · 1 s over this many ops; docs/sweep.md, Speed).
  state.counters["mops"] = (ran.ops + stopped.ops) / 1e6;
  std::sort(ms.begin(), ms.end());
  state.counters["median_ms"] = ms[ms.size() / 2];
  state.counters["p90_ms"] = ms[ms.size() * 9 / 10];
  state.counters["max_ms"] = ms.back();
}
BENCHMARK(BM_Grid70b_Latency)->Unit(benchmark::kMillisecond)->Iterations(1);

// The memory floor's stop (memory_floor.h) against the simulation run to the end, on the 70B grid:
// every variant a sweep stops before pricing it must not fit when simulated, and the floor must
// not exceed the simulated peak allocated. One pass, slow (the stopped variants run whole); a
// check, not a speed figure.
void BM_Grid70b_FloorAgreement(benchmark::State& state) {
  const nlohmann::json doc = Llama70bOn1024();
  SimulateOptions stop, full;
  stop.keep_memory_samples = full.keep_memory_samples = false;
  stop.exact = full.exact = false;  // as RunVariants
  stop.stop_when_not_fitting = true;
  int stopped = 0, stopped_but_fits = 0, floor_over_peak = 0;
  for (auto _ : state) {
    for (const std::vector<std::string>& sets : Grid70b()) {
      Result<Scenario> sc = ParseScenario(doc, "<bench>", ".", sets);
      if (!sc.ok()) continue;
      Result<Simulation> early = SimulateScenario(*sc, stop);
      if (!early.ok() || !early->floor_over_capacity) continue;
      ++stopped;
      Result<Simulation> whole = SimulateScenario(*sc, full);
      if (!whole.ok()) continue;
      const MemoryFloor& floor = *early->floor_over_capacity;
      int64_t role_peak = 0;
      if (floor.role >= 0 && floor.role < static_cast<int>(whole->memory.size()))
        role_peak = whole->memory[floor.role].peak_allocated_bytes;
      const bool over = floor.bytes > role_peak && !whole->steady_state;
      stopped_but_fits += whole->summary.fits;
      floor_over_peak += over;
      if (whole->summary.fits || over) {
        std::string job;
        for (const std::string& s : sets) job += s + " ";
        std::fprintf(stderr, "off: %s floor %.2f GiB, simulated %s, peak allocated %.2f GiB\n",
                     job.c_str(), ToGiB(floor.bytes), whole->summary.fits ? "fits" : "does not fit",
                     ToGiB(role_peak));
      }
    }
  }
  state.counters["stopped"] = stopped;
  state.counters["stopped_but_fits"] = stopped_but_fits;
  state.counters["floor_over_peak"] = floor_over_peak;
}
BENCHMARK(BM_Grid70b_FloorAgreement)->Unit(benchmark::kSecond)->Iterations(1);

// The steady-state fast path against the whole step (--exact) on the grid's variants with their
// micro-batch counts raised so that it runs (pipelines: 4·pp, 8·pp and 12·pp; without one, 16,
// 32 and 48 accumulation steps), Llama 3 70B-sized stages as the grid has them: how many
// jobs PlanSteadyState gives a fast path (attempts), how many take it, and how many of those
// differ from the whole step by more than 0.1% in step time or peak reserved, or in the fit
// verdict (each printed on stderr). One pass, slow (every variant is simulated whole); a check,
// not a speed figure. 2026-12-06: 104 of 288 jobs take it (44 of the 192 pipelines, 60 of the 96
// accumulations), none off; the 288 cost 6.98 s this way against 8.26 s whole (taken: 0.79
// against 3.01 s; fallen back, most because a short run met the capacity: 6.19 against 5.25).
// Before that day's checks (no interleaved fast path, no reserve near the capacity) 71 of the 288
// pipeline jobs then measured took it and 17 were off, up to 6.5% in step time (interleaved)
// and from 3.1% low to 1.2% high in reserve.
void BM_Grid70b_SteadyStateAgreement(benchmark::State& state) {
  const nlohmann::json doc = Llama70bOn1024();
  SimulateOptions fast_options, exact_options;
  fast_options.keep_memory_samples = exact_options.keep_memory_samples = false;
  fast_options.exact = false;  // as RunVariants
  exact_options.exact = true;
  int attempts = 0;  // jobs PlanSteadyState gives a fast path
  // What each way costs (one thread), split by whether the fast path was taken or fell back:
  // whether it pays for its fallbacks.
  double fast_taken_ms = 0, fast_fallback_ms = 0, exact_taken_ms = 0, exact_fallback_ms = 0;
  int taken = 0, time_off = 0, reserved_off = 0, fit_flips = 0, failed = 0;
  double worst_time = 0, worst_reserved = 0;
  for (auto _ : state) {
    for (int pp : {1, 2, 4, 8}) {
      for (const char* sched : {"1f1b", "interleaved_1f1b"}) {
        if (pp == 1 && std::string(sched) != "1f1b") continue;
        for (int tp : {1, 2, 4, 8}) {
          for (const char* ac : {"none", "selective_op", "selective_op:2", "full"}) {
            for (int prefetch : {1, 2}) {
              for (int mult : {4, 8, 12}) {
                // Without a pipeline: 16, 32 and 48 accumulation steps of one sequence.
                const int micro = pp > 1 ? pp * mult : 4 * mult;
                const bool interleaved = std::string(sched) != "1f1b";
                const std::vector<std::string> sets = {
                    "parallelism.tp=" + std::to_string(tp),
                    "parallelism.pp=" + std::to_string(pp),
                    "parallelism.dp_shard=-1",
                    std::string("parallelism.pp_schedule=") + sched,
                    "parallelism.pp_virtual_stages=" + std::to_string(interleaved ? 2 : 1),
                    "parallelism.pp_microbatches=" + std::to_string(pp > 1 ? micro : 1),
                    "training.local_batch=" + std::to_string(pp > 1 ? micro : 1),
                    "training.grad_accum=" + std::to_string(pp > 1 ? 1 : micro),
                    std::string("training.activation_checkpoint=") + ac,
                    "fsdp.forward_prefetch_depth=" + std::to_string(prefetch),
                    "fsdp.backward_prefetch_depth=" + std::to_string(prefetch),
                };
                Result<Scenario> sc = ParseScenario(doc, "<bench>", ".", sets);
                if (!sc.ok()) continue;
                if (!PlanSteadyState(*sc)) continue;
                using Clock = std::chrono::steady_clock;
                const Clock::time_point t0 = Clock::now();
                Result<Simulation> fast = SimulateScenario(*sc, fast_options);
                const Clock::time_point t1 = Clock::now();
                Result<Simulation> exact = SimulateScenario(*sc, exact_options);
                const Clock::time_point t2 = Clock::now();
                ++attempts;
                const bool took = fast.ok() && fast->steady_state.has_value();
                (took ? fast_taken_ms : fast_fallback_ms) +=
                    std::chrono::duration<double, std::milli>(t1 - t0).count();
                (took ? exact_taken_ms : exact_fallback_ms) +=
                    std::chrono::duration<double, std::milli>(t2 - t1).count();
                if (!took) continue;
                ++taken;
                if (!exact.ok()) {
                  ++failed;
                  continue;
                }
                const Summary& f = fast->summary;
                const Summary& e = exact->summary;
                const double dt = std::abs(f.step_time_s / e.step_time_s - 1);
                const double dr =
                    std::abs(f.peak_memory_reserved_gib / e.peak_memory_reserved_gib - 1);
                worst_time = std::max(worst_time, dt);
                worst_reserved = std::max(worst_reserved, dr);
                time_off += dt > 1e-3;
                reserved_off += dr > 1e-3;
                fit_flips += f.fits != e.fits;
                if (dt > 1e-3 || dr > 1e-3 || f.fits != e.fits) {
                  std::string job;
                  for (const std::string& s : sets) job += s + " ";
                  std::fprintf(
                      stderr, "off: %s time %+.4f%% reserved %.3f vs %.3f GiB fits %d/%d\n",
                      job.c_str(), 100 * (f.step_time_s / e.step_time_s - 1),
                      f.peak_memory_reserved_gib, e.peak_memory_reserved_gib, f.fits, e.fits);
                }
              }
            }
          }
        }
      }
    }
  }
  state.counters["attempts"] = attempts;
  state.counters["fast_taken_ms"] = fast_taken_ms;
  state.counters["fast_fallback_ms"] = fast_fallback_ms;
  state.counters["exact_taken_ms"] = exact_taken_ms;
  state.counters["exact_fallback_ms"] = exact_fallback_ms;
  state.counters["fast_path"] = taken;
  state.counters["time_off"] = time_off;
  state.counters["reserved_off"] = reserved_off;
  state.counters["fit_flips"] = fit_flips;
  state.counters["exact_failed"] = failed;
  state.counters["worst_time_pct"] = 100 * worst_time;
  state.counters["worst_reserved_pct"] = 100 * worst_reserved;
}
BENCHMARK(BM_Grid70b_SteadyStateAgreement)->Unit(benchmark::kSecond)->Iterations(1);

// GPT-3 175B shapes (96 layers, hidden 12288, vocab padded to 51,200) on 1,024 H100s: TP 8 × PP 8 ×
// dp_shard 16, one 2,048-token sequence per micro-batch, range(0) micro-batches (1F1B); range(1) =
// 1: the whole step (--exact), 0: the steady-state extrapolation sweeps use.
// A GPT-3-175B-shaped job (96 blocks of width 12288) with TP 8, PP 8 and `micro_batches`
// micro-batches of one sequence.
nlohmann::json Gpt3_175bTp8Pp8(int64_t micro_batches) {
  nlohmann::json j = Llama70bOn1024();
  j["model"] = {{"hf",
                 {{"model_type", "llama"},
                  {"architectures", {"LlamaForCausalLM"}},
                  {"hidden_size", 12288},
                  {"intermediate_size", 49152},
                  {"num_hidden_layers", 96},
                  {"num_attention_heads", 96},
                  {"num_key_value_heads", 96},
                  {"vocab_size", 51200},
                  {"rms_norm_eps", 1e-5},
                  {"tie_word_embeddings", false}}}};
  j["parallelism"]["tp"] = 8;
  j["parallelism"]["pp"] = 8;
  j["parallelism"]["dp_shard"] = -1;
  j["parallelism"]["pp_microbatches"] = micro_batches;
  j["training"]["local_batch"] = micro_batches;
  j["training"]["seq_len"] = 2048;
  return j;
}

void BM_Gpt3_175b_Tp8Pp8(benchmark::State& state) {
  nlohmann::json j = Gpt3_175bTp8Pp8(state.range(0));
  Result<Scenario> sc = ParseScenario(j, "<bench>", ".");
  if (!sc.ok()) {
    state.SkipWithError(sc.status().message().c_str());
    return;
  }
  SimulateOptions options;
  options.keep_memory_samples = false;
  options.exact = state.range(1) != 0;
  // The process's CPU time, every thread's (std::clock), beside the wall time: on two cores a
  // prediction cannot take less wall time than half its CPU time, whatever its threads do
  // (docs/sweep.md, Speed).
  const std::clock_t cpu_start = std::clock();
  for (auto _ : state) {
    Result<Simulation> sim = SimulateScenario(*sc, options);
    if (!sim.ok()) {
      state.SkipWithError(sim.status().message().c_str());
      return;
    }
    state.counters["ops"] = static_cast<double>(sim->schedule.ops.size());
    state.counters["step_s"] = sim->summary.step_time_s;
    state.counters["reserved_gib"] = sim->summary.peak_memory_reserved_gib;
  }
  state.counters["process_cpu_ms"] = 1e3 * static_cast<double>(std::clock() - cpu_start) /
                                     CLOCKS_PER_SEC / static_cast<double>(state.iterations());
}

BENCHMARK(BM_Gpt3_175b_Tp8Pp8)
    ->ArgsProduct({{8, 16, 32, 64}, {1, 0}})
    ->ArgNames({"micro", "exact"})
    ->Unit(benchmark::kMillisecond);

// Where the time of the extrapolated BM_Gpt3_175b_Tp8Pp8/micro:64 goes: its longer short run
// (17 micro-batches, steady_state.h), each stage alone and in ms per run as counters; the memory
// replay on Arg threads. The stages are SimulateScenario's, less the overlap contention model
// (a flat slowdown instead) and the summary.
void BM_StagesOfTheLongerRun(benchmark::State& state) {
  nlohmann::json j = Gpt3_175bTp8Pp8(64);
  Result<Scenario> parsed = ParseScenario(j, "<bench>", ".");
  if (!parsed.ok()) {
    state.SkipWithError(parsed.status().message().c_str());
    return;
  }
  const Scenario sc = WithMicroBatches(*parsed, 17);
  enum { kPrefix, kBuild, kPrice, kEngine, kReplay, kAccount, kDestroy, kStages };
  const char* names[kStages] = {"prefix", "build",   "price",  "engine",
                                "replay", "account", "destroy"};
  double ms[kStages] = {};
  using Clock = std::chrono::steady_clock;
  for (auto _ : state) {
    Clock::time_point at = Clock::now();
    auto lap = [&](int stage) {
      const Clock::time_point now = Clock::now();
      ms[stage] += std::chrono::duration<double, std::milli>(now - at).count();
      at = now;
    };
    ModelBuildOptions build;
    build.tp = sc.parallelism.tp;
    ModelTree tree = LoadModel(sc.model, build).value();
    Plan plan = PlanScenario(sc, tree).value();
    SimulateOptions options;
    options.keep_memory_samples = false;
    ScenarioPricing pricing = PriceScenario(sc, tree, options).value();
    lap(kPrefix);
    ScheduleOptions schedule_options = ScheduleOptionsFromScenario(sc);
    schedule_options.grad_param_names = false;
    Schedule schedule = BuildSchedule(tree, plan, schedule_options).value();
    lap(kBuild);
    OpPrices prices = PriceSchedule(schedule, *pricing.cost, sc.cluster.gpus_per_node).value();
    lap(kPrice);
    EngineOptions engine_options;
    engine_options.overlap_slowdown = 1.2;
    Timeline timeline = RunEngine(schedule, prices.ns, engine_options).value();
    lap(kEngine);
    MemoryOptions memory_options;
    memory_options.keep_samples = false;
    memory_options.threads = static_cast<int>(state.range(0));
    std::vector<RoleMemory> memory = TrackMemory(schedule, timeline, memory_options).value();
    lap(kReplay);
    std::vector<StepAccount> accounts = AccountRoles(schedule, timeline);
    benchmark::DoNotOptimize(accounts.data());
    lap(kAccount);
    {
      Schedule dropped_schedule = std::move(schedule);
      Timeline dropped_timeline = std::move(timeline);
    }
    lap(kDestroy);
  }
  for (int k = 0; k < kStages; ++k) {
    state.counters[names[k]] = ms[k] / static_cast<double>(state.iterations());
  }
}
BENCHMARK(BM_StagesOfTheLongerRun)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardscope::sim

BENCHMARK_MAIN();
