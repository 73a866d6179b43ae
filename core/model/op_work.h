// What one compute item runs, as a backend would launch it: typed work descriptions with no
// cost figures (issue 10). A CUDA or CPU backend executes them at their shapes; the
// simulator's cost model (sim/cost) prices them. Efficiencies, kernel launch gaps and the
// per-element traffic of PyTorch's optimizer and copy kernels live in sim/cost, not here.
//
// Contents:
//   GemmWork           dense matmuls: m, n, k, count, dtypes; which operand is the weight
//   GroupedGemmWork    routed experts: local experts, routed tokens, dims (grouped GEMMs)
//   AttentionWork      fused scaled-dot-product attention and its eager side kernels
//   EmbeddingWork      token gather (and its scatter-add backward)
//   EltwiseWork        a chain of eager elementwise / reduction kernels: norms, activations
//   LossWork           cross-entropy over the logits
//   OptimizerWork      one optimizer step over a set of parameters
//   FsdpCopyWork       FSDP2's copies on the compute stream (copy-out, reduce-scatter copy-in)
//   Work               one of them (std::variant)
//   WorkFigures        FLOPs, bytes and launches a model module's description implies
//   FiguresOf          Work → WorkFigures (model modules only; see below)
#pragma once

#include <cstdint>
#include <variant>

#include "core/model/dtype.h"

