#include "core/model/op_cost.h"

#include <algorithm>
#include <charconv>
#include <string>

// Conventions of the closed forms (all per rank, one micro-batch):
// - tokens = batch · ceil(seq / cp): context parallelism splits the sequence.
// - FLOPs count matrix multiplies and the attention core only (the figures MFU counts); norms,
//   activations, the embedding gather and the loss are memory-bound and report bytes alone.
// - Tensor parallelism: a linear whose variant is `column` (output features sharded: the
//   Shard(0) of an [out, in] weight) or `row` (input features sharded: Shard(1)) does 1/tp of
//   the work; a linear without a variant is replicated and does all of it. Attention heads are
//   split over tp (kv heads too, but never below one). With sequence parallelism, norms and the
//   residual stream see tokens / tp.
// - Backward = 2× forward for matrix multiplies (data gradient + weight gradient) and 2.5×
//   for attention (the flash-attention convention: backward runs five matmuls of the size of
//   forward's two, since it recomputes QKᵀ).
// - Causal attention does half the score matrix; a sliding window w bounds each query's keys.
// - Memory-bound bytes are those of eager PyTorch, one kernel per tensor op, since the
//   simulator models eager execution (torch.compile fuses most of this away):
//   RMSNorm as torchtitan / transformers write it, x.float(), pow, mean, mul by rsqrt,
//   type_as, mul by weight, ~38 B per element forward and ~60 backward, plus the residual add
//   that produces the norm's input in a pre-norm block (one add per norm: 6 B forward, 6 B for
//   the gradient accumulation); fused LayerNorm (one kernel) plus that add. SwiGLU as silu then
//   mul (5 element-passes forward, 8 backward). Attention's own elementwise work around the
//   fused kernel: RoPE on q and k in fp32 (upcast, complex multiply, downcast: ~20 B per
//   element each way), repeat_kv's materialised k and v for grouped-query attention, the
//   output's transpose().contiguous(). Cross-entropy on fp32 logits (torchtitan:
//   cross_entropy(pred.float(), labels)): upcast, log_softmax, and their backwards.
// - Routed experts see tokens · top_k / ep tokens per rank: routing is assumed balanced and
//   expert parallelism splits the experts, each rank receiving its experts' tokens.
namespace shardscope {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Shape {
  int64_t tokens = 0;      // tokens this rank processes in the dense part (after cp)
  int64_t seq_tokens = 0;  // tokens seen by norms/elementwise (after sequence parallelism)
  int64_t act_bytes = 2;   // bytes per activation element (compute dtype)
};

Shape MakeShape(const OpContext& ctx) {
  Shape s;
  s.tokens = ctx.batch * CeilDiv(ctx.seq, ctx.cp);
  s.seq_tokens = ctx.sequence_parallel ? CeilDiv(s.tokens, ctx.tp) : s.tokens;
  s.act_bytes = DTypeBytes(ctx.compute_dtype);
  return s;
}

OpCost Linear(const OpDescriptor& op, const OpContext& ctx, const Shape& s) {
  int64_t in = op.dim("in"), out = op.dim("out");
  if (op.variant == "column") out = CeilDiv(out, ctx.tp);
  if (op.variant == "row") in = CeilDiv(in, ctx.tp);
  const int64_t b = s.act_bytes;
  OpCost c;
  c.gemm_m = s.tokens;
  c.gemm_k = in;
  c.gemm_n = out;
  c.fwd_flops =
      2.0 * static_cast<double>(s.tokens) * static_cast<double>(in) * static_cast<double>(out);
  // The bias add is one FLOP per output element and needs no weight gradient matmul.
  if (op.dim("bias")) c.fwd_flops += static_cast<double>(s.tokens * out);
  c.bwd_flops = 2.0 * c.fwd_flops;
  c.input_bytes = s.tokens * in * b;
  c.fwd_bytes = (s.tokens * in + in * out + s.tokens * out) * b;
  c.bwd_bytes = 2 * c.fwd_bytes;
  c.saved_bytes_none = op.dim("shared_input") ? 0 : c.input_bytes;
  c.saved_bytes_selective = s.tokens * out * b;  // the matmul output is kept
  return c;
}

OpCost Embedding(const OpDescriptor& op, const Shape& s) {
  const int64_t dim = op.dim("dim");
  OpCost c;
  c.input_bytes = s.tokens * 8;  // int64 token ids
  c.fwd_bytes = c.input_bytes + 2 * s.tokens * dim * s.act_bytes;
  c.bwd_bytes = 3 * s.tokens * dim * s.act_bytes;  // read dY, read-modify-write the rows
  c.fwd_kernels = 1;
  c.bwd_kernels = 3;  // embedding_dense_backward: sort the ids, sum rows, scatter
  c.saved_bytes_none = c.input_bytes;
  c.saved_bytes_selective = c.input_bytes;
  return c;
}

OpCost Norm(const OpDescriptor& op, const Shape& s) {
  const int64_t dim = op.dim("dim");
  // RMSNorm keeps one fp32 statistic per token (rstd); LayerNorm two (mean, rstd).
  const int64_t stats = (op.variant == "layernorm" ? 8 : 4) * s.seq_tokens;
  OpCost c;
  c.input_bytes = s.seq_tokens * dim * s.act_bytes;
  const int64_t elems = s.seq_tokens * dim;
  const int64_t residual_fwd = 3 * elems * s.act_bytes, residual_bwd = 3 * elems * s.act_bytes;
  if (op.variant == "layernorm") {  // native_layer_norm: one fused kernel each way
    c.fwd_bytes = 2 * c.input_bytes + dim * s.act_bytes + stats + residual_fwd;
    c.bwd_bytes = 3 * c.input_bytes + 2 * dim * s.act_bytes + stats + residual_bwd;
    c.fwd_kernels = 1 + 1;  // + the residual add
    c.bwd_kernels = 2 + 1;  // input and weight gradients + the residual gradient's add
  } else {                  // composite RMSNorm: fp32 intermediates, one kernel per op
    c.fwd_bytes = 38 * elems + dim * s.act_bytes + stats + residual_fwd;
    c.bwd_bytes = 60 * elems + 2 * dim * s.act_bytes + stats + residual_bwd;
    // float, pow, mean, add eps, rsqrt, mul, type_as, mul weight + the residual add; backward
    // through each of them (the weight's sum, the two-input muls twice) + the residual add.
    c.fwd_kernels = 9;
    c.bwd_kernels = 14;
  }
  c.saved_bytes_none = c.input_bytes + stats;
  c.saved_bytes_selective = 0;  // recomputed from the block input and saved matmul outputs
  return c;
}

OpCost Activation(const OpDescriptor& op, const OpContext& ctx, const Shape& s) {
  // Sits between a column and a row linear: its features are split over tp.
  const int64_t dim = CeilDiv(op.dim("dim"), ctx.tp);
  const int64_t branches = op.dim("gated") ? 2 : 1;
  const int64_t one = s.tokens * dim * s.act_bytes;
  OpCost c;
  c.input_bytes = branches * one;
  // Gated: act(gate) (read + write), then mul by up (two reads, one write); backward reads
  // the gradient, both saved inputs and the activation output, writes both gradients.
  // Ungated: one elementwise kernel each way.
  c.fwd_bytes = (branches == 2 ? 5 : 2) * one;
  c.bwd_bytes = (branches == 2 ? 8 : 3) * one;
  c.fwd_kernels = branches == 2 ? 2 : 1;
  c.bwd_kernels = branches == 2 ? 3 : 1;
  c.saved_bytes_none = c.input_bytes;
  c.saved_bytes_selective = 0;  // its inputs are matmul outputs, already kept
  return c;
}

// Query-key pairs of one sequence of length n with window w (0 = full).
double AttentionPairs(int64_t n, int64_t w, bool causal) {
  const double nd = static_cast<double>(n);
  if (!causal) return nd * static_cast<double>(w > 0 ? std::min(w, n) : n);
  if (w <= 0 || w >= n) return nd * nd / 2.0;
  const double wd = static_cast<double>(w);
  return nd * wd - wd * wd / 2.0;
}

OpCost Attention(const OpDescriptor& op, const OpContext& ctx, const Shape& s) {
  const int64_t heads = CeilDiv(op.dim("heads"), ctx.tp);
  const int64_t kv_heads =
      std::max<int64_t>(1, CeilDiv(op.dim("kv_heads", op.dim("heads")), ctx.tp));
  const int64_t qk_dim = op.dim("head_dim");
  const int64_t v_dim = op.dim("v_head_dim") > 0 ? op.dim("v_head_dim") : qk_dim;
  const double pairs = AttentionPairs(ctx.seq, op.dim("window"), op.dim("causal") != 0);
  OpCost c;
  // QKᵀ: 2·pairs·qk_dim per head; PV: 2·pairs·v_dim. Context parallelism splits the queries
  // (ring attention): each rank does 1/cp of the pairs.
  c.fwd_flops = 2.0 * static_cast<double>(ctx.batch) * static_cast<double>(heads) * pairs *
                static_cast<double>(qk_dim + v_dim) / static_cast<double>(ctx.cp);
  c.bwd_flops = 2.5 * c.fwd_flops;
  const int64_t b = s.act_bytes;
  const int64_t q = s.tokens * heads * qk_dim * b;
  const int64_t k = s.tokens * kv_heads * qk_dim * b;
  const int64_t v = s.tokens * kv_heads * v_dim * b;
  const int64_t o = s.tokens * heads * v_dim * b;
  const int64_t lse = s.tokens * heads * 4;  // fp32 log-sum-exp per query and head
  c.input_bytes = q + k + v;
  // Eager work around the fused kernel (conventions above), bytes moved per direction: RoPE
  // on q and k (~20 bytes per 2-byte element: 10 per byte), k and v expanded to all heads for
  // grouped-query attention, and the output's transpose copy.
  const int64_t rope = 10 * (q + k);
  const int64_t repeat_kv = kv_heads < heads ? (k + v) + (k + v) * heads / kv_heads : 0;
  const int64_t layout = 2 * o;
  const int64_t eager = rope + repeat_kv + layout;
  c.fwd_bytes = q + k + v + o + lse + eager;
  // Reads q,k,v,o,dO,lse; writes dq,dk,dv; plus the backward of the eager work.
  c.bwd_bytes = 2 * (q + k + v) + 2 * o + lse + eager;
  c.side_fwd_bytes = eager;
  c.side_bwd_bytes = eager;
  // The fused kernel; RoPE on q and k (upcast, complex multiply, downcast: 3 each); repeat_kv's
  // two copies; the output's transpose copy. Backward mirrors them, and the fused backward
  // adds ~3 small kernels of its own (dO·O, dQ accumulation and conversion).
  const int side_kernels = 6 + (kv_heads < heads ? 2 : 0) + 1;
  c.fwd_kernels = 1 + side_kernels;
  c.bwd_kernels = 1 + 3 + side_kernels;
  c.saved_bytes_none = q + k + v + o + lse;
  // q, k, v are the projections' outputs, counted (or recomputed) there; the fused kernel's
  // own outputs are o and the log-sum-exp.
  c.saved_bytes_selective = o + lse;
  return c;
}

OpCost Router(const OpDescriptor& op, const Shape& s) {
  const int64_t dim = op.dim("dim"), experts = op.dim("experts"), top_k = op.dim("top_k");
  const int64_t b = s.act_bytes;
  OpCost c;
  c.gemm_m = s.tokens;
  c.gemm_k = dim;
  c.gemm_n = experts;
  c.fwd_flops = 2.0 * static_cast<double>(s.tokens) * static_cast<double>(dim * experts);
  c.bwd_flops = 2.0 * c.fwd_flops;
  c.input_bytes = s.tokens * dim * b;
  const int64_t probs = s.tokens * experts * 4;  // softmax/sigmoid scores in fp32
  c.fwd_bytes = c.input_bytes + dim * experts * b + 2 * probs + s.tokens * top_k * 12;
  c.bwd_bytes = 2 * c.fwd_bytes;
  c.saved_bytes_none = (op.dim("shared_input") ? 0 : c.input_bytes) + probs;
  c.saved_bytes_selective = s.tokens * experts * b;  // the logits (a matmul output)
  return c;
}

OpCost Experts(const OpDescriptor& op, const OpContext& ctx, const Shape& s) {
  const int64_t experts = op.dim("experts"), top_k = op.dim("top_k");
  const int64_t dim = op.dim("dim"), ffn = op.dim("ffn");
  const int64_t branches = op.dim("gated") ? 2 : 1;
  const int64_t local_experts = std::max<int64_t>(1, CeilDiv(experts, ctx.ep));
  const int64_t routed = CeilDiv(s.tokens * top_k, ctx.ep);
  const int64_t b = s.act_bytes;
  OpCost c;
  c.gemm_m = CeilDiv(routed, local_experts);
  c.gemm_k = dim;
  c.gemm_n = branches * ffn;
  // Up (and gate) projection then down projection, per routed token.
  c.fwd_flops = 2.0 * static_cast<double>(routed) * static_cast<double>(dim) *
                static_cast<double>(ffn) * static_cast<double>(branches + 1);
  c.bwd_flops = 2.0 * c.fwd_flops;
  const int64_t weights = local_experts * (branches + 1) * dim * ffn * b;
  c.input_bytes = routed * dim * b;  // the permuted copy of the routed tokens
  c.fwd_bytes = weights + routed * (2 * dim + 2 * branches * ffn + ffn) * b;
  c.bwd_bytes = 2 * c.fwd_bytes;
  // Saved: permuted input, gate/up outputs (the activation's input), the activation output
  // (down's input), and the routing weights.
  c.saved_bytes_none = routed * (dim + branches * ffn + ffn) * b + s.tokens * top_k * 4;
  c.saved_bytes_selective = routed * (branches * ffn + dim) * b;  // grouped-GEMM outputs
  return c;
}

OpCost Loss(const OpDescriptor& op, const OpContext& ctx, const Shape& s) {
  const int64_t vocab = ctx.loss_parallel ? CeilDiv(op.dim("vocab"), ctx.tp) : op.dim("vocab");
  OpCost c;
  const int64_t logits = s.tokens * vocab;
  // Transient, freed once backward has consumed the gradient of the logits: the logits in the
  // compute dtype, their fp32 copy and the fp32 log-probabilities log_softmax saves (the
  // forward peak; backward holds log-probs, their gradient and the input gradient, alike).
  c.workspace_bytes = logits * (s.act_bytes + 2 * 4);
  c.input_bytes = logits * s.act_bytes;
  // Upcast (read bf16, write fp32), log_softmax (two reads, one write), nll.
  c.fwd_bytes = logits * (s.act_bytes + 4) + logits * 3 * 4;
  // nll backward writes the fp32 gradient, log_softmax backward reads it and the saved
  // log-probs and writes fp32, the upcast's backward casts it down.
  c.bwd_bytes = logits * 4 + logits * 3 * 4 + logits * (4 + s.act_bytes);
  c.fwd_kernels = 3;  // upcast, log_softmax, nll_loss
  c.bwd_kernels = 3;
  return c;
}

// K of "<prefix>K" when `text` is exactly that with K >= 1; else 0.
int EveryK(std::string_view text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix) return 0;
  const std::string_view k = text.substr(prefix.size());
  int every = 0;
  const auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), every);
  return ec == std::errc() && ptr == k.data() + k.size() && every >= 1 ? every : 0;
}

}  // namespace

