#include "core/model/op_work.h"

#include <algorithm>

// The figures follow op_cost.cpp's conventions (FLOPs of matmuls and the attention core only;
// eager bytes of the unfused kernel sequence); each is a function of the description alone.
namespace shardscope {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

WorkFigures Gemm(const GemmWork& g) {
  WorkFigures f;
  f.gemm_m = g.m;
  f.gemm_n = g.n;
  f.gemm_k = g.k;
  const int64_t a = DTypeBytes(g.a_dtype), w = DTypeBytes(g.w_dtype), o = DTypeBytes(g.out_dtype);
  f.fwd_flops = 2.0 * D(g.m) * D(g.k) * D(g.n);
  if (g.bias) f.fwd_flops += D(g.m * g.n);
  if (g.router_top_k > 0) {
    // The fp32 scores are written and read once by the softmax / sigmoid; top-k writes an
    // int64 id and an fp32 weight per selected expert. The logits stay in registers.
    const int64_t probs = g.m * g.n * DTypeBytes(DType::kFloat32);
    f.fwd_bytes = g.m * g.k * a + g.k * g.n * w + 2 * probs + g.m * g.router_top_k * 12;
  } else {
    f.fwd_bytes = g.m * g.k * a + g.k * g.n * w + g.m * g.n * o;
  }
  f.fwd_flops *= g.count;
  f.fwd_bytes *= g.count;
  f.bwd_flops = 2.0 * f.fwd_flops;  // data gradient + weight gradient
  f.bwd_bytes = 2 * f.fwd_bytes;
  return f;
}

WorkFigures GroupedGemm(const GroupedGemmWork& g) {
  WorkFigures f;
  const int64_t b = DTypeBytes(g.dtype);
  f.gemm_m = g.tokens_per_expert();
  f.gemm_k = g.dim;
  f.gemm_n = g.branches * g.ffn;
  // Up (and gate) projection then down projection, per routed token.
  f.fwd_flops = 2.0 * D(g.routed_tokens) * D(g.dim) * D(g.ffn) * D(g.branches + 1);
  f.bwd_flops = 2.0 * f.fwd_flops;
  const int64_t weights = g.experts * (g.branches + 1) * g.dim * g.ffn * b;
  f.fwd_bytes = weights + g.routed_tokens * (2 * g.dim + 2 * g.branches * g.ffn + g.ffn) * b;
  f.bwd_bytes = 2 * f.fwd_bytes;
  return f;
}

WorkFigures Attention(const AttentionWork& w) {
  WorkFigures f;
  const int64_t v_dim = w.v_head_dim > 0 ? w.v_head_dim : w.head_dim;
  const double pairs = AttentionPairs(w.seq, w.window, w.causal);
  // QKᵀ: 2·pairs·head_dim per head; PV: 2·pairs·v_dim; each query shard does 1/shards of them.
  f.fwd_flops = 2.0 * D(w.batch) * D(w.heads) * pairs * D(w.head_dim + v_dim) / D(w.query_shards);
  f.bwd_flops = 2.5 * f.fwd_flops;  // five matmuls of the size of forward's two (recomputes QKᵀ)
  const int64_t b = DTypeBytes(w.dtype);
  const int64_t tokens = w.query_tokens();
  const int64_t q = tokens * w.heads * w.head_dim * b;
  const int64_t k = tokens * w.kv_heads * w.head_dim * b;
  const int64_t v = tokens * w.kv_heads * v_dim * b;
  const int64_t o = tokens * w.heads * v_dim * b;
  const int64_t lse = tokens * w.heads * DTypeBytes(DType::kFloat32);
  const bool expand = w.kv_heads < w.heads;
  // Eager side kernels per direction: RoPE on q and k (upcast, complex multiply, downcast:
  // ~20 bytes per 2-byte element, 10 per byte), repeat_kv's expanded k and v, the output's
  // transpose copy.
  const int64_t rope = 10 * (q + k);
  const int64_t repeat_kv = expand ? (k + v) + (k + v) * w.heads / w.kv_heads : 0;
  const int64_t layout = 2 * o;
  const int64_t eager = rope + repeat_kv + layout;
  f.fwd_bytes = q + k + v + o + lse + eager;
  // Reads q, k, v, o, dO, lse; writes dq, dk, dv.
  f.bwd_bytes = 2 * (q + k + v) + 2 * o + lse + eager;
  f.side_fwd_bytes = eager;
  f.side_bwd_bytes = eager;
  // RoPE 3 kernels each for q and k, repeat_kv's two copies, the transpose copy; the fused
  // backward adds 3 small kernels of its own (dO·O, dQ accumulation and conversion).
  const int side_kernels = 6 + (expand ? 2 : 0) + 1;
  f.fwd_kernels = 1 + side_kernels;
  f.bwd_kernels = 1 + 3 + side_kernels;
  return f;
}

WorkFigures Embedding(const EmbeddingWork& e) {
  WorkFigures f;
  const int64_t b = DTypeBytes(e.dtype);
  f.fwd_bytes = e.tokens * DTypeBytes(DType::kInt64) + 2 * e.tokens * e.dim * b;
  f.bwd_bytes = 3 * e.tokens * e.dim * b;  // read dY, read-modify-write the rows
  f.fwd_kernels = 1;
  f.bwd_kernels = 3;  // sort the ids, sum rows, scatter
  return f;
}

WorkFigures Eltwise(const EltwiseWork& e) {
  WorkFigures f;
  f.fwd_bytes = e.fwd_bytes;
  f.bwd_bytes = e.bwd_bytes;
  f.fwd_kernels = e.fwd_kernels;
  f.bwd_kernels = e.bwd_kernels;
  return f;
}

WorkFigures Loss(const LossWork& l) {
  WorkFigures f;
  const int64_t logits = l.tokens * l.vocab;
  const int64_t b = DTypeBytes(l.logits_dtype), c = DTypeBytes(l.compute_dtype);
  // Upcast (read b, write c), log_softmax (two reads, one write), nll.
  f.fwd_bytes = logits * (b + c) + logits * 3 * c;
  // nll backward writes the gradient, log_softmax backward reads it and the saved log-probs
  // and writes, the upcast's backward casts it down.
  f.bwd_bytes = logits * c + logits * 3 * c + logits * (c + b);
  f.fwd_kernels = 3;  // upcast, log_softmax, nll_loss
  f.bwd_kernels = 3;
  return f;
}

struct Figures {
  WorkFigures operator()(const GemmWork& w) const { return Gemm(w); }
  WorkFigures operator()(const GroupedGemmWork& w) const { return GroupedGemm(w); }
  WorkFigures operator()(const AttentionWork& w) const { return Attention(w); }
  WorkFigures operator()(const EmbeddingWork& w) const { return Embedding(w); }
  WorkFigures operator()(const EltwiseWork& w) const { return Eltwise(w); }
  WorkFigures operator()(const LossWork& w) const { return Loss(w); }
  WorkFigures operator()(const OptimizerWork&) const { return {}; }
  WorkFigures operator()(const FsdpCopyWork&) const { return {}; }
};

}  // namespace

double AttentionPairs(int64_t n, int64_t w, bool causal) {
  const double nd = D(n);
  if (!causal) return nd * D(w > 0 ? std::min(w, n) : n);
  if (w <= 0 || w >= n) return nd * nd / 2.0;
  const double wd = D(w);
  return nd * wd - wd * wd / 2.0;
}

WorkFigures FiguresOf(const Work& work) { return std::visit(Figures{}, work); }

}  // namespace shardscope
