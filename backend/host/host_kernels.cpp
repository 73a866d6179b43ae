#include "backend/host/host_kernels.h"

#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/device/deterministic.h"
#include "backend/device/dtype_access.h"

namespace shardscope::backend::host {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMajor>;
using Map = Eigen::Map<RowMajor>;

// Elements of `src` (any dtype) as fp32 in `dst` (resized).
void Widen(const void* src, DType d, int64_t offset, int64_t n, std::vector<float>* dst) {
  dst->resize(static_cast<size_t>(n));
  if (d == DType::kFloat32) {
    std::memcpy(dst->data(), static_cast<const float*>(src) + offset, n * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i) (*dst)[i] = LoadAsFloat(src, d, offset + i);
}

Status Need(bool ok, const char* kernel, const char* what) {
  if (ok) return Status::Ok();
  return InvalidInput(fmt::format("{} kernel: {}", kernel, what));
}

}  // namespace

Status Gemm(const GemmArgs& a) {
  SS_RETURN_IF_ERROR(Need(a.m >= 0 && a.n >= 0 && a.k >= 0 && a.batch >= 1, "gemm",
                          "non-negative m, n, k and a batch of at least 1"));
  SS_RETURN_IF_ERROR(Need(a.a && a.b && a.out, "gemm", "a, b and out buffers"));
  std::vector<float> fa, fb, fo;
  for (int64_t g = 0; g < a.batch; ++g) {
    Widen(a.a, a.a_dtype, g * a.m * a.k, a.m * a.k, &fa);
    Widen(a.b, a.b_dtype, g * a.k * a.n, a.k * a.n, &fb);
    fo.assign(static_cast<size_t>(a.m * a.n), 0.0f);
    Map out(fo.data(), a.m, a.n);
    if (a.beta != 0.0f) {
      for (int64_t i = 0; i < a.m * a.n; ++i)
        fo[i] = a.beta * LoadAsFloat(a.out, a.out_dtype, g * a.m * a.n + i);
    }
    // Stored shapes: a is m×k (k×m transposed), b is k×n (n×k transposed).
    if (!a.trans_a && !a.trans_b) {
      out.noalias() += a.alpha * (ConstMap(fa.data(), a.m, a.k) * ConstMap(fb.data(), a.k, a.n));
    } else if (a.trans_a && !a.trans_b) {
      out.noalias() +=
          a.alpha * (ConstMap(fa.data(), a.k, a.m).transpose() * ConstMap(fb.data(), a.k, a.n));
    } else if (!a.trans_a && a.trans_b) {
      out.noalias() +=
          a.alpha * (ConstMap(fa.data(), a.m, a.k) * ConstMap(fb.data(), a.n, a.k).transpose());
    } else {
      out.noalias() += a.alpha * (ConstMap(fa.data(), a.k, a.m).transpose() *
                                  ConstMap(fb.data(), a.n, a.k).transpose());
    }
    for (int64_t i = 0; i < a.m * a.n; ++i)
      StoreFromFloat(a.out, a.out_dtype, g * a.m * a.n + i, fo[i]);
  }
  return Status::Ok();
}

namespace {

struct AttnShape {
  int64_t b, h, hk, q, kv, d, dv, window;
  bool causal;
  float scale;
  // Query i sits at key position kv - q + i (the last q positions).
  int64_t first_key(int64_t i) const {
    const int64_t pos = kv - q + i;
    return window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
  }
  int64_t last_key(int64_t i) const { return causal ? kv - q + i : kv - 1; }  // inclusive
};

Result<AttnShape> ShapeOf(const AttentionArgs& a) {
  if (a.heads <= 0 || a.kv_heads <= 0 || a.heads % a.kv_heads != 0 || a.q_seq <= 0 ||
      a.kv_seq < a.q_seq || a.head_dim <= 0 || a.v_head_dim <= 0 || a.batch <= 0) {
    return InvalidInput(
        "attention kernel: kv_heads dividing heads, q_seq <= kv_seq, positive dims");
  }
  AttnShape s{
      a.batch,      a.heads,
      a.kv_heads,   a.q_seq,
      a.kv_seq,     a.head_dim,
      a.v_head_dim, a.window,
      a.causal,     a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim))};
  return s;
}

}  // namespace

