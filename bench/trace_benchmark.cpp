// Trace I/O and diff at scale: a 1,000,000-event trace (8 ranks, compute / all-gather /
// reduce-scatter lanes, memory counters) is written, loaded, and diffed against a perturbed copy.
// Targets (issue 5): load < 2 s and < 1 GB, diff of two such traces < 3 s.
//
//   build-*/bench/trace_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// rss_growth_MB is the resident-set growth of this process across one load (the text already
// read is excluded; the loaded Trace is alive when it is taken), i.e. what loading costs.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/trace/trace_diff.h"
#include "core/trace/trace_io.h"
#include "core/trace/trace_stats.h"
#include "core/util/file_io.h"

namespace shardscope {
namespace {

constexpr int kRanks = 8;
constexpr int64_t kEvents = 1000000;

// Resident set size now, in bytes (Linux /proc/self/statm).
int64_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// A step-like timeline per rank: each layer's compute with the next layer's all-gather under it
// and the previous layer's reduce-scatter in backward; `slowdown` stretches compute (for diff).
Trace MakeTrace(int64_t events, double slowdown) {
  Trace t;
  t.metadata.kind = "predicted";
  t.metadata.tool_version = "trace_benchmark";
  const int64_t per_rank = events / kRanks;
  for (int r = 0; r < kRanks; ++r) {
    t.AddMarker(r, 0, "step_begin");
    int64_t now = 0;
    int64_t allocated = 0;
    for (int64_t i = 0; i * 3 < per_rank; ++i) {
      const std::string unit = "model.layers." + std::to_string(i);
      const int64_t compute_ns = static_cast<int64_t>((90000 + (i * 7919) % 20000) * slowdown);
      WorkEvent& ag = t.AddWork(r, kLaneAllGather, "nccl:all_gather", "fwd/" + unit + "/all_gather",
                                now, 60000);
      ag.bytes = 400 << 20;
      ag.group_size = 64;
      ag.busbw_gbps = 350.5;
      WorkEvent& c = t.AddWork(r, kLaneCompute, "fwd " + unit, "fwd/" + unit + "/compute",
                               now + 60000, compute_ns);
      c.flops = 3.2e12;
      WorkEvent& rs = t.AddWork(r, kLaneReduceScatter, "nccl:reduce_scatter",
                                "bwd/" + unit + "/reduce_scatter", now + 60000, 50000);
      rs.bytes = 800 << 20;
      rs.group_size = 64;
      if (i % 10 == 0) {
        allocated += (i % 20 == 0) ? (1 << 30) : -(1 << 29);
        t.AddCounter(r, now, "unsharded_params_bytes", allocated);
        t.AddCounter(r, now, "allocated_bytes", allocated + (8LL << 30));
      }
      now += 60000 + compute_ns;
    }
  }
  return t;
}

const std::string& TracePath(double slowdown) {
  static const std::string a = [] {
    const std::string p = "/tmp/shardscope_bench_a.trace.json";
    if (!WriteTrace(MakeTrace(kEvents, 1.0), p).ok()) std::abort();
    return p;
  }();
  static const std::string b = [] {
    const std::string p = "/tmp/shardscope_bench_b.trace.json";
    if (!WriteTrace(MakeTrace(kEvents, 1.01), p).ok()) std::abort();
    return p;
  }();
  return slowdown == 1.0 ? a : b;
}

void BM_WriteTrace(benchmark::State& state) {
  const Trace t = MakeTrace(kEvents, 1.0);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = SerializeTrace(t);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["events"] = static_cast<double>(t.events.size());
  state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_WriteTrace)->Unit(benchmark::kMillisecond)->Iterations(1);

// ReadTrace end to end: read the file, parse, sort.
void BM_LoadTrace(benchmark::State& state) {
  const std::string& path = TracePath(1.0);
  double rss_growth = 0;
  size_t events = 0;
  for (auto _ : state) {
    const int64_t before = RssBytes();
    auto t = ReadTrace(path);
    if (!t.ok()) {
      state.SkipWithError(t.status().message().c_str());
      return;
    }
    rss_growth = static_cast<double>(RssBytes() - before) / 1e6;
    events = t->events.size() + t->counters.size() + t->markers.size();
    benchmark::DoNotOptimize(t->events.data());
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["rss_growth_MB"] = rss_growth;
}
BENCHMARK(BM_LoadTrace)->Unit(benchmark::kMillisecond)->Iterations(1);

// DiffTraces on two loaded 1 M-event traces (every compute op 1% slower in B).
void BM_DiffTraces(benchmark::State& state) {
  auto a = ReadTrace(TracePath(1.0));
  auto b = ReadTrace(TracePath(1.01));
  if (!a.ok() || !b.ok()) {
    state.SkipWithError("cannot load the benchmark traces");
    return;
  }
  int64_t matched = 0;
  for (auto _ : state) {
    auto r = DiffTraces(*a, *b, DefaultTolerances());
    matched = r.ok() ? r->ops_matched : -1;
    benchmark::DoNotOptimize(matched);
  }
  state.counters["ops_matched"] = static_cast<double>(matched);
}
BENCHMARK(BM_DiffTraces)->Unit(benchmark::kMillisecond)->Iterations(1);

// What `shardscope diff A B` does: load both, diff.
void BM_LoadAndDiff(benchmark::State& state) {
  const std::string& pa = TracePath(1.0);
  const std::string& pb = TracePath(1.01);
  for (auto _ : state) {
    auto a = ReadTrace(pa);
    auto b = ReadTrace(pb);
    if (!a.ok() || !b.ok()) {
      state.SkipWithError("cannot load the benchmark traces");
      return;
    }
    auto r = DiffTraces(*a, *b, DefaultTolerances());
    benchmark::DoNotOptimize(r.ok());
  }
}
BENCHMARK(BM_LoadAndDiff)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_Stats(benchmark::State& state) {
  auto a = ReadTrace(TracePath(1.0));
  if (!a.ok()) {
    state.SkipWithError("cannot load the benchmark trace");
    return;
  }
  for (auto _ : state) {
    TraceStats s = ComputeStats(*a);
    benchmark::DoNotOptimize(s.step_time_ns);
  }
}
BENCHMARK(BM_Stats)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace shardscope

BENCHMARK_MAIN();
