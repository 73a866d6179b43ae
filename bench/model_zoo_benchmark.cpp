// How long turning a model source into a tree takes: sweeps and `recommend` rebuild trees for
// every variant (tp/ep change the source layouts), so this is on their critical path.
//
//   cmake --build build --target model_zoo_benchmark && build/bench/model_zoo_benchmark
#include <benchmark/benchmark.h>

#include <string>

#include "core/model/model_source.h"
#include "core/model/model_summary.h"
#include "core/model/tree_json.h"

namespace shardscope {
namespace {

ModelTree MustLoad(const std::string& name, int tp = 1, int ep = 1) {
  ModelSource source;
  source.name_or_path = name;
  ModelBuildOptions options;
  options.tp = tp;
  options.ep = ep;
  auto tree = LoadModel(source, options);
  if (!tree.ok()) std::abort();
  return std::move(tree).value();
}

void BM_BuildBuiltin(benchmark::State& state, const std::string& name, int tp, int ep) {
  for (auto _ : state) {
    ModelTree t = MustLoad(name, tp, ep);
    benchmark::DoNotOptimize(t.modules.data());
  }
}
BENCHMARK_CAPTURE(BM_BuildBuiltin, llama3_8b, std::string("llama3-8b"), 1, 1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildBuiltin, llama3_405b_tp8, std::string("llama3-405b"), 8, 1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildBuiltin, deepseek_v3_ep8, std::string("deepseek-v3"), 1, 8)
    ->Unit(benchmark::kMillisecond);

void BM_Summarize(benchmark::State& state) {
  const ModelTree t = MustLoad("deepseek-v3");
  for (auto _ : state) benchmark::DoNotOptimize(SummarizeModel(t).total_params);
}
BENCHMARK(BM_Summarize)->Unit(benchmark::kMillisecond);

void BM_TreeJsonRoundTrip(benchmark::State& state) {
  const nlohmann::json j = ModelTreeToJson(MustLoad("deepseek-v3"));
  for (auto _ : state) {
    auto t = ParseModelTree(j, "bench");
    benchmark::DoNotOptimize(t.ok());
  }
  state.SetLabel(std::to_string(j.dump().size() / 1024) + " KiB tree");
}
BENCHMARK(BM_TreeJsonRoundTrip)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardscope

BENCHMARK_MAIN();