Status AttentionForward(const AttentionArgs& a) {
  SS_ASSIGN_OR_RETURN(AttnShape s, ShapeOf(a));
  SS_RETURN_IF_ERROR(Need(a.q && a.k && a.v && a.out, "attention", "q, k, v and out buffers"));
  std::vector<float> qrow(s.d), p(s.kv), acc(s.dv);
  for (int64_t b = 0; b < s.b; ++b) {
    for (int64_t h = 0; h < s.h; ++h) {
      const int64_t hk = h / (s.h / s.hk);
      const int64_t q0 = (b * s.h + h) * s.q, k0 = (b * s.hk + hk) * s.kv;
      for (int64_t i = 0; i < s.q; ++i) {
        for (int64_t c = 0; c < s.d; ++c) qrow[c] = LoadAsFloat(a.q, a.dtype, (q0 + i) * s.d + c);
        const int64_t lo = s.first_key(i), hi = s.last_key(i);
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = lo; j <= hi; ++j) {
          float dot = 0;
          for (int64_t c = 0; c < s.d; ++c)
            dot += qrow[c] * LoadAsFloat(a.k, a.dtype, (k0 + j) * s.d + c);
          p[j] = dot * s.scale;
          mx = std::max(mx, p[j]);
        }
        float sum = 0;
        for (int64_t j = lo; j <= hi; ++j) sum += (p[j] = std::exp(p[j] - mx));
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j = lo; j <= hi; ++j) {
          const float w = p[j] / sum;
          for (int64_t c = 0; c < s.dv; ++c)
            acc[c] += w * LoadAsFloat(a.v, a.dtype, (k0 + j) * s.dv + c);
        }
        for (int64_t c = 0; c < s.dv; ++c)
          StoreFromFloat(a.out, a.dtype, (q0 + i) * s.dv + c, acc[c]);
        if (a.lse) a.lse[q0 + i] = mx + std::log(sum);
      }
    }
  }
  return Status::Ok();
}

