#include "core/model/op_cost.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <string>

#include "core/model/loss_region.h"

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

// The saved-tensor figures of `op` (its rule in core/model/saved_tensors.cpp) at `dims`.
void SetSaved(const OpDescriptor& op, const OpContext& ctx, const SavedDims& dims, OpCost& c) {
  const SavedTensorRule* rule = FindSavedTensorRule(op.kind, op.variant, ctx.implementation);
  if (rule == nullptr) return;
  c.saved_bytes_none = SavedBytes(rule->saved, dims, ctx.compute_dtype);
  c.saved_bytes_selective = SavedBytes(rule->sac_kept, dims, ctx.compute_dtype);
}

// Each kind describes its work (op_work.h) and the memory figures the schedule needs; the
// FLOP / byte / launch figures are then derived from the description alone (FiguresOf).
OpCost Linear(const OpDescriptor& op, const OpContext& ctx, const Shape& s, Work& work) {
  int64_t in = op.dim("in"), out = op.dim("out");
  if (op.variant == "column") out = CeilDiv(out, ctx.tp);
  if (op.variant == "row") in = CeilDiv(in, ctx.tp);
  GemmWork g;
  g.m = s.tokens;
  g.k = in;
  g.n = out;
  g.a_dtype = g.w_dtype = g.out_dtype = ctx.compute_dtype;
  g.bias = op.dim("bias") != 0;
  work = g;
  const int64_t b = s.act_bytes;
  OpCost c;
  c.input_bytes = s.tokens * in * b;
  SavedDims d;
  d.tokens = s.tokens;
  d.in = in;
  d.out = out;
  d.shared_input = op.dim("shared_input") != 0;
  SetSaved(op, ctx, d, c);
  return c;
}

OpCost Embedding(const OpDescriptor& op, const OpContext& ctx, const Shape& s, Work& work) {
  EmbeddingWork e;
  e.tokens = s.tokens;
  e.dim = op.dim("dim");
  e.vocab = op.variant == "vocab" ? CeilDiv(op.dim("vocab"), ctx.tp) : op.dim("vocab");
  e.dtype = ctx.compute_dtype;
  work = e;
  OpCost c;
  c.input_bytes = s.tokens * DTypeBytes(DType::kInt64);  // the token ids
  SavedDims d;
  d.tokens = s.tokens;
  SetSaved(op, ctx, d, c);
  return c;
}

OpCost Norm(const OpDescriptor& op, const OpContext& ctx, const Shape& s, Work& work) {
  const int64_t dim = op.dim("dim");
  // A per-head norm (Qwen3's q_norm / k_norm) normalises `heads` vectors of `dim` per token,
  // inside the tensor-parallel region: its heads are split over tp, its tokens are not.
  const bool per_head = op.dim("heads") > 0;
  const int64_t heads = per_head ? CeilDiv(op.dim("heads"), ctx.tp) : 1;
  const int64_t tokens = per_head ? s.tokens : s.seq_tokens;
  // RMSNorm keeps one fp32 statistic per vector (rstd); LayerNorm two (mean, rstd).
  const int64_t stats = (op.variant == "layernorm" ? 8 : 4) * tokens * heads;
  const int64_t elems = tokens * heads * dim;
  const int64_t input = elems * s.act_bytes;
  const int64_t residual_fwd = 3 * elems * s.act_bytes, residual_bwd = 3 * elems * s.act_bytes;
  EltwiseWork e;
  e.elements = elems;
  e.dtype = ctx.compute_dtype;
  if (op.variant == "layernorm") {  // native_layer_norm: one fused kernel each way
    e.fwd_bytes = 2 * input + dim * s.act_bytes + stats + residual_fwd;
    e.bwd_bytes = 3 * input + 2 * dim * s.act_bytes + stats + residual_bwd;
    e.fwd_kernels = 1 + 1;  // + the residual add
    e.bwd_kernels = 2 + 1;  // input and weight gradients + the residual gradient's add
  } else {                  // composite RMSNorm: fp32 intermediates, one kernel per op
    e.fwd_bytes = 38 * elems + dim * s.act_bytes + stats + residual_fwd;
    e.bwd_bytes = 60 * elems + 2 * dim * s.act_bytes + stats + residual_bwd;
    // float, pow, mean, add eps, rsqrt, mul, type_as, mul weight + the residual add; backward
    // through each of them (the weight's sum, the two-input muls twice) + the residual add.
    e.fwd_kernels = 9;
    e.bwd_kernels = 14;
  }
  work = e;
  OpCost c;
  c.input_bytes = input;
  SavedDims d;
  d.tokens = tokens;
  d.heads = heads;
  d.dim = heads * dim;
  SetSaved(op, ctx, d, c);  // selective: recomputed from the block input and matmul outputs
  return c;
}

