// cuBLASLt GEMMs through the CUDA device at Llama 3 8B's layer shapes (torchtitan's job: one
// 8192-token sequence per GPU): each projection's forward (x · Wᵀ), data gradient (dy · W)
// and weight gradient (dyᵀ · x, in bf16 like the parameter), bf16 in, fp32 accumulate.
// Counters: TFLOPs (per second) and peak_pct, the share of the H200's 989 TFLOP/s dense bf16
// peak (target >= 70%). BM_IssueOverhead: host time to issue one operation (target <= 10 µs).
//
// Run: build/bench/cuda_gemm_benchmark --benchmark_min_time=0.05s
#include <benchmark/benchmark.h>

#include "bench/cuda_bench_util.h"

namespace shardscope::backend::bench {
namespace {

constexpr int64_t kTokens = 8192;

struct Projection {
  const char* name;
  int64_t in, out;
};
// Llama 3 8B: dim 4096, 32 heads / 8 kv heads of 128, ffn 14336, vocab 128256.
constexpr Projection kProjections[] = {
    {"wq", 4096, 4096},     {"wkv", 4096, 1024}, {"wo", 4096, 4096},
    {"w1_w3", 4096, 14336}, {"w2", 14336, 4096}, {"lm_head", 4096, 128256},
};

enum class Pass { kForward, kDataGrad, kWeightGrad };

void BM_Gemm(benchmark::State& state, Projection p, Pass pass) {
  Device* d = BenchDevice();
  if (d == nullptr) {
    state.SkipWithError(NoDeviceReason().c_str());
    return;
  }
  GemmArgs g;
  g.a_dtype = g.b_dtype = g.out_dtype = DType::kBFloat16;
  void* x = FilledBuffer(kTokens * p.in, DType::kBFloat16, 1, 1.0f);
  void* w = FilledBuffer(p.out * p.in, DType::kBFloat16, 2, 0.02f);
  void* y = FilledBuffer(kTokens * p.out, DType::kBFloat16, 3, 1.0f);
  if (!x || !w || !y) {
    state.SkipWithError("out of memory");
    return;
  }
  switch (pass) {
    case Pass::kForward:  // y[t×out] = x[t×in] · Wᵀ, W stored [out][in]
      g.m = kTokens, g.n = p.out, g.k = p.in, g.a = x, g.b = w, g.out = y, g.trans_b = true;
      break;
    case Pass::kDataGrad:  // dx[t×in] = dy[t×out] · W
      g.m = kTokens, g.n = p.in, g.k = p.out, g.a = y, g.b = w, g.out = x;
      break;
    case Pass::kWeightGrad:  // dW[out×in] = dyᵀ · x
      g.m = p.out, g.n = p.in, g.k = kTokens, g.a = y, g.b = x, g.out = w, g.trans_a = true;
      break;
  }
  const double flops = 2.0 * static_cast<double>(g.m) * g.n * g.k;
  for (auto _ : state) {
    const double s = TimeOnLane(10, [&] { return d->Gemm(Lane::kCompute, g); });
    if (s <= 0) {
      state.SkipWithError("GEMM failed");
      return;
    }
    state.SetIterationTime(s / 10);
  }
  state.counters["TFLOPs"] =
      benchmark::Counter(flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_pct"] = benchmark::Counter(100.0 * flops / kH200Bf16PeakFlops,
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

// Host time per issued operation as the executor issues them (a kernel and an event record
// per op): batches of 128, well within the launch queue, so the loop never waits on the GPU;
// the drain between batches is not timed. items_per_second → µs per op = 1e6 / rate.
void BM_IssueOverhead(benchmark::State& state) {
  Device* d = BenchDevice();
  if (d == nullptr) {
    state.SkipWithError(NoDeviceReason().c_str());
    return;
  }
  void* buf = FilledBuffer(1024, DType::kFloat32, 1, 1.0f);
  for (auto _ : state) {
    for (int i = 0; i < 128; ++i) {
      benchmark::DoNotOptimize(
          d->Fill(Lane::kCompute, FillArgs{buf, DType::kFloat32, 1024, 1, 0, 1.0f}).ok());
      benchmark::DoNotOptimize(d->Record(Lane::kCompute).ok());
    }
    state.PauseTiming();
    (void)d->Synchronize(std::chrono::seconds(60));
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * 128);
}

void Register() {
  for (const Projection& p : kProjections) {
    for (auto [pass, name] : {std::pair{Pass::kForward, "fwd"}, std::pair{Pass::kDataGrad, "dgrad"},
                              std::pair{Pass::kWeightGrad, "wgrad"}}) {
      benchmark::RegisterBenchmark((std::string("BM_Gemm/") + p.name + "/" + name).c_str(),
                                   [p, pass = pass](benchmark::State& s) { BM_Gemm(s, p, pass); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::RegisterBenchmark("BM_IssueOverhead", BM_IssueOverhead)->Unit(benchmark::kMicrosecond);
}

}  // namespace
}  // namespace shardscope::backend::bench

int main(int argc, char** argv) {
  shardscope::backend::bench::Register();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