Status AttentionBackward(const AttentionArgs& a) {
  SS_ASSIGN_OR_RETURN(AttnShape s, ShapeOf(a));
  SS_RETURN_IF_ERROR(Need(a.q && a.k && a.v && a.out && a.lse && a.d_out && a.d_q && a.d_k && a.d_v,
                          "attention backward", "q, k, v, out, lse, d_out, d_q, d_k, d_v"));
  // fp32 accumulators for dk / dv (GQA: several query heads add into one kv head).
  std::vector<float> dk(static_cast<size_t>(s.b * s.hk * s.kv * s.d), 0.0f);
  std::vector<float> dv(static_cast<size_t>(s.b * s.hk * s.kv * s.dv), 0.0f);
  std::vector<float> qrow(s.d), dorow(s.dv), dq(s.d), p(s.kv);
  for (int64_t b = 0; b < s.b; ++b) {
    for (int64_t h = 0; h < s.h; ++h) {
      const int64_t hk = h / (s.h / s.hk);
      const int64_t q0 = (b * s.h + h) * s.q, k0 = (b * s.hk + hk) * s.kv;
      for (int64_t i = 0; i < s.q; ++i) {
        for (int64_t c = 0; c < s.d; ++c) qrow[c] = LoadAsFloat(a.q, a.dtype, (q0 + i) * s.d + c);
        float delta = 0;  // rowsum(dO ∘ O)
        for (int64_t c = 0; c < s.dv; ++c) {
          dorow[c] = LoadAsFloat(a.d_out, a.dtype, (q0 + i) * s.dv + c);
          delta += dorow[c] * LoadAsFloat(a.out, a.dtype, (q0 + i) * s.dv + c);
        }
        const float lse = a.lse[q0 + i];
        std::fill(dq.begin(), dq.end(), 0.0f);
        for (int64_t j = s.first_key(i); j <= s.last_key(i); ++j) {
          float dot = 0;
          for (int64_t c = 0; c < s.d; ++c)
            dot += qrow[c] * LoadAsFloat(a.k, a.dtype, (k0 + j) * s.d + c);
          const float pij = std::exp(dot * s.scale - lse);
          float dp = 0;
          for (int64_t c = 0; c < s.dv; ++c) {
            dp += dorow[c] * LoadAsFloat(a.v, a.dtype, (k0 + j) * s.dv + c);
            dv[(k0 + j) * s.dv + c] += pij * dorow[c];
          }
          const float ds = pij * (dp - delta) * s.scale;
          for (int64_t c = 0; c < s.d; ++c) {
            dq[c] += ds * LoadAsFloat(a.k, a.dtype, (k0 + j) * s.d + c);
            dk[(k0 + j) * s.d + c] += ds * qrow[c];
          }
        }
        for (int64_t c = 0; c < s.d; ++c) StoreFromFloat(a.d_q, a.dtype, (q0 + i) * s.d + c, dq[c]);
      }
    }
  }
  for (size_t i = 0; i < dk.size(); ++i)
    StoreFromFloat(a.d_k, a.dtype, static_cast<int64_t>(i), dk[i]);
  for (size_t i = 0; i < dv.size(); ++i)
    StoreFromFloat(a.d_v, a.dtype, static_cast<int64_t>(i), dv[i]);
  return Status::Ok();
}

Status RmsNorm(const NormArgs& a) {
  SS_RETURN_IF_ERROR(
      Need(a.x && a.y && a.rows >= 0 && a.cols > 0, "rms_norm", "x, y and cols > 0"));
  for (int64_t r = 0; r < a.rows; ++r) {
    float ss = 0;
    for (int64_t c = 0; c < a.cols; ++c) {
      const float v = LoadAsFloat(a.x, a.dtype, r * a.cols + c);
      ss += v * v;
    }
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(a.cols) + a.eps);
    for (int64_t c = 0; c < a.cols; ++c) {
      const float w = a.weight ? LoadAsFloat(a.weight, a.dtype, c) : 1.0f;
      StoreFromFloat(a.y, a.dtype, r * a.cols + c,
                     LoadAsFloat(a.x, a.dtype, r * a.cols + c) * inv * w);
    }
  }
  return Status::Ok();
}

Status Eltwise(const EltwiseArgs& a) {
  SS_RETURN_IF_ERROR(Need(a.x0 && a.y, "eltwise", "x0 and y buffers"));
  const bool binary = a.op == EltwiseOp::kMul || a.op == EltwiseOp::kSiluMul;
  SS_RETURN_IF_ERROR(Need(!binary || a.x1, "eltwise", "x1 for a binary op"));
  for (int64_t i = 0; i < a.elements; ++i) {
    const float x = LoadAsFloat(a.x0, a.dtype, i);
    float y = 0;
    switch (a.op) {
      case EltwiseOp::kScaleAdd:
        y = a.alpha * x + a.beta * (a.x1 ? LoadAsFloat(a.x1, a.dtype, i) : 1.0f);
        break;
      case EltwiseOp::kMul:
        y = x * LoadAsFloat(a.x1, a.dtype, i);
        break;
      case EltwiseOp::kSilu:
        y = x / (1.0f + std::exp(-x));
        break;
      case EltwiseOp::kSiluMul:
        y = x / (1.0f + std::exp(-x)) * LoadAsFloat(a.x1, a.dtype, i);
        break;
    }
    StoreFromFloat(a.y, a.dtype, i, y);
  }
  return Status::Ok();
}