OpCost Activation(const OpDescriptor& op, const OpContext& ctx, const Shape& s, Work& work) {
  // Sits between a column and a row linear: its features are split over tp.
  const int64_t dim = CeilDiv(op.dim("dim"), ctx.tp);
  const int64_t branches = op.dim("gated") ? 2 : 1;
  const int64_t one = s.tokens * dim * s.act_bytes;
  EltwiseWork e;
  e.elements = branches * s.tokens * dim;
  e.dtype = ctx.compute_dtype;
  // Gated: act(gate) (read + write), then mul by up (two reads, one write); backward reads
  // the gradient, both saved inputs and the activation output, writes both gradients.
  // Ungated: one elementwise kernel each way.
  e.fwd_bytes = (branches == 2 ? 5 : 2) * one;
  e.bwd_bytes = (branches == 2 ? 8 : 3) * one;
  e.fwd_kernels = branches == 2 ? 2 : 1;
  e.bwd_kernels = branches == 2 ? 3 : 1;
  work = e;
  OpCost c;
  c.input_bytes = branches * one;
  SavedDims d;
  d.tokens = s.tokens;
  d.dim = dim;
  d.branches = branches;
  SetSaved(op, ctx, d, c);  // selective: its inputs are matmul outputs, already kept
  return c;
}

OpCost Attention(const OpDescriptor& op, const OpContext& ctx, const Shape& s, Work& work) {
  AttentionWork a;
  a.batch = ctx.batch;
  a.heads = CeilDiv(op.dim("heads"), ctx.tp);
  a.kv_heads = std::max<int64_t>(1, CeilDiv(op.dim("kv_heads", op.dim("heads")), ctx.tp));
  a.seq = ctx.seq;
  a.query_shards = ctx.cp;  // ring attention: each rank holds 1/cp of the queries
  a.head_dim = op.dim("head_dim");
  a.v_head_dim = op.dim("v_head_dim") > 0 ? op.dim("v_head_dim") : a.head_dim;
  a.window = op.dim("window");
  a.causal = op.dim("causal") != 0;
  a.dtype = ctx.compute_dtype;
  work = a;
  const int64_t b = s.act_bytes;
  const int64_t q = s.tokens * a.heads * a.head_dim * b;
  const int64_t k = s.tokens * a.kv_heads * a.head_dim * b;
  const int64_t v = s.tokens * a.kv_heads * a.v_head_dim * b;
  const int64_t o = s.tokens * a.heads * a.v_head_dim * b;
  (void)o;
  OpCost c;
  c.input_bytes = q + k + v;
  SavedDims d;
  d.tokens = s.tokens;
  d.heads = a.heads;
  d.kv_heads = a.kv_heads;
  d.head_dim = a.head_dim;
  d.v_head_dim = a.v_head_dim;
  // selective: q, k, v are recomputed from the projections' kept outputs; the fused kernel's
  // own outputs are o and the log-sum-exp.
  SetSaved(op, ctx, d, c);
  return c;
}

