// Trace I/O and diff at scale: a 1,000,000-event trace (8 ranks, compute / all-gather /
// reduce-scatter lanes, memory counters) is written, loaded, and diffed against a perturbed copy.
// Targets (issue 5): load < 2 s and < 1 GB, diff of two such traces < 3 s.
// Kineto import: a GPU profiler trace of K kernels (each with its launch call) under L FSDP2
// labels, fed to the importer event by event (no JSON text), then the importer's Finish timed:
// placing every kernel among the labels must not be quadratic. Target (issue 10): 400k kernels
// with 16k labels < 0.3 s.
//
//   build-*/bench/trace_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   build-*/bench/trace_benchmark --benchmark_filter=Kineto --benchmark_repetitions=5
//
// rss_growth_MB is the resident-set growth of this process across one load (the text already
// read is excluded; the loaded Trace is alive when it is taken), i.e. what loading costs.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "core/trace/kineto_import.h"
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

// One step of a GPU FSDP2 run: `labels` / 8 units, each with FSDP2's eight labels (pre_forward
// holding all_gather and all_gather_copy_out, post_forward; pre_backward holding a
// backward_prefetch, post_backward_reshard, post_backward_reduce), an NCCL all-gather and
// reduce-scatter, and the compute kernels spread over the units' forward and backward.
class KinetoStep {
 public:
  KinetoStep(int64_t kernels, int64_t labels) : kernels_(kernels), units_(labels / 8) {}

  // Feeds every event to `sink`; returns false on the first error.
  bool Feed(trace_internal::RawEventSink& sink) {
    int64_t t = 0;  // µs
    const int64_t per_run = std::max<int64_t>(1, kernels_ / (2 * units_));
    // The step's range holds everything that follows.
    if (!Annotation(sink, "ProfilerStep#1", 0, INT32_MAX)) return false;
    for (int pass = 0; pass < 2; ++pass) {
      const bool fwd = pass == 0;
      for (int64_t k = 0; k < units_; ++k) {
        const int64_t u = fwd ? k : units_ - 1 - k;
        const std::string fqn = " (model.layers." + std::to_string(u) + ")";
        if (fwd) {
          if (!Annotation(sink, "FSDP::pre_forward" + fqn, t, 10) ||
              !Annotation(sink, "FSDP::all_gather" + fqn, t + 1, 4) ||
              !Launch(sink, "ncclDevKernel_AllGather_RING_LL", t + 2, 20) ||
              !Annotation(sink, "FSDP::all_gather_copy_out" + fqn, t + 6, 3)) {
            return false;
          }
        } else {
          if (!Annotation(sink, "FSDP::pre_backward" + fqn, t, 10) ||
              !Annotation(sink, "FSDP::backward_prefetch for model.layers." + std::to_string(u),
                          t + 1, 8)) {
            return false;
          }
        }
        t += 10;
        for (int64_t i = 0; i < per_run; ++i, t += 2) {
          if (!Launch(sink, fwd ? "sm90_gemm_fwd" : "sm90_gemm_bwd", t, 7)) return false;
        }
        if (fwd) {
          if (!Annotation(sink, "FSDP::post_forward" + fqn, t, 2)) return false;
        } else if (!Annotation(sink, "FSDP::post_backward_reshard" + fqn, t, 2) ||
                   !Annotation(sink, "FSDP::post_backward_reduce" + fqn, t + 2, 6) ||
                   !Launch(sink, "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", t + 3, 20)) {
          return false;
        }
        t += 8;
      }
    }
    return true;
  }

 private:
  bool Annotation(trace_internal::RawEventSink& sink, const std::string& name, int64_t ts,
                  int64_t dur) {
    Set(name, "user_annotation", 100, 100, ts, dur);
    return sink.OnEvent(e_).ok();
  }
  bool Launch(trace_internal::RawEventSink& sink, const char* kernel, int64_t ts, int64_t dur) {
    const int64_t corr = ++correlation_;
    Set("cudaLaunchKernel", "cuda_runtime", 100, 100, ts, 1);
    Arg(0, "correlation", corr);
    if (!sink.OnEvent(e_).ok()) return false;
    const bool nccl = kernel[0] == 'n';
    const int64_t stream = nccl ? (kernel[13] == 'A' ? 20 : 24) : 7;
    Set(kernel, "kernel", 0, stream, ts + 5, dur);
    Arg(0, "correlation", corr);
    Arg(1, "stream", stream);
    return sink.OnEvent(e_).ok();
  }
  void Set(std::string_view name, const char* cat, int64_t pid, int64_t tid, int64_t ts,
           int64_t dur) {
    using trace_internal::RawValue;
    e_.index = index_++;
    auto str = [](RawValue& v, std::string_view s) {
      v.type = RawValue::Type::kString;
      v.text.assign(s);
    };
    auto num = [](RawValue& v, int64_t i) {
      v.type = RawValue::Type::kInt;
      v.i = i;
      v.d = static_cast<double>(i);
    };
    str(e_.ph, "X");
    str(e_.name, name);
    str(e_.cat, cat);
    num(e_.pid, pid);
    num(e_.tid, tid);
    num(e_.ts, ts);
    num(e_.dur, dur);
    e_.num_args = 0;
    e_.args_present = true;
  }
  void Arg(size_t i, const char* key, int64_t value) {
    if (e_.args.size() <= i) e_.args.resize(i + 1);
    e_.args[i].key = key;
    e_.args[i].value.type = trace_internal::RawValue::Type::kInt;
    e_.args[i].value.i = value;
    e_.num_args = i + 1;
  }

  int64_t kernels_, units_;
  int64_t correlation_ = 0, index_ = 0;
  trace_internal::RawEvent e_;
};

// The importer's Finish on one rank's events (already handed over by OnEvent, untimed): the
// labels, each kernel's place among them, op_ids, the Trace built.
void BM_KinetoImportLabels(benchmark::State& state) {
  const int64_t kernels = state.range(0), labels = state.range(1);
  size_t work = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Trace t;
    const std::string source = "bench.json";
    auto sink = std::make_unique<trace_internal::KinetoSink>(source, &t);
    KinetoStep step(kernels, labels);
    if (!step.Feed(*sink)) {
      state.SkipWithError("the importer refused the synthetic trace");
      return;
    }
    state.ResumeTiming();
    if (!sink->Finish().ok()) {
      state.SkipWithError("the importer refused the synthetic trace");
      return;
    }
    work = t.events.size();
    benchmark::DoNotOptimize(t.events.data());
    state.PauseTiming();
    sink.reset();
    state.ResumeTiming();
  }
  state.counters["work_events"] = static_cast<double>(work);
}
BENCHMARK(BM_KinetoImportLabels)
    ->Args({100000, 4000})
    ->Args({400000, 16000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace shardscope

BENCHMARK_MAIN();
