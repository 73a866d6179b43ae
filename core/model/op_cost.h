// From a compute descriptor and the step's shape to FLOPs, bytes and saved activations
// (issue: model zoo, deliverable 3). The simulator's cost model turns these into time; the
// step schedule turns the saved bytes into the `activations` memory category.
//
// Contents:
//   CheckpointMode / ActivationCheckpoint   runtime.md's modes; "selective_layer:K" parsing
//   OpContext      per-rank shape: micro-batch, sequence, tp/cp/ep, sequence parallelism
//   OpCost         per-rank forward/backward FLOPs, bytes moved, bytes saved per mode
//   DescribeOp     descriptor + shape → the work a backend runs (core/model/op_work.h)
//   EstimateOp     the closed forms: FiguresOf(DescribeOp(...)) + the memory figures
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/model/descriptor.h"
#include "core/model/dtype.h"
#include "core/model/op_work.h"
#include "core/model/saved_tensors.h"
#include "core/util/status.h"

namespace shardscope {

enum class CheckpointMode { kNone, kFull, kSelectiveOp, kSelectiveLayer };

struct ActivationCheckpoint {
  CheckpointMode mode = CheckpointMode::kSelectiveOp;
  int every_k = 1;  // selective_layer:K checkpoints every K-th unit
  // selective_op:K: of a unit's matrix multiplies (linears, routers) in forward order, every
  // K-th is recomputed instead of saved. torchtitan's op policy is K = 2 (it counts aten.mm
  // calls per checkpointed block and recomputes when count % 2 == 0). 0: every output saved.
  int recompute_every_mm = 0;
  bool operator==(const ActivationCheckpoint&) const = default;
};
// "none" | "full" | "selective_op" | "selective_op:K" (K >= 1) | "selective_layer:K" (K >= 1);
// `what` names the field.
Result<ActivationCheckpoint> ParseActivationCheckpoint(std::string_view text,
                                                       std::string_view what);
std::string ActivationCheckpointName(const ActivationCheckpoint& ac);

struct OpContext {
  int64_t batch = 1;  // micro-batch per rank (sequences)
  int64_t seq = 1;    // sequence length of the model (before CP)
  int tp = 1;
  int cp = 1;
  int ep = 1;
  bool sequence_parallel = false;  // norms/elementwise see seq / tp tokens
  bool loss_parallel = false;      // logits stay sharded over the vocabulary under tp
  DType compute_dtype = DType::kBFloat16;
  // Whose module code runs (scenario model.implementation): what autograd saves follows it
  // (core/model/saved_tensors.h).
  Implementation implementation = Implementation::kTransformers;
};

// Work figures (FLOPs, bytes, launches, GEMM shape: FiguresOf of the module's description)
// and memory figures (saved, workspace, input bytes) of one module.
struct OpCost {
  // Per rank, one micro-batch. FLOPs count matrix multiplies and the attention core only
  // (norms, activations, gathers are memory-bound: bytes). Conventions in op_cost.cpp.
  double fwd_flops = 0;
  double bwd_flops = 0;   // data-gradient + weight-gradient
  int64_t fwd_bytes = 0;  // bytes read + written by the forward kernels
  int64_t bwd_bytes = 0;
  // Bytes of the separate eager kernels around the op's main kernel (attention: RoPE, the
  // repeat_kv expansion, the output's transpose copy), included in fwd_bytes / bwd_bytes.
  // They run one after another with the main kernel, so the cost model adds their time to
  // the main kernel's instead of hiding them under its FLOPs.
  int64_t side_fwd_bytes = 0;
  int64_t side_bwd_bytes = 0;
  // Kernels eager PyTorch launches for the op (each leaves a short idle gap on the GPU); 0 lets
  // the cost model assume one forward and its backward_kernels.
  int fwd_kernels = 0;
  int bwd_kernels = 0;
  // Matrix-multiply shape (m×k · k×n) for the efficiency curve; 0 for non-matmul ops.
  int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0;
  // Bytes this op saves for backward when nothing is recomputed (mode none: the `saved` list
  // of its saved-tensor rule), and what torchtitan's op-level SAC stores of it (`sac_kept`:
  // matmul and attention outputs; cheap elementwise results recomputed).
  int64_t saved_bytes_none = 0;
  int64_t saved_bytes_selective = 0;
  // Transient workspace during forward (attention, the loss's logits and their fp32 copy);
  // freed when the op ends.
  int64_t workspace_bytes = 0;
  // Transient workspace during backward (the loss: the gradients of the log-probabilities and
  // of the fp32 logits, live together with the saved log-probabilities).
  int64_t backward_workspace_bytes = 0;
  // Size of the op's input activation (what `full` checkpointing keeps at a unit boundary).
  int64_t input_bytes = 0;
};

// The module's work as a backend runs it, per rank and micro-batch; InvalidInput when a
// context size is below 1.
Result<Work> DescribeOp(const OpDescriptor& op, const OpContext& ctx);

// Closed forms per kind (eager PyTorch: elementwise bytes are those of the unfused kernel
// sequence, see op_cost.cpp); linear fwd 2·tokens·in·out (÷tp for column/row variants), bwd 2×;
// attention fwd 2·batch·heads·pairs·(head_dim + v_head_dim) (pairs = seq²/2 when causal), bwd
// 2.5×. InvalidInput when a context size is below 1.
Result<OpCost> EstimateOp(const OpDescriptor& op, const OpContext& ctx);

}  // namespace shardscope
