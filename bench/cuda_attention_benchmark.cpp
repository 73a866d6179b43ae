// Our flash-attention kernels through the CUDA device at Llama 3 8B's shape (32 query heads,
// 8 kv heads of 128, causal) for 4096- and 8192-token sequences: forward (target >= 50% of
// the H200's 989 TFLOP/s bf16 peak) and backward. FLOPs count the visible (query, key) pairs
// only: 4·d per pair forward (Q·Kᵀ and P·V), 10·d backward (recompute S, dV, dP, dQ, dK),
// as FlashAttention's own benchmarks do.
//
// Run: build/bench/cuda_attention_benchmark --benchmark_min_time=0.05s
#include <benchmark/benchmark.h>

#include "bench/cuda_bench_util.h"

namespace shardscope::backend::bench {
namespace {

void BM_Attention(benchmark::State& state, int64_t seq, bool backward) {
  Device* d = BenchDevice();
  if (d == nullptr) {
    state.SkipWithError(NoDeviceReason().c_str());
    return;
  }
  AttentionArgs a;
  a.batch = 1;
  a.heads = 32;
  a.kv_heads = 8;
  a.q_seq = a.kv_seq = seq;
  a.head_dim = a.v_head_dim = 128;
  a.causal = true;
  const int64_t nq = a.heads * seq * 128, nk = a.kv_heads * seq * 128;
  a.q = FilledBuffer(nq, DType::kBFloat16, 1, 1.0f);
  a.k = FilledBuffer(nk, DType::kBFloat16, 2, 1.0f);
  a.v = FilledBuffer(nk, DType::kBFloat16, 3, 1.0f);
  a.out = FilledBuffer(nq, DType::kBFloat16, 4, 1.0f);
  a.lse = static_cast<float*>(FilledBuffer(a.heads * seq, DType::kFloat32, 5, 1.0f));
  a.d_out = FilledBuffer(nq, DType::kBFloat16, 6, 1.0f);
  a.d_q = FilledBuffer(nq, DType::kBFloat16, 7, 1.0f);
  a.d_k = FilledBuffer(nk, DType::kBFloat16, 8, 1.0f);
  a.d_v = FilledBuffer(nk, DType::kBFloat16, 9, 1.0f);
  if (!a.q || !a.k || !a.v || !a.out || !a.lse || !a.d_out || !a.d_q || !a.d_k || !a.d_v) {
    state.SkipWithError("out of memory");
    return;
  }
  if (!d->AttentionForward(Lane::kCompute, a).ok()) {  // a real lse for the backward
    state.SkipWithError("attention forward failed");
    return;
  }
  const double pairs = static_cast<double>(seq) * (seq + 1) / 2;
  const double flops = (backward ? 10.0 : 4.0) * 128 * pairs * a.heads;
  for (auto _ : state) {
    const double s = TimeOnLane(3, [&] {
      return backward ? d->AttentionBackward(Lane::kCompute, a)
                      : d->AttentionForward(Lane::kCompute, a);
    });
    if (s <= 0) {
      state.SkipWithError("attention failed");
      return;
    }
    state.SetIterationTime(s / 3);
  }
  state.counters["TFLOPs"] =
      benchmark::Counter(flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_pct"] = benchmark::Counter(100.0 * flops / kH200Bf16PeakFlops,
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_Attention, fwd_4096, 4096, false)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Attention, fwd_8192, 8192, false)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Attention, bwd_8192, 8192, true)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardscope::backend::bench

BENCHMARK_MAIN();
