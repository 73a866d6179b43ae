#include "backend/exec/work_kernels.h"

#include <fmt/format.h>

#include <algorithm>

namespace shardscope::backend {
namespace {

constexpr int64_t kAlign = 256;

int64_t Aligned(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Carves operands out of the arena one after another; Measure mode only counts.
class Carver {
 public:
  Carver(const ItemBuffers& b, bool measure) : b_(b), measure_(measure) {}
  char* Take(int64_t bytes) {
    char* p = measure_ ? nullptr : b_.arena + used_;
    used_ += Aligned(bytes);
    return p;
  }
  // Weights from the gathered parameters when they fit there, else from the arena.
  const char* Weights(int64_t bytes) {
    if (b_.params != nullptr && bytes <= b_.params_bytes) return b_.params;
    if (measure_ && b_.params_bytes >= bytes) return nullptr;
    return Take(bytes);
  }
  int64_t used() const { return used_; }

 private:
  const ItemBuffers& b_;
  bool measure_;
  int64_t used_ = 0;
};

// Runs (or, with device == nullptr, measures) the kernels of one item.
Status Walk(Device* device, Lane lane, const ComputeItem& item, Carver& c) {
  auto gemm = [&](GemmArgs g, const void* a, const void* b, void* out) -> Status {
    if (device == nullptr || g.m == 0 || g.n == 0 || g.k == 0) return Status::Ok();
    g.a = a;
    g.b = b;
    g.out = out;
    return device->Gemm(lane, g);
  };
  auto bytes = [](int64_t n, DType d) { return n * DTypeBytes(d); };
  return std::visit(
      [&](const auto& w) -> Status {
        using T = std::decay_t<decltype(w)>;
        if constexpr (std::is_same_v<T, GemmWork>) {
          const int64_t cnt = std::max(1, w.count);
          GemmArgs g;
          g.m = w.m, g.n = w.n, g.k = w.k, g.batch = cnt;
          g.a_dtype = w.a_dtype, g.b_dtype = w.w_dtype, g.out_dtype = w.out_dtype;
          const char* W = c.Weights(bytes(cnt * w.k * w.n, w.w_dtype));
          char* A = c.Take(bytes(cnt * w.m * w.k, w.a_dtype));
          char* C = c.Take(bytes(cnt * w.m * w.n, w.out_dtype));
          if (!item.backward) return gemm(g, A, W, C);
          // dA = dC · Wᵀ (W stored k×n: read transposed), dW = Aᵀ · dC.
          const GemmWork dg = w.DataGradient(), wg = w.WeightGradient();
          char* dA = c.Take(bytes(cnt * w.m * w.k, w.a_dtype));
          char* dW = c.Take(bytes(cnt * w.k * w.n, w.w_dtype));
          GemmArgs d = g;
          d.m = dg.m, d.n = dg.n, d.k = dg.k, d.trans_b = true;
          d.a_dtype = dg.a_dtype, d.b_dtype = dg.w_dtype, d.out_dtype = dg.out_dtype;
          SS_RETURN_IF_ERROR(gemm(d, C, W, dA));
          GemmArgs e = g;
          e.m = wg.m, e.n = wg.n, e.k = wg.k, e.trans_a = true;
          e.a_dtype = wg.a_dtype, e.b_dtype = wg.w_dtype, e.out_dtype = wg.out_dtype;
          return gemm(e, A, C, dW);
        } else if constexpr (std::is_same_v<T, GroupedGemmWork>) {
          const int64_t t = w.tokens_per_expert(), up = w.branches * w.ffn;
          GemmArgs g;
          g.batch = w.experts;
          g.a_dtype = g.b_dtype = g.out_dtype = w.dtype;
          const char* Wup = c.Weights(bytes(w.experts * w.dim * up, w.dtype));
          char* X = c.Take(bytes(w.experts * t * w.dim, w.dtype));
          char* H = c.Take(bytes(w.experts * t * up, w.dtype));
          char* Y = c.Take(bytes(w.experts * t * w.dim, w.dtype));
          char* Wdown = c.Take(bytes(w.experts * w.ffn * w.dim, w.dtype));
          g.m = t, g.k = w.dim, g.n = up;
          SS_RETURN_IF_ERROR(gemm(g, X, Wup, H));
          g.k = w.ffn, g.n = w.dim;
          SS_RETURN_IF_ERROR(gemm(g, H, Wdown, Y));
          if (!item.backward) return Status::Ok();
          // Data gradients of both projections, then their weight gradients.
          GemmArgs d = g;
          d.m = t, d.k = w.dim, d.n = w.ffn, d.trans_b = true;
          SS_RETURN_IF_ERROR(gemm(d, Y, Wdown, H));
          d.k = up, d.n = w.dim;
          SS_RETURN_IF_ERROR(gemm(d, H, Wup, X));
          GemmArgs e = g;
          e.trans_a = true, e.m = w.ffn, e.k = t, e.n = w.dim;
          SS_RETURN_IF_ERROR(gemm(e, H, Y, Wdown));
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, AttentionWork>) {
          AttentionArgs a;
          a.batch = w.batch, a.heads = w.heads, a.kv_heads = std::max<int64_t>(1, w.kv_heads);
          a.q_seq = w.q_seq(), a.kv_seq = w.kv_seq();
          a.head_dim = w.head_dim, a.v_head_dim = w.v_head_dim > 0 ? w.v_head_dim : w.head_dim;
          a.window = w.window, a.causal = w.causal, a.dtype = w.dtype;
          const int64_t q = a.batch * a.heads * a.q_seq, kv = a.batch * a.kv_heads * a.kv_seq;
          a.q = c.Take(bytes(q * a.head_dim, w.dtype));
          a.k = c.Take(bytes(kv * a.head_dim, w.dtype));
          a.v = c.Take(bytes(kv * a.v_head_dim, w.dtype));
          a.out = c.Take(bytes(q * a.v_head_dim, w.dtype));
          a.lse = reinterpret_cast<float*>(c.Take(q * 4));
          if (item.backward) {
            a.d_out = c.Take(bytes(q * a.v_head_dim, w.dtype));
            a.d_q = c.Take(bytes(q * a.head_dim, w.dtype));
            a.d_k = c.Take(bytes(kv * a.head_dim, w.dtype));
            a.d_v = c.Take(bytes(kv * a.v_head_dim, w.dtype));
          }
          if (device == nullptr || a.head_dim == 0) return Status::Ok();
          // Backward recomputes from the saved forward outputs (what FSDP's autograd keeps).
          if (item.backward) {
            SS_RETURN_IF_ERROR(device->AttentionForward(lane, a));
            return device->AttentionBackward(lane, a);
          }
          return device->AttentionForward(lane, a);
        } else if constexpr (std::is_same_v<T, EmbeddingWork>) {
          const int64_t n = w.tokens * w.dim;
          const char* table = c.Weights(bytes(std::min(n, w.vocab * w.dim), w.dtype));
          char* out = c.Take(bytes(n, w.dtype));
          if (device == nullptr || n == 0) return Status::Ok();
          EltwiseArgs e;
          e.op = EltwiseOp::kScaleAdd, e.dtype = w.dtype, e.x0 = table, e.y = out;
          e.elements = std::min(n, w.vocab * w.dim);
          return device->Eltwise(lane, e);
        } else if constexpr (std::is_same_v<T, EltwiseWork>) {
          const int kernels = std::max(1, item.backward ? w.bwd_kernels : w.fwd_kernels);
          const int64_t traffic = item.backward ? w.bwd_bytes : w.fwd_bytes;
          // Each kernel reads and writes its share of the chain's traffic.
          const int64_t per_kernel =
              std::min<int64_t>(w.elements, traffic / kernels / (2 * DTypeBytes(w.dtype)));
          char* x = c.Take(bytes(std::max<int64_t>(per_kernel, 1), w.dtype));
          char* y = c.Take(bytes(std::max<int64_t>(per_kernel, 1), w.dtype));
          if (device == nullptr || per_kernel <= 0) return Status::Ok();
          for (int k = 0; k < kernels; ++k) {
            EltwiseArgs e;
            e.op = k % 2 == 0 ? EltwiseOp::kScaleAdd : EltwiseOp::kSilu;
            e.elements = per_kernel, e.dtype = w.dtype;
            e.x0 = k % 2 == 0 ? x : y;
            e.y = k % 2 == 0 ? y : x;
            SS_RETURN_IF_ERROR(device->Eltwise(lane, e));
          }
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, LossWork>) {
          const int64_t n = w.tokens * w.vocab;
          char* logits = c.Take(bytes(n, w.logits_dtype));
          char* up = c.Take(bytes(n, w.compute_dtype));
          if (device == nullptr || n == 0) return Status::Ok();
          // logits.float(), then log_softmax's passes (backward: softmax − one-hot, cast back).
          SS_RETURN_IF_ERROR(
              device->Cast(lane, CastArgs{n, w.logits_dtype, w.compute_dtype, logits, up, 1.0f}));
          EltwiseArgs e;
          e.op = EltwiseOp::kScaleAdd, e.elements = n, e.dtype = w.compute_dtype;
          e.x0 = up, e.y = up, e.alpha = 1.0f, e.beta = -1.0f;
          SS_RETURN_IF_ERROR(device->Eltwise(lane, e));
          if (!item.backward) return Status::Ok();
          return device->Cast(lane, CastArgs{n, w.compute_dtype, w.logits_dtype, up, logits, 1.0f});
        } else {
          return InvalidInput("optimizer steps and FSDP copies are the executor's own data path");
        }
      },
      item.work);
}

}  // namespace

int64_t ArenaBytes(const ComputeItem& item, int64_t params_bytes) {
  ItemBuffers none;
  none.params_bytes = params_bytes;
  Carver c(none, /*measure=*/true);
  if (!item.is_module()) return 0;
  (void)Walk(nullptr, Lane::kCompute, item, c);
  return c.used();
}

Status IssueItem(Device& device, Lane lane, const ComputeItem& item, const ItemBuffers& buffers) {
  const int64_t need = ArenaBytes(item, buffers.params != nullptr ? buffers.params_bytes : 0);
  if (need > buffers.arena_bytes) {
    return RuntimeError(
        fmt::format("compute item needs {} bytes of arena, has {}", need, buffers.arena_bytes));
  }
  Carver c(buffers, /*measure=*/false);
  return Walk(&device, lane, item, c);
}

}  // namespace shardscope::backend
