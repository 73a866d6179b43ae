// Times the collective estimate (the engine asks for one per collective op, thousands per
// simulated step) and prints the default model against the measured NCCL curves of
// tests/cost/data/collectives.json, size by size.
//
//   build-*/bench/collective_model_benchmark            # table + timings
//   build-*/bench/collective_model_benchmark --benchmark_filter=none   # table only
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "sim/cost/cost_model.h"
#include "tests/cost/collective_curves.h"

namespace shardscope {
namespace {

// The curves file: from the repository root (how CI runs benchmarks), else next to this
// source file (CMake compiles it by absolute path).
std::string CurvesPath() {
  const std::string relative = "tests/cost/data/collectives.json";
  if (std::FILE* f = std::fopen(relative.c_str(), "r")) {
    std::fclose(f);
    return relative;
  }
  std::string here = __FILE__;
  return here.substr(0, here.find_last_of('/') + 1) + "../" + relative;
}

void PrintModelVersusMeasured() {
  Result<std::vector<testing::Curve>> curves = testing::LoadCurves(CurvesPath());
  if (!curves.ok()) {
    std::fprintf(stderr, "%s\n", curves.status().message().c_str());
    return;
  }
  int within = 0, total = 0;
  double worst = 0;
  for (const testing::Curve& curve : *curves) {
    std::printf("\n%s (%s, %d node%s)\n", curve.id.c_str(), curve.gpu.c_str(), curve.nodes,
                curve.nodes > 1 ? "s" : "");
    std::printf("  %5s %11s %10s %10s %7s  %s\n", "gpus", "bytes", "measured", "model", "error",
                "model's choice");
    for (const testing::CurvePoint& p : curve.points) {
      Result<CollectiveEstimate> e = testing::ModelPoint(curve, p);
      if (!e.ok()) continue;
      const double err = e->busbw_gbps / p.busbw_gbps - 1.0;
      const bool counted = p.bytes >= (1 << 20) && !curve.informational;
      if (counted) {
        ++total;
        within += std::abs(err) <= 0.15;
        worst = std::max(worst, std::abs(err));
      }
      const char* tag = curve.informational     ? "  (informational)"
                        : !counted              ? "  (< 1 MiB, not validated)"
                        : !p.known_miss.empty() ? "  (known miss)"
                                                : "";
      const std::string error = p.busbw_gbps > 0 ? fmt::format("{:+6.1f}%", 100 * err) : "    n/a";
      std::printf("  %5d %11lld %10.1f %10.1f %7s  %s/%s%s\n", p.gpus,
                  static_cast<long long>(p.bytes), p.busbw_gbps, e->busbw_gbps, error.c_str(),
                  std::string(NcclAlgoName(e->algo)).c_str(),
                  std::string(NcclProtoName(e->proto)).c_str(), tag);
    }
  }
  std::printf("\nsingle-node points >= 1 MiB within 15%%: %d of %d; worst error %.1f%%\n\n", within,
              total, 100 * worst);
}

void BM_CollectiveEstimate(benchmark::State& state, const char* gpu, GroupShape shape,
                           OpType type) {
  const Hardware hw = *LookupHardware(gpu, shape.ranks_per_node, shape.nodes);
  const auto model = MakeDefaultCostModel(hw, DefaultCostParams(hw));
  int64_t bytes = 1 << 10;
  for (auto _ : state) {
    benchmark::DoNotOptimize(model->CollectiveNs(type, bytes, shape));
    bytes = bytes >= (int64_t{1} << 34) ? (1 << 10) : bytes * 2;
  }
}
BENCHMARK_CAPTURE(BM_CollectiveEstimate, h100_allreduce_8, "h100-sxm", GroupShape{8, 8, 1},
                  OpType::kAllReduce);
BENCHMARK_CAPTURE(BM_CollectiveEstimate, h100_allgather_64, "h100-sxm", GroupShape{64, 8, 8},
                  OpType::kAllGather);
BENCHMARK_CAPTURE(BM_CollectiveEstimate, b200_allreduce_32, "b200", GroupShape{32, 8, 4},
                  OpType::kAllReduce);
BENCHMARK_CAPTURE(BM_CollectiveEstimate, a100_alltoall_16, "a100-80g", GroupShape{16, 8, 2},
                  OpType::kAllToAll);

}  // namespace
}  // namespace shardscope

int main(int argc, char** argv) {
  shardscope::PrintModelVersusMeasured();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
