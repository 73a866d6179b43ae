// Simulator speed: the engine loop alone on synthetic FSDP-shaped schedules (events/s), and
// whole predictions (scenario → model → plan → schedule → engine → summary) for the sizes
// the simulator promises: Llama 3 70B on 1,024 GPUs (HSDP 8 × 128) ≤ 20 ms, Llama 3 405B on
// 16,384 GPUs with TP 8 and PP 16 ≤ 200 ms; and how time grows with layers and GPU count.
//
// Run: build-*/bench/sim_benchmark --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "sim/engine/engine.h"
#include "sim/engine/memory_tracker.h"
#include "sim/engine/simulator.h"

namespace shardscope::sim {
namespace {

// An FSDP step of `layers` units: forward all-gather + compute, backward all-gather +
// compute + reduce-scatter, with prefetch one unit ahead and memory effects on every op.
struct Synthetic {
  Schedule schedule;
  std::vector<int64_t> ns;
};

Synthetic MakeSynthetic(int layers) {
  Synthetic s;
  s.schedule.roles.push_back(Role{"dense", 0, 8});
  s.schedule.initial_memory.push_back({});
  s.schedule.groups.push_back(ProcessGroup{"fsdp_shard", {0, 1, 2, 3, 4, 5, 6, 7}, {"fsdp_shard"}});
  auto add = [&](Lane lane, OpType type, int64_t ns, std::vector<int> deps) {
    ScheduleOp op;
    op.lane = lane;
    op.type = type;
    SetDeps(s.schedule, op, deps);
    op.group = lane == Lane::kCompute ? -1 : 0;
    s.schedule.ops.push_back(std::move(op));
    s.ns.push_back(ns);
    return static_cast<int>(s.schedule.ops.size()) - 1;
  };
  int buffer = 0;
  std::vector<int> fwd_ag(layers), fwd_c(layers);
  int prev_compute = -1;
  for (int l = 0; l < layers; ++l) {
    fwd_ag[l] = add(Lane::kAllGather, OpType::kAllGather, 900 + l % 7 * 10, {});
    AddEffect(s.schedule, s.schedule.ops[fwd_ag[l]],
              {MemoryEffect::When::kStart, MemCategory::kUnshardedParams, 400 << 20, buffer});
    std::vector<int> deps{fwd_ag[l]};
    if (prev_compute >= 0) deps.push_back(prev_compute);
    fwd_c[l] = add(Lane::kCompute, OpType::kCompute, 1000 + l % 5 * 20, deps);
    AddEffect(s.schedule, s.schedule.ops[fwd_c[l]],
              {MemoryEffect::When::kEnd, MemCategory::kUnshardedParams, -(400 << 20), buffer});
    AddEffect(s.schedule, s.schedule.ops[fwd_c[l]],
              {MemoryEffect::When::kEnd, MemCategory::kActivations, 200 << 20, buffer + 1});
    buffer += 2;
    prev_compute = fwd_c[l];
  }
  int prev_rs = -1;
  for (int l = layers - 1; l >= 0; --l) {
    const int ag = add(Lane::kAllGather, OpType::kAllGather, 900, {});
    AddEffect(s.schedule, s.schedule.ops[ag],
              {MemoryEffect::When::kStart, MemCategory::kUnshardedParams, 400 << 20, buffer});
    const int c = add(Lane::kCompute, OpType::kCompute, 2000, {ag, prev_compute});
    ScheduleOp& op = s.schedule.ops[c];
    AddEffect(s.schedule, op,
              {MemoryEffect::When::kEnd, MemCategory::kUnshardedParams, -(400 << 20), buffer});
    AddEffect(s.schedule, op,
              {MemoryEffect::When::kEnd, MemCategory::kActivations, -(200 << 20), 2 * l + 1});
    AddEffect(s.schedule, op,
              {MemoryEffect::When::kEnd, MemCategory::kUnshardedGrads, 800 << 20, buffer + 1});
    std::vector<int> rs_deps{c};
    if (prev_rs >= 0) rs_deps.push_back(prev_rs);
    const int rs = add(Lane::kReduceScatter, OpType::kReduceScatter, 1500, rs_deps);
    AddEffect(s.schedule, s.schedule.ops[rs],
              {MemoryEffect::When::kEnd, MemCategory::kUnshardedGrads, -(800 << 20), buffer + 1});
    buffer += 2;
    prev_compute = c;
    prev_rs = rs;
  }
  add(Lane::kCompute, OpType::kOptimizer, 5000, {prev_compute, prev_rs});
  return s;
}

void BM_EngineEvents(benchmark::State& state) {
  const Synthetic s = MakeSynthetic(static_cast<int>(state.range(0)));
  int64_t events = 0, ops = 0;
  for (auto _ : state) {
    auto tl = RunEngine(s.schedule, s.ns, EngineOptions{1.08});
    if (!tl.ok()) {
      state.SkipWithError(tl.status().message().c_str());
      return;
    }
    events += tl->events_processed + static_cast<int64_t>(s.schedule.ops.size());  // ends + starts
    ops += static_cast<int64_t>(s.schedule.ops.size());
    benchmark::DoNotOptimize(tl->step_ns);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["ops_per_s"] =
      benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EngineEvents)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_EngineWithMemory(benchmark::State& state) {
  const Synthetic s = MakeSynthetic(static_cast<int>(state.range(0)));
  int64_t ops = 0;
  for (auto _ : state) {
    auto tl = RunEngine(s.schedule, s.ns, EngineOptions{1.08});
    auto mem = TrackMemory(s.schedule, tl.value(), MemoryOptions{0, false});
    if (!mem.ok()) {
      state.SkipWithError(mem.status().message().c_str());
      return;
    }
    ops += static_cast<int64_t>(s.schedule.ops.size());
    benchmark::DoNotOptimize(mem->front().peak_reserved_bytes);
  }
  state.counters["ops_per_s"] =
      benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EngineWithMemory)->Arg(100000)->Unit(benchmark::kMillisecond);

// A whole prediction from a scenario document (memory peaks only, as sweeps run it).
void RunScenario(benchmark::State& state, const nlohmann::json& doc) {
  auto sc = ParseScenario(doc, "<bench>", ".");
  if (!sc.ok()) {
    state.SkipWithError(sc.status().message().c_str());
    return;
  }
  SimulateOptions options;
  options.keep_memory_samples = false;
  for (auto _ : state) {
    auto sim = SimulateScenario(sc.value(), options);
    if (!sim.ok()) {
      state.SkipWithError(sim.status().message().c_str());
      return;
    }
    state.counters["ops"] = static_cast<double>(sim->schedule.ops.size());
    state.counters["step_s"] = sim->summary.step_time_s;
    state.counters["tok_s_gpu"] = sim->summary.tokens_per_s_per_gpu;
    state.counters["reserved_gib"] = sim->summary.peak_memory_reserved_gib;
  }
}

nlohmann::json Job(const std::string& model, int nodes, nlohmann::json parallelism) {
  nlohmann::json j = DefaultScenarioJson();
  j["model"] = model;
  j["cluster"]["nodes"] = nodes;
  for (auto& [k, v] : parallelism.items()) j["parallelism"][k] = v;
  return j;
}

void BM_Llama3_70B_Hsdp8x128(benchmark::State& state) {
  RunScenario(state, Job("llama3-70b", 128, {{"dp_shard", 8}, {"dp_replicate", 128}}));
}
BENCHMARK(BM_Llama3_70B_Hsdp8x128)->Unit(benchmark::kMillisecond);

void BM_Llama3_405B_Tp8Pp16_16384(benchmark::State& state) {
  nlohmann::json j = Job("llama3-405b", 2048, {{"tp", 8}, {"pp", 16}, {"dp_shard", -1}});
  j["training"]["local_batch"] = 16;  // 16 micro-batches of one sequence for the pipeline
  j["parallelism"]["pp_microbatches"] = 16;
  RunScenario(state, j);
}
BENCHMARK(BM_Llama3_405B_Tp8Pp16_16384)->Unit(benchmark::kMillisecond);

// Growth with layers: Llama 3 8B shapes with 8..128 layers on 8 GPUs.
void BM_LayersScaling(benchmark::State& state) {
  nlohmann::json j = DefaultScenarioJson();
  j["model"] = {{"hf",
                 {{"model_type", "llama"},
                  {"architectures", {"LlamaForCausalLM"}},
                  {"hidden_size", 4096},
                  {"intermediate_size", 14336},
                  {"num_hidden_layers", state.range(0)},
                  {"num_attention_heads", 32},
                  {"num_key_value_heads", 8},
                  {"vocab_size", 128256},
                  {"rms_norm_eps", 1e-5},
                  {"tie_word_embeddings", false}}}};
  RunScenario(state, j);
}
BENCHMARK(BM_LayersScaling)->RangeMultiplier(2)->Range(8, 128)->Unit(benchmark::kMillisecond);

// Growth with GPU count: Llama 3 8B, FSDP over every GPU.
void BM_GpuScaling(benchmark::State& state) {
  RunScenario(state, Job("llama3-8b", static_cast<int>(state.range(0)) / 8, {{"dp_shard", -1}}));
}
BENCHMARK(BM_GpuScaling)->RangeMultiplier(8)->Range(8, 4096)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardscope::sim

BENCHMARK_MAIN();
