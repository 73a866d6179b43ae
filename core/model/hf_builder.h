// Module trees from Hugging Face config.json files, as current transformers builds them.
//
// Contents:
//   BuildModelFromHfConfig   config.json (parsed) → ModelTree with descriptors on every leaf,
//                            the attention core on each attention module, the loss on the root,
//                            and source layouts when options.tp > 1 or options.ep > 1
//
// Example:
//   SS_ASSIGN_OR_RETURN(ModelTree t, BuildModelFromHfConfig(config, "config.json", {}));
//
// Supported model_types: SupportedModelTypes() (hf_spec.h). FQNs, class names, shapes, tie
// handling and the gradient_checkpointing attribute (base model and every decoder layer)
// follow transformers 5.x; tests/fixtures/trees/ pins them against exported trees.
// MPT: HF's port supports only ALiBi; with `learned_pos_emb` and ALiBi off the tree adds
// MosaicML's learned position table `transformer.wpe` [max_seq_len, d_model].
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/model/model_source.h"
#include "core/model/tree.h"
#include "core/util/status.h"

namespace shardscope {

// `source` (a file name or "built-in NAME") prefixes every error.
Result<ModelTree> BuildModelFromHfConfig(const nlohmann::json& config, const std::string& source,
                                         const ModelBuildOptions& options);

}  // namespace shardscope