OpCost Router(const OpDescriptor& op, const OpContext& ctx, const Shape& s, Work& work) {
  const int64_t dim = op.dim("dim"), experts = op.dim("experts");
  GemmWork g;
  g.m = s.tokens;
  g.k = dim;
  g.n = experts;
  g.a_dtype = g.w_dtype = g.out_dtype = ctx.compute_dtype;
  g.router_top_k = op.dim("top_k");
  work = g;
  const int64_t b = s.act_bytes;
  OpCost c;
  c.input_bytes = s.tokens * dim * b;
  SavedDims d;
  d.tokens = s.tokens;
  d.dim = dim;
  d.experts = experts;
  d.shared_input = op.dim("shared_input") != 0;
  SetSaved(op, ctx, d, c);
  return c;
}

OpCost Experts(const OpDescriptor& op, const OpContext& ctx, const Shape& s, Work& work) {
  const int64_t experts = op.dim("experts"), top_k = op.dim("top_k");
  GroupedGemmWork g;
  g.dim = op.dim("dim");
  g.ffn = op.dim("ffn");
  g.branches = op.dim("gated") ? 2 : 1;
  g.experts = std::max<int64_t>(1, CeilDiv(experts, ctx.ep));
  // The expert mesh is carved out of dp·cp·tp (planning.md §1.2), whose ranks hold different
  // tokens: the dispatch all-to-all brings each of this rank's experts the tokens that all ep
  // ranks routed to it, ep·tokens·top_k / experts per expert with balanced routing, so its
  // experts / ep experts see tokens·top_k in all, as one rank's own tokens do without EP.
  // Dividing by ep as well (as until 2026-12-05) counted one ep-th of the expert GEMMs and of
  // their saved activations: Mixtral 8x7B at ep 8 ran at a simulated 78% MFU with 30% of the
  // step idle.
  g.routed_tokens = s.tokens * top_k;
  g.dtype = ctx.compute_dtype;
  work = g;
  const int64_t routed = g.routed_tokens, b = s.act_bytes;
  OpCost c;
  c.input_bytes = routed * g.dim * b;  // the permuted copy of the routed tokens
  SavedDims d;
  d.tokens = s.tokens;
  d.routed = routed;
  d.dim = g.dim;
  d.ffn = g.ffn;
  d.branches = g.branches;
  d.top_k = top_k;
  SetSaved(op, ctx, d, c);
  return c;
}

OpCost Loss(const OpDescriptor& op, const OpContext& ctx, const Shape& s, Work& work) {
  LossWork l;
  l.tokens = s.tokens;
  l.vocab = ctx.loss_parallel ? CeilDiv(op.dim("vocab"), ctx.tp) : op.dim("vocab");
  l.logits_dtype = ctx.compute_dtype;
  l.compute_dtype = DType::kFloat32;  // torchtitan: cross_entropy(pred.float(), labels)
  work = l;
  const int64_t logits = s.tokens * l.vocab;
  OpCost c;
  // The loss region as eager PyTorch allocates it (loss_region.h, docs/memory.md): forward's
  // transients beside the fp32 log-probabilities log_softmax saves; backward holds those, their
  // gradient and the fp32 logits' gradient: three fp32 [tokens, vocab] tensors, the logits
  // themselves long freed.
  const LossRegion region = LossRegionTensors(l);
  for (int64_t b : region.forward) c.workspace_bytes += b;
  for (int64_t b : region.backward) c.backward_workspace_bytes += b;
  c.input_bytes = logits * s.act_bytes;
  SavedDims d;
  d.tokens = s.tokens;
  d.vocab = l.vocab;
  SetSaved(op, ctx, d, c);
  return c;
}

// An upper bound, in elements, of the largest product the kind's byte formulas form (here and
// in op_work.cpp), including the intermediates evaluation order makes (repeat_kv multiplies
// by the head count before dividing by the kv heads). Long double: the bound itself must not
// wrap. Every formula is this times at most ~3000 (bytes per element, eager passes, sums).
long double LargestFigure(const OpDescriptor& op, const Shape& s) {
  const long double t = static_cast<long double>(s.tokens);
  const auto d = [&op](const char* key) {
    return std::max<long double>(1, static_cast<long double>(op.dim(key)));
  };
  switch (op.kind) {
    case OpKind::kLinear:
      return t * (d("in") + d("out")) + d("in") * d("out");
    case OpKind::kEmbedding:
      return t * d("dim") + d("vocab") * d("dim");
    case OpKind::kNorm:
    case OpKind::kActivation:
      return t * d("dim");
    case OpKind::kAttention: {
      const long double heads = std::max(d("heads"), d("kv_heads"));
      return t * heads * heads * std::max(d("head_dim"), d("v_head_dim"));
    }
    case OpKind::kRouter:
      return t * (d("dim") + d("experts") + d("top_k")) + d("dim") * d("experts");
    case OpKind::kExperts:
      return t * d("top_k") * (d("dim") + d("ffn")) + d("experts") * d("dim") * d("ffn");
    case OpKind::kLoss:
      return t * d("vocab");
  }
  return t;
}

