// Parameter counts and unit candidates of a model tree (`shardscope model`, formats.md §1c).
//
// Contents:
//   LayerGroup          consecutive blocks with one class and parameter count
//   ModelSummary        totals, embedding, per-layer and active-per-token counts, candidates
//   SummarizeModel      computes it (tied parameters counted once)
//   FindUnitCandidates  the blocks automatic discovery picks (planning.md §2 step 3c, no adapter)
//   ModelSummaryToJson  formats.md §1c
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/tree.h"

namespace shardscope {

struct LayerGroup {
  int first = 0;  // index into ModelSummary::blocks
  int count = 0;
  std::string class_name;
  int64_t params = 0;  // per block
};

struct ModelSummary {
  std::string model_type;
  std::string architecture;
  int64_t total_params = 0;             // each tied tensor once
  int64_t trainable_params = 0;         // requires_grad
  int64_t embedding_params = 0;         // tensors owned by embedding-op modules
  int64_t active_params_per_token = 0;  // routed experts count top_k / experts of theirs
  int64_t routed_expert_params = 0;
  int64_t param_bytes = 0;            // in the tree's dtypes
  bool tied = false;                  // some tensor has several FQNs
  std::vector<std::string> blocks;    // unit candidates, pre-order
  std::vector<int64_t> block_params;  // parameters under each candidate
  std::vector<LayerGroup> layer_groups;
  std::vector<std::string> expert_modules;  // `<prefix>.experts` units when ep > 1, pre-order
};

// Planning.md §2 step 3c without adapter declarations: direct children of each
// gradient_checkpointing container that have children contribute each of their children.
std::vector<std::string> FindUnitCandidates(const ModelTree& tree);

ModelSummary SummarizeModel(const ModelTree& tree);

nlohmann::json ModelSummaryToJson(const ModelSummary& summary);

}  // namespace shardscope