Result<ActivationCheckpoint> ParseActivationCheckpoint(std::string_view text,
                                                       std::string_view what) {
  ActivationCheckpoint ac;
  if (text == "none") {
    ac.mode = CheckpointMode::kNone;
    return ac;
  }
  if (text == "full") {
    ac.mode = CheckpointMode::kFull;
    return ac;
  }
  if (text == "selective_op") {
    ac.mode = CheckpointMode::kSelectiveOp;
    return ac;
  }
  if (const int every = EveryK(text, "selective_op:"); every > 0) {
    ac.mode = CheckpointMode::kSelectiveOp;
    ac.recompute_every_mm = every;
    return ac;
  }
  if (const int every = EveryK(text, "selective_layer:"); every > 0) {
    ac.mode = CheckpointMode::kSelectiveLayer;
    ac.every_k = every;
    return ac;
  }
  return InvalidInput(
      std::string(what) + ": bad activation checkpoint mode '" + std::string(text) +
      "' (expected none, full, selective_op, selective_op:K or selective_layer:K with K >= 1)");
}

std::string ActivationCheckpointName(const ActivationCheckpoint& ac) {
  switch (ac.mode) {
    case CheckpointMode::kNone:
      return "none";
    case CheckpointMode::kFull:
      return "full";
    case CheckpointMode::kSelectiveOp:
      return ac.recompute_every_mm > 0 ? "selective_op:" + std::to_string(ac.recompute_every_mm)
                                       : "selective_op";
    case CheckpointMode::kSelectiveLayer:
      return "selective_layer:" + std::to_string(ac.every_k);
  }
  return "?";
}

