// libFuzzer target: arbitrary bytes through the module-tree and HF-config readers. Either input
// must give a value or a Status, never a crash, a sanitizer report or an exception; a parsed
// tree must survive a write/read round trip unchanged.
//
//   cmake -S . -B build-fuzz -DSHARDSCOPE_BUILD_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
//       -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined"
//   cmake --build build-fuzz --target tree_fuzz && build-fuzz/tests/fuzz/tree_fuzz \
//       -max_total_time=120 tests/fuzz/corpus
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/model/hf_builder.h"
#include "core/model/model_summary.h"
#include "core/model/tree_json.h"

using namespace shardscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;

  auto tree = ParseModelTree(j, "fuzz.json");
  if (tree.ok()) {
    const nlohmann::json written = ModelTreeToJson(*tree);
    auto again = ParseModelTree(written, "roundtrip");
    if (!again.ok() || ModelTreeToJson(*again) != written) std::abort();
    (void)SummarizeModel(*tree);
  }

  ModelBuildOptions options;
  options.tp = 2;
  options.ep = 2;
  auto built = BuildModelFromHfConfig(j, "fuzz-config.json", options);
  if (built.ok()) (void)SummarizeModel(*built);
  return 0;
}
