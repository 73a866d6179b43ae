// libFuzzer target: arbitrary bytes as a module tree, planned, scheduled and simulated under a
// few small scenarios, the plan written as JSON. Every input must give a value or a Status
// (with a message), never a crash, a sanitizer report or an exception; a schedule that was
// built must simulate, to a finite, non-negative step time (a wrapped duration is negative).
//
// Input: the first byte picks the scenario (activation checkpointing, tp, reshard, world,
// pipeline, accumulation, expandable segments);
// the rest is the module tree JSON (formats.md §1a).
//
//   cmake -S . -B build-fuzz -DSHARDSCOPE_BUILD_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
//       -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined"
//   cmake --build build-fuzz --target plan_fuzz && build-fuzz/tests/fuzz/plan_fuzz \
//       -max_total_time=120 tests/fuzz/corpus/plan
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/config/scenario.h"
#include "core/model/tree_json.h"
#include "core/plan/plan_json.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_options.h"
#include "core/util/json_guard.h"
#include "sim/engine/simulator.h"

using namespace shardscope;

namespace {

void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "plan_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Small jobs (short sequences, few ranks) keep one execution in milliseconds under ASan.
nlohmann::json ScenarioFor(uint8_t choice) {
  static const char* const kCheckpoint[] = {"none", "full", "selective_op", "selective_layer:2"};
  nlohmann::json s = {
      {"model", "llama3-8b"},  // replaced by the fuzzed tree
      {"cluster", {{"nodes", 1}, {"gpus_per_node", (choice & 0x10) ? 8 : 4}}},
      {"parallelism", {{"dp_shard", -1}, {"tp", (choice & 0x04) ? 2 : 1}}},
      {"training",
       {{"local_batch", 1},
        {"seq_len", 256},
        {"activation_checkpoint", kCheckpoint[choice & 0x03]}}},
      {"fsdp", {{"reshard_after_forward", (choice & 0x08) == 0}}},
  };
  // A pipeline (the stage split, tied weights across chunks) and gradient accumulation (its
  // passes under a pipeline).
  if (choice & 0x20) {
    s["parallelism"]["pp"] = 2;
    s["training"]["local_batch"] = 2;
  }
  if (choice & 0x40) s["training"]["grad_accum"] = 2;
  // The caching allocator's expandable segments (its replay of every buffer of the step).
  if (choice & 0x80) s["training"]["expandable_segments"] = true;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t choice = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (!CheckJsonText(text, "fuzz.json").ok()) return 0;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto tree = ParseModelTree(j, "fuzz.json");
  if (!tree.ok()) return 0;

  auto scenario = ParseScenario(ScenarioFor(choice), "fuzz-scenario.json", "/");
  if (!scenario.ok()) Fail("a fixed scenario does not validate", scenario.status().message());
  auto plan = PlanScenario(*scenario, *tree);
  if (!plan.ok()) {
    if (plan.status().message().empty()) Fail("a plan error without a message", std::string(text));
    return 0;
  }
  (void)PlanToJson(*plan).dump();
  auto schedule = BuildScenarioSchedule(*scenario, *tree, *plan);
  if (!schedule.ok()) {
    if (schedule.status().message().empty()) Fail("a schedule error without a message", "");
    return 0;
  }
  sim::SimulateOptions options;
  options.keep_memory_samples = false;
  auto pricing = sim::PriceScenario(*scenario, *tree, options);
  if (!pricing.ok()) return 0;
  auto simulated = sim::SimulateSchedule(std::move(*schedule), *pricing->cost, pricing->ctx);
  // A schedule the builder accepted must simulate: an error here ("frees buffer 16 which is
  // not live", "negative duration") is the builder's or the pricing's bug, not bad input.
  if (!simulated.ok()) Fail("a built schedule does not simulate", simulated.status().message());
  const double t = simulated->summary.step_time_s;
  if (!std::isfinite(t) || t < 0) Fail("a negative or non-finite step time", std::string(text));
  return 0;
}