// 2^51 elements: with the ~3000x of the formulas every byte figure stays below 2^63. Real
// models are below 2^43 (1M tokens per micro-batch through attention with 128 heads).
constexpr long double kMaxFigureElements = 0x1p51L;

// The description and memory figures of one module (its kind's function above).
Result<OpCost> Describe(const OpDescriptor& op, const OpContext& ctx, Work& work) {
  if (ctx.batch < 1 || ctx.seq < 1 || ctx.tp < 1 || ctx.cp < 1 || ctx.ep < 1) {
    return InvalidInput("op cost: batch, seq, tp, cp and ep must all be >= 1 (got batch=" +
                        std::to_string(ctx.batch) + ", seq=" + std::to_string(ctx.seq) +
                        ", tp=" + std::to_string(ctx.tp) + ", cp=" + std::to_string(ctx.cp) +
                        ", ep=" + std::to_string(ctx.ep) + ")");
  }
  const Shape s = MakeShape(ctx);
  if (const long double figure = LargestFigure(op, s); !(figure <= kMaxFigureElements)) {
    char elements[32];
    std::snprintf(elements, sizeof elements, "%.3Lg", figure);
    return InvalidInput("op cost: " + std::string(OpKindName(op.kind)) + " op on " +
                        std::to_string(s.tokens) + " tokens per micro-batch forms tensors of " +
                        elements +
                        " elements, beyond the limit of 2^51 (its byte counts would not fit 64 "
                        "bits); check the op's dimensions, or training.seq_len and "
                        "training.local_batch");
  }
  switch (op.kind) {
    case OpKind::kLinear:
      return Linear(op, ctx, s, work);
    case OpKind::kEmbedding:
      return Embedding(op, ctx, s, work);
    case OpKind::kNorm:
      return Norm(op, ctx, s, work);
    case OpKind::kActivation:
      return Activation(op, ctx, s, work);
    case OpKind::kAttention:
      return Attention(op, ctx, s, work);
    case OpKind::kRouter:
      return Router(op, ctx, s, work);
    case OpKind::kExperts:
      return Experts(op, ctx, s, work);
    case OpKind::kLoss:
      return Loss(op, ctx, s, work);
  }
  return InvalidInput("op cost: unknown op kind");
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

Result<Work> DescribeOp(const OpDescriptor& op, const OpContext& ctx) {
  Work work;
  SS_RETURN_IF_ERROR(Describe(op, ctx, work).status());
  return work;
}

Result<OpCost> EstimateOp(const OpDescriptor& op, const OpContext& ctx) {
  Work work;
  SS_ASSIGN_OR_RETURN(OpCost c, Describe(op, ctx, work));
  const WorkFigures f = FiguresOf(work);
  c.fwd_flops = f.fwd_flops;
  c.bwd_flops = f.bwd_flops;
  c.fwd_bytes = f.fwd_bytes;
  c.bwd_bytes = f.bwd_bytes;
  c.side_fwd_bytes = f.side_fwd_bytes;
  c.side_bwd_bytes = f.side_bwd_bytes;
  c.fwd_kernels = f.fwd_kernels;
  c.bwd_kernels = f.bwd_kernels;
  c.gemm_m = f.gemm_m;
  c.gemm_n = f.gemm_n;
  c.gemm_k = f.gemm_k;
  return c;
}

}  // namespace shardscope