namespace shardscope {

// C[m×n] = A[m×k] · W[k×n], `count` identical ones; A is the activation, W the weight (the
// nn.Linear weight, transposed). Backward runs two GEMMs per forward one: the data gradient
// dA[m×k] = dC · Wᵀ and the weight gradient dW[k×n] = Aᵀ · dC, each 2·m·n·k FLOPs.
struct GemmWork {
  int64_t m = 0, n = 0, k = 0;
  int count = 1;
  DType a_dtype = DType::kBFloat16;
  DType w_dtype = DType::kBFloat16;
  DType out_dtype = DType::kBFloat16;
  bool bias = false;  // + a bias add over the output (one FLOP per element, no GEMM)
  // A router's scores: softmax / sigmoid over n = experts in fp32, then top-k selection (ids
  // and fp32 weights) per token; 0 for a plain linear.
  int64_t router_top_k = 0;
  // The backward GEMMs as a backend launches them (out[m×n] = a[m×k] · b[k×n]):
  // dA = dC · Wᵀ (m×k, inner n) and dW = Aᵀ · dC (k×n, inner m, written in the weight's dtype).
  GemmWork DataGradient() const {
    GemmWork g = *this;
    g.n = k;
    g.k = n;
    g.a_dtype = out_dtype;
    g.out_dtype = a_dtype;
    g.bias = false;
    g.router_top_k = 0;
    return g;
  }
  GemmWork WeightGradient() const {
    GemmWork g = *this;
    g.m = k;
    g.k = m;
    g.a_dtype = a_dtype;
    g.w_dtype = out_dtype;
    g.out_dtype = w_dtype;
    g.bias = false;
    g.router_top_k = 0;
    return g;
  }
};

// MoE routed experts on this rank: `experts` local experts, `routed_tokens` (token, expert)
// pairs spread evenly over them; per expert an up projection dim → branches·ffn (gate and up
// fused when gated), the activation, and a down projection ffn → dim.
struct GroupedGemmWork {
  int64_t experts = 1;
  int64_t routed_tokens = 0;
  int64_t dim = 0, ffn = 0;
  int branches = 1;  // 2: gated (SwiGLU)
  DType dtype = DType::kBFloat16;
  int64_t tokens_per_expert() const { return (routed_tokens + experts - 1) / experts; }
};

// Fused attention over `batch` sequences of `seq` keys; the queries are split into
// `query_shards` load-balanced shards (context parallelism) of which this rank runs one.
// Around the fused kernel eager PyTorch runs RoPE on q and k in fp32, repeat_kv's expansion
// of k and v when kv_heads < heads, and the output's transpose().contiguous().
struct AttentionWork {
  int64_t batch = 1;
  int64_t heads = 1, kv_heads = 1;
  int64_t seq = 1;
  int query_shards = 1;
  int64_t head_dim = 0, v_head_dim = 0;
  int64_t window = 0;  // sliding window (0: full)
  bool causal = true;
  DType dtype = DType::kBFloat16;
  int64_t q_seq() const { return (seq + query_shards - 1) / query_shards; }  // queries per sequence
  int64_t kv_seq() const { return seq; }  // keys each query shard attends over (all gathered)
  int64_t query_tokens() const { return batch * q_seq(); }
};

// Row gather of `tokens` int64 ids from a [vocab × dim] table; backward is
// embedding_dense_backward (sort the ids, sum rows, scatter-add).
struct EmbeddingWork {
  int64_t tokens = 0, dim = 0, vocab = 0;
  DType dtype = DType::kBFloat16;
};

// A chain of eager kernels over `elements` elements (the description of the norm,
// activation, residual add, ... as eager PyTorch runs it: op_cost.cpp): the bytes they read
// and write in all, and how many kernels they are, per direction.
struct EltwiseWork {
  int64_t elements = 0;
  int64_t fwd_bytes = 0, bwd_bytes = 0;
  int fwd_kernels = 1, bwd_kernels = 1;
  DType dtype = DType::kBFloat16;
};

// cross_entropy(logits.float(), labels) over `tokens` rows of `vocab` logits (local vocab
// under loss parallelism): upcast, log_softmax, nll_loss and their backwards.
struct LossWork {
  int64_t tokens = 0, vocab = 0;
  DType logits_dtype = DType::kBFloat16;
  DType compute_dtype = DType::kFloat32;
};

enum class OptimizerKind : uint8_t { kAdamW, kAdam, kSgd };
enum class OptimizerImpl : uint8_t {
  kForeach,  // multi-tensor kernels, one per elementwise step (PyTorch's and torchtitan's default)
  kFused,    // one fused kernel per step (fused=True)
};

// One optimizer step over `elements` parameters after gradient-norm clipping (torchtitan
// clips first). Bytes are given too because a unit may mix parameter dtypes; with one dtype
// param_bytes = elements × DTypeBytes(param_dtype). Gradients are stored in the parameter's
// dtype (FSDP2 casts the reduced shard back), states (Adam's two moments) in state_dtype.
struct OptimizerWork {
  OptimizerKind kind = OptimizerKind::kAdamW;
  OptimizerImpl impl = OptimizerImpl::kForeach;
  int64_t elements = 0;
  int64_t param_bytes = 0;
  int64_t grad_bytes = 0;
  DType param_dtype = DType::kFloat32;
  DType grad_dtype = DType::kFloat32;
  DType state_dtype = DType::kFloat32;
  int states() const { return kind == OptimizerKind::kSgd ? 0 : 2; }
};

// FSDP2's copies on the compute stream: kCopyOut, split_with_sizes_copy of the all-gather
// output into the unsharded parameters; kReduceCopyIn, chunk_cat of the unsharded gradients
// into the reduce-scatter input (cast to the reduce dtype, padded to S shards). Bytes are
// given as with OptimizerWork (mixed dtypes); with one dtype src_bytes = elements ×
// DTypeBytes(src_dtype), dst_bytes likewise.
struct FsdpCopyWork {
  // kAccumulate: FSDP2's post_backward without gradient sync, the unit's gradients cast into
  // (first micro-step) or added to (later ones) the unsharded accumulator, one kernel per
  // parameter; a reduce copy-in of an accumulation reads the accumulator.
  enum class Which : uint8_t { kCopyOut, kReduceCopyIn, kAccumulate };
  Which which = Which::kCopyOut;
  int64_t elements = 0;
  int64_t src_bytes = 0, dst_bytes = 0;  // bytes read, bytes written
  DType src_dtype = DType::kBFloat16;
  DType dst_dtype = DType::kBFloat16;
  int kernels = 1;  // kernels launched
};

using Work = std::variant<GemmWork, GroupedGemmWork, AttentionWork, EmbeddingWork, EltwiseWork,
                          LossWork, OptimizerWork, FsdpCopyWork>;

// What a model module's description implies, per rank and micro-batch: FLOPs of the matrix
// multiplies and the attention core, bytes read + written, kernels launched. The eager side
// kernels (attention's RoPE, repeat_kv and layout copies) are counted in `*_bytes` and again
// in `side_*_bytes`. Work figures only: how fast any of it runs is sim/cost's.
struct WorkFigures {
  double fwd_flops = 0, bwd_flops = 0;
  int64_t fwd_bytes = 0, bwd_bytes = 0;
  int64_t side_fwd_bytes = 0, side_bwd_bytes = 0;
  int fwd_kernels = 0, bwd_kernels = 0;  // 0: one GEMM forward, the cost model's count backward
  int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0;  // one GEMM's shape, 0 when not a GEMM
};

// The closed forms of op_cost.cpp's conventions for GEMMs, grouped GEMMs, attention,
// embedding, eager chains and the loss. OptimizerWork and FsdpCopyWork have none here: their
// traffic depends on the kernels PyTorch picks, which sim/cost prices (zero figures).
WorkFigures FiguresOf(const Work& work);

// Query-key pairs one sequence of length n attends with window w (0 = full).
double AttentionPairs(int64_t n, int64_t w, bool causal);

}  // namespace shardscope