Status Cast(const CastArgs& a) {
  SS_RETURN_IF_ERROR(Need(a.src && a.dst, "cast", "src and dst buffers"));
  if (a.src_dtype == a.dst_dtype && a.scale == 1.0f) {
    std::memmove(a.dst, a.src, a.elements * DTypeBytes(a.src_dtype));
    return Status::Ok();
  }
  for (int64_t i = 0; i < a.elements; ++i) {
    StoreFromFloat(a.dst, a.dst_dtype, i, a.scale * LoadAsFloat(a.src, a.src_dtype, i));
  }
  return Status::Ok();
}

Status FsdpCopy(const FsdpCopyArgs& a) {
  for (const CopySegment& s : a.segments) {
    if (s.dst == nullptr) return InvalidInput("fsdp copy kernel: a segment without dst");
    if (a.accumulate) {
      if (s.src == nullptr) continue;
      for (int64_t i = 0; i < s.elements; ++i) {
        const float v = LoadAsFloat(s.src, a.src_dtype, i);
        StoreFromFloat(s.dst, a.dst_dtype, i,
                       LoadAsFloat(s.dst, a.dst_dtype, i) + (a.scale != 1.0f ? a.scale * v : v));
      }
      continue;
    }
    if (s.src == nullptr) {
      std::memset(s.dst, 0, s.elements * DTypeBytes(a.dst_dtype));
      continue;
    }
    SS_RETURN_IF_ERROR(Cast(CastArgs{s.elements, a.src_dtype, a.dst_dtype, s.src, s.dst, a.scale}));
  }
  return Status::Ok();
}

Status AdamW(const AdamWArgs& a) {
  if (a.step < 1) return InvalidInput("adamw kernel: step counts from 1");
  // PyTorch computes the bias corrections as Python floats (double) and hands the kernels
  // fp32 scalars; the elementwise math is fp32 (foreach: lerp, addcmul, sqrt, addcdiv).
  const double bc1 = 1.0 - std::pow(static_cast<double>(a.beta1), static_cast<double>(a.step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(a.beta2), static_cast<double>(a.step));
  const float step_size = static_cast<float>(a.lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const float decay = 1.0f - a.lr * a.weight_decay;
  for (const AdamWTensor& t : a.tensors) {
    if (!t.param || !t.grad || !t.exp_avg || !t.exp_avg_sq)
      return InvalidInput("adamw kernel: param, grad, exp_avg and exp_avg_sq for every tensor");
    for (int64_t i = 0; i < t.elements; ++i) {
      const float g = LoadAsFloat(t.grad, a.grad_dtype, i);
      float p = LoadAsFloat(t.param, a.param_dtype, i) * decay;
      float m = LoadAsFloat(t.exp_avg, a.state_dtype, i);
      float v = LoadAsFloat(t.exp_avg_sq, a.state_dtype, i);
      m = m + (1.0f - a.beta1) * (g - m);  // lerp(m, g, 1 − β1)
      v = v * a.beta2 + (1.0f - a.beta2) * g * g;
      const float denom = std::sqrt(v) / bc2_sqrt + a.eps;
      p = p - step_size * (m / denom);
      StoreFromFloat(t.param, a.param_dtype, i, p);
      StoreFromFloat(t.exp_avg, a.state_dtype, i, m);
      StoreFromFloat(t.exp_avg_sq, a.state_dtype, i, v);
    }
  }
  return Status::Ok();
}

Status Fill(const FillArgs& a) {
  SS_RETURN_IF_ERROR(Need(a.dst != nullptr || a.elements == 0, "fill", "a dst buffer"));
  for (int64_t i = 0; i < a.elements; ++i) {
    StoreFromFloat(a.dst, a.dtype, i, DeterministicValue(a.seed, a.first_index + i) * a.scale);
  }
  return Status::Ok();
}

}  // namespace shardscope::backend::host