Result<OpCost> EstimateOp(const OpDescriptor& op, const OpContext& ctx) {
  if (ctx.batch < 1 || ctx.seq < 1 || ctx.tp < 1 || ctx.cp < 1 || ctx.ep < 1) {
    return InvalidInput("op cost: batch, seq, tp, cp and ep must all be >= 1 (got batch=" +
                        std::to_string(ctx.batch) + ", seq=" + std::to_string(ctx.seq) +
                        ", tp=" + std::to_string(ctx.tp) + ", cp=" + std::to_string(ctx.cp) +
                        ", ep=" + std::to_string(ctx.ep) + ")");
  }
  const Shape s = MakeShape(ctx);
  switch (op.kind) {
    case OpKind::kLinear:
      return Linear(op, ctx, s);
    case OpKind::kEmbedding:
      return Embedding(op, s);
    case OpKind::kNorm:
      return Norm(op, s);
    case OpKind::kActivation:
      return Activation(op, ctx, s);
    case OpKind::kAttention:
      return Attention(op, ctx, s);
    case OpKind::kRouter:
      return Router(op, s);
    case OpKind::kExperts:
      return Experts(op, ctx, s);
    case OpKind::kLoss:
      return Loss(op, ctx, s);
  }
  return InvalidInput("op cost: unknown op kind");
}

}  // namespace shardscope
