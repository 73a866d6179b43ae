// The tensors autograd saves for backward, per op kind and model implementation (issue 11,
// deliverable 1): what a module keeps between its forward and its backward is what the
// PyTorch functions it runs save, not a fixed rule per module.
//
// Contents:
//   Implementation        transformers (eager transformers modules) | torchtitan (its model code)
//   ParseImplementation / ImplementationName
//   SavedDType            compute dtype | float32 | int64
//   SavedTensor           one saved tensor: name, dtype, shape in the op's dimensions, size rule
//   SavedTensorRule       per op kind × implementation: the function mirrored, the tensors saved
//                         with nothing checkpointed, and those torchtitan's op-level SAC policy
//                         stores (outputs of matmuls and attention)
//   SavedTensorRules      the table (saved_tensors.cpp)
//   FindSavedTensorRule   the rule of (kind, variant, implementation)
//   SavedDims             the per-rank dimensions the size rules read
//   SavedBytes            Σ bytes of a list of saved tensors
//
// How the checkpoint modes act on the list (core/schedule/step_builder.cpp):
//   none            every tensor of `saved` is kept from the op's forward to its backward;
//   full            a checkpointed unit keeps its input only (the block's input);
//   selective_op:K  the unit's input plus the `sac_kept` outputs (every K-th matmul output
//                   recomputed instead), as torchtitan's SelectiveAC policy stores them.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/model/descriptor.h"
#include "core/model/dtype.h"
#include "core/util/status.h"

namespace shardscope {

enum class Implementation { kTransformers, kTorchtitan };

// "transformers" | "torchtitan"; `what` names the field for the message.
Result<Implementation> ParseImplementation(std::string_view text, std::string_view what);
std::string_view ImplementationName(Implementation impl);

enum class SavedDType { kCompute, kFloat32, kInt64 };

// Per-rank dimensions of one op (after tp / cp / ep / sequence parallelism).
struct SavedDims {
  int64_t tokens = 0;       // rows of the op's input
  int64_t in = 0, out = 0;  // linear features (per rank)
  int64_t dim = 0;          // norm / activation features (per rank), × heads for a head norm
  int64_t heads = 1;        // norm: vectors normalised per token; attention: query heads
  int64_t kv_heads = 1, head_dim = 0, v_head_dim = 0;
  int64_t routed = 0, ffn = 0, branches = 1, top_k = 0, experts = 0;  // router / experts
  int64_t vocab = 0;          // loss: logits per token (per rank)
  bool shared_input = false;  // the op's input is saved by another op already
};

struct SavedTensor {
  std::string_view name;  // e.g. "fp32 upcast"
  SavedDType dtype = SavedDType::kCompute;
  std::string_view shape;  // in the op's dimensions, e.g. "[tokens, dim]"
  int64_t (*elements)(const SavedDims&) = nullptr;
  // The op's input: not saved again when another op saves it already (shared_input).
  bool is_input = false;
};

struct SavedTensorRule {
  OpKind kind = OpKind::kLinear;
  std::string_view variant;  // empty: any variant of the kind
  Implementation impl = Implementation::kTransformers;
  std::string_view mirrors;        // the PyTorch / transformers / torchtitan function it follows
  std::vector<SavedTensor> saved;  // activation checkpointing off
  // Stored by torchtitan's op-level SAC policy: outputs of compute-intensive ops (mm, SDPA);
  // a matmul's output is the one selective_op:K recomputes every K-th time.
  std::vector<SavedTensor> sac_kept;
};

const std::vector<SavedTensorRule>& SavedTensorRules();

// The rule for an op; a variant-specific rule wins over the kind's generic one. Never null
// for the kinds the table covers (every OpKind, both implementations).
const SavedTensorRule* FindSavedTensorRule(OpKind kind, std::string_view variant,
                                           Implementation impl);

// Σ bytes of `tensors` at `dims` (inputs skipped when dims.shared_input); `compute` is the
// activation dtype.
int64_t SavedBytes(const std::vector<SavedTensor>& tensors, const SavedDims& dims, DType compute);

}  // namespace shardscope
