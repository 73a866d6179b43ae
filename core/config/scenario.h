// The scenario (job) file of formats.md §1: one training job as JSON.
//
// Contents:
//   ClusterConfig, ParallelismConfig, TrainingConfig, AdapterConfig   one struct per section
//   PpSchedule, Optimizer, AttentionBackend                          enumerated choices
//   Scenario            every section with defaults filled + the resolved JSON
//   LoadScenario        reads a file, applies `--set path=value` overrides, validates
//   ParseScenario       the same from a JSON document already in memory
//   ApplyOverride       one `path=value` onto a JSON document (value: JSON if it parses, else
//   string) ScenarioMeshLayout  the planning sizes (planning.md §1.2) of a scenario; CP folded into
//   FSDP ScenarioFsdpConfig  the FsdpConfig of a scenario (sizes filled from parallelism)
//   PpScheduleName, OptimizerName, AttentionBackendName
//
// Example:
//   SS_ASSIGN_OR_RETURN(Scenario s, LoadScenario("examples/dense.json",
//   {"training.local_batch=4"})); SS_ASSIGN_OR_RETURN(MeshContext mesh,
//   BuildMeshContext(ScenarioMeshLayout(s)));
//
// Errors name the file and the key path: "job.json: fsdp.forward_prefech_depth: unknown key
// (did you mean fsdp.forward_prefetch_depth?)", "job.json: parallelism.tp: expected an integer,
// got string".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/fsdp_config.h"
#include "core/mesh/mesh_context.h"
#include "core/model/model_source.h"
#include "core/model/op_cost.h"
#include "core/util/output_files.h"
#include "core/util/status.h"

namespace shardscope {

struct ClusterConfig {
  std::string gpu = "h100-sxm";  // catalog name
  int nodes = 1;
  int gpus_per_node = 8;
  std::string cost_model;  // calibration file, resolved against the scenario; "" = none
  int world_size() const { return nodes * gpus_per_node; }
};

enum class PpSchedule { k1F1B, kInterleaved1F1B, kGPipe };

struct ParallelismConfig {
  int dp_shard = 1;  // resolved (-1 in the file fills the world)
  int dp_replicate = 1;
  int tp = 1;
  int cp = 1;
  int pp = 1;
  int ep = 1;
  int edp_shard = 1;  // resolved (-1 in the file fills edp)
  bool loss_parallel = false;
  bool sequence_parallel = true;
  PpSchedule pp_schedule = PpSchedule::k1F1B;
  int pp_microbatches = 1;  // resolved (default = pp)
  int pp_virtual_stages = 1;
};

enum class Optimizer { kAdamW, kAdam, kSgd };

// Which kernel PyTorch's scaled_dot_product_attention runs, which sets attention's rate.
// kFlash: its FlashAttention-2 backend (what the 2024 torchtitan runs used; the default here).
// kCudnn: its cuDNN backend, the one current PyTorch picks on Hopper (measured ~2x FA2's
// forward rate on an H200 with torch 2.11).
enum class AttentionBackend { kFlash, kCudnn };

struct TrainingConfig {
  int64_t local_batch = 2;  // sequences per rank per micro-step
  int64_t seq_len = 8192;
  int grad_accum = 1;
  ActivationCheckpoint activation_checkpoint;  // default selective_op
  Optimizer optimizer = Optimizer::kAdamW;
  AttentionBackend attention_backend = AttentionBackend::kFlash;
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (what torchtitan's launcher sets): the
  // caching allocator grows one segment per stream in place instead of adding segments, which
  // changes the reserved estimate, not what is allocated.
  bool expandable_segments = false;
};

// The scenario's `adapter` section (planning.md §1.4): FQNs or `*` globs (one component).
struct AdapterConfig {
  std::vector<std::string> fsdp_wrap_modules;
  std::vector<std::string> fsdp_excluded_subtrees;
  std::vector<std::string> fsdp_execution_order;
  // True when any list is non-empty: the section replaces the built-in adapter.
  bool declared() const {
    return !fsdp_wrap_modules.empty() || !fsdp_excluded_subtrees.empty() ||
           !fsdp_execution_order.empty();
  }
  auto operator<=>(const AdapterConfig&) const = default;
};

struct Scenario {
  std::string source;  // file name for messages ("<inline>" when parsed from memory)
  ModelSource model;
  ClusterConfig cluster;
  ParallelismConfig parallelism;
  FsdpConfig fsdp;  // dp_shard_size / edp_shard_size filled from parallelism (CP folded in)
  TrainingConfig training;
  AdapterConfig adapter;
  nlohmann::json resolved;  // the whole scenario, every default filled, sizes resolved
};

// Reads `path`, applies each `path=value` of `overrides` in order, fills defaults and
// validates. Relative model / cost-model paths resolve against the scenario file's folder.
Result<Scenario> LoadScenario(const std::string& path,
                              const std::vector<std::string>& overrides = {});

// Same from a document; `source` names it in errors, `base_dir` resolves relative paths.
// `s` said of `scenario`: its message names the scenario's file first, once (an error of its
// model or its schedule read "tp=6 does not divide num_attention_heads" with no file).
inline Status InScenario(Status s, const Scenario& scenario) {
  if (s.ok() || scenario.source.empty() || s.message().starts_with(scenario.source + ":")) return s;
  return s.WithContext(scenario.source);
}

Result<Scenario> ParseScenario(nlohmann::json doc, const std::string& source,
                               const std::string& base_dir,
                               const std::vector<std::string>& overrides = {});

// Applies `assignment` ("training.local_batch=4") to `doc`. The path must be a scenario key
// (unknown → error with a suggestion); the value is OverrideValue's.
Status ApplyOverride(nlohmann::json& doc, std::string_view assignment);

// The value of an override's text: JSON when it parses ("4" → 4, "true", "null"), else the
// text as a string ("h100-sxm"). What ApplyOverride sets, and what a sweep's JSON reports.
nlohmann::json OverrideValue(std::string_view text);

// Planning sizes: FSDP dp_shard = scenario dp_shard·cp; planning's dp_replicate then equals
// the scenario's dp_replicate.
MeshLayout ScenarioMeshLayout(const Scenario& scenario);
// `scenario.fsdp` (already carries the sizes); kept as a function for symmetry with the layout.
const FsdpConfig& ScenarioFsdpConfig(const Scenario& scenario);

// The files a scenario reads beside itself, each named by the scenario field that names it:
// its model file (`model`: an HF config or a module tree) and its calibration file
// (`cluster.cost_model`). Commands refuse an output that would replace one of them.
std::vector<NamedPath> ScenarioInputFiles(const Scenario& scenario);

std::string_view PpScheduleName(PpSchedule s);              // "1f1b" | "interleaved_1f1b" | "gpipe"
std::string_view OptimizerName(Optimizer o);                // "adamw" | "adam" | "sgd"
std::string_view AttentionBackendName(AttentionBackend b);  // "flash" | "cudnn"

}  // namespace shardscope
