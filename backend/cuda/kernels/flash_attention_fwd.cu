// Flash-attention forward (FlashAttention-2, Dao 2023, algorithm 1): one block per (query
// tile, head, sequence); the key / value tiles stream through shared memory, the scores and
// the output accumulator stay in fp32 with an online softmax (running max and sum in the
// log2 domain, the output rescaled by exp2(m_old − m_new) before each tile's P·V).
#include <cmath>
#include <string>

#include "backend/cuda/kernels/flash_attention_common.cuh"
#include "backend/cuda/kernels/kernel_util.cuh"

namespace shardscope::backend::cuda {
namespace attn {
namespace {

struct FwdParams {
  const bf16* q;
  const bf16* k;
  const bf16* v;
  bf16* o;
  float* lse;
  int64_t heads, kv_heads, q_seq, kv_seq;
  int d, dv;
  float scale_log2;
  AttnMask mask;
};

struct FwdSmem {
  bf16 *q, *k, *v, *p;
  float *s, *o, *m, *l, *alpha;
  int ldq, ldv, lds, ldp, ldo;
};

// The layout of FlashForwardKernel<kB>'s shared memory, on host (carver over nullptr) and
// device alike. Row pitches are padded (+8 bf16, +4 fp32) against bank conflicts and stay
// WMMA-legal.
__host__ __device__ inline FwdSmem CarveFwd(SmemCarver& c, int kb, int d, int dv) {
  FwdSmem s;
  s.ldq = d + 8;
  s.ldv = dv + 8;
  s.lds = kb + 4;
  s.ldp = kb + 8;
  s.ldo = dv + 4;
  s.q = c.Take<bf16>(static_cast<int64_t>(kb) * s.ldq);
  s.k = c.Take<bf16>(static_cast<int64_t>(kb) * s.ldq);
  s.v = c.Take<bf16>(static_cast<int64_t>(kb) * s.ldv);
  s.p = c.Take<bf16>(static_cast<int64_t>(kb) * s.ldp);
  s.s = c.Take<float>(static_cast<int64_t>(kb) * s.lds);
  s.o = c.Take<float>(static_cast<int64_t>(kb) * s.ldo);
  s.m = c.Take<float>(kb);
  s.l = c.Take<float>(kb);
  s.alpha = c.Take<float>(kb);
  return s;
}

template <int kB>
__global__ void __launch_bounds__(kAttnThreads) FlashForwardKernel(const FwdParams p) {
  extern __shared__ __align__(128) unsigned char smem[];
  SmemCarver carver(smem);
  const FwdSmem s = CarveFwd(carver, kB, p.d, p.dv);
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kB;
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int64_t hk = h / (p.heads / p.kv_heads);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;

  const bf16* qg = p.q + (b * p.heads + h) * p.q_seq * p.d;
  const bf16* kg = p.k + (b * p.kv_heads + hk) * p.kv_seq * p.d;
  const bf16* vg = p.v + (b * p.kv_heads + hk) * p.kv_seq * p.dv;
  LoadRows(s.q, s.ldq, qg, p.d, q0, p.q_seq, kB, p.d);
  for (int idx = threadIdx.x; idx < kB * p.dv; idx += blockDim.x) {
    s.o[(idx / p.dv) * s.ldo + idx % p.dv] = 0.0f;
  }
  for (int r = threadIdx.x; r < kB; r += blockDim.x) {
    s.m[r] = -INFINITY;
    s.l[r] = 0.0f;
  }

  int64_t key_lo, key_hi;
  p.mask.KeyRange(q0, kB, &key_lo, &key_hi);
  for (int64_t k0 = key_lo / kB * kB; k0 < key_hi; k0 += kB) {
    __syncthreads();  // the previous tile's readers of K, V and P are done
    LoadRows(s.k, s.ldq, kg, p.d, k0, p.kv_seq, kB, p.d);
    LoadRows(s.v, s.ldv, vg, p.dv, k0, p.kv_seq, kB, p.dv);
    __syncthreads();
    BlockMma<false, true>(s.q, s.ldq, s.k, s.ldq, s.s, s.lds, kB, kB, p.d, false);  // S = Q·Kᵀ
    __syncthreads();
    // Online softmax, one warp per row; each lane keeps its own columns.
    for (int r = warp; r < kB; r += warps) {
      float* srow = s.s + r * s.lds;
      float mx = -INFINITY;
      for (int c = lane; c < kB; c += 32) {
        const float x = p.mask.Visible(q0 + r, k0 + c) ? srow[c] * p.scale_log2 : -INFINITY;
        srow[c] = x;
        mx = fmaxf(mx, x);
      }
      mx = WarpMax(mx);
      const float m_old = s.m[r];
      const float m_new = fmaxf(m_old, mx);
      float sum = 0.0f;
      for (int c = lane; c < kB; c += 32) {
        const float e = m_new == -INFINITY ? 0.0f : exp2f(srow[c] - m_new);
        s.p[r * s.ldp + c] = __float2bfloat16(e);
        sum += e;
      }
      sum = WarpSum(sum);
      if (lane == 0) {
        const float alpha = m_new == -INFINITY ? 1.0f : exp2f(m_old - m_new);
        s.alpha[r] = alpha;
        s.l[r] = s.l[r] * alpha + sum;
        s.m[r] = m_new;
      }
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < kB * p.dv; idx += blockDim.x) {
      const int r = idx / p.dv;
      s.o[r * s.ldo + idx % p.dv] *= s.alpha[r];
    }
    __syncthreads();
    BlockMma<false, false>(s.p, s.ldp, s.v, s.ldv, s.o, s.ldo, kB, p.dv, kB, true);  // O += P·V
  }
  __syncthreads();

  bf16* og = p.o + (b * p.heads + h) * p.q_seq * p.dv;
  for (int idx = threadIdx.x; idx < kB * p.dv; idx += blockDim.x) {
    const int r = idx / p.dv, c = idx % p.dv;
    if (q0 + r >= p.q_seq) continue;
    const float l = s.l[r];
    og[(q0 + r) * p.dv + c] = __float2bfloat16(l > 0.0f ? s.o[r * s.ldo + c] / l : 0.0f);
  }
  float* lse = p.lse + (b * p.heads + h) * p.q_seq;
  for (int r = threadIdx.x; r < kB; r += blockDim.x) {
    if (q0 + r >= p.q_seq) continue;
    lse[q0 + r] = s.l[r] > 0.0f ? (s.m[r] + log2f(s.l[r])) * kLn2 : -INFINITY;
  }
}

template <int kB>
Status LaunchForward(const FwdParams& p, int64_t batch, int64_t smem_bytes, cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>((p.q_seq + kB - 1) / kB), static_cast<unsigned>(p.heads),
            static_cast<unsigned>(batch));
  return LaunchFlash(FlashForwardKernel<kB>, "FlashForwardKernel", grid, p, smem_bytes, stream);
}

}  // namespace

int64_t ForwardSmemBytes(int kb, int d, int dv) {
  SmemCarver c(nullptr);
  CarveFwd(c, kb, d, dv);
  return c.bytes();
}

// The largest dynamic shared memory a block of the current device may opt into.
Result<int64_t> MaxSmemPerBlock() {
  int device = 0, bytes = 0;
  SS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  SS_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return static_cast<int64_t>(bytes);
}

}  // namespace attn

Status ValidateAttention(const AttentionArgs& a) {
  auto bad = [](const std::string& what) { return InvalidInput("attention kernel: " + what); };
  if (a.batch < 1 || a.heads < 1 || a.kv_heads < 1 || a.q_seq < 1 || a.kv_seq < 1) {
    return bad("batch, heads, kv_heads, q_seq and kv_seq must be >= 1");
  }
  if (a.heads % a.kv_heads != 0) {
    return bad(std::to_string(a.heads) + " heads not a multiple of " + std::to_string(a.kv_heads) +
               " kv_heads");
  }
  if (a.q_seq > a.kv_seq) return bad("q_seq > kv_seq (queries are the last q_seq positions)");
  for (int64_t dim : {a.head_dim, a.v_head_dim}) {
    if (dim < 16 || dim > 256 || dim % 16 != 0) {
      return bad("head dims must be multiples of 16 in [16, 256], got " + std::to_string(dim));
    }
  }
  if (a.batch > 65535 || a.heads > 65535) return bad("batch and heads at most 65535");
  if (a.window < 0) return bad("window must be >= 0");
  if (a.dtype != DType::kBFloat16) {
    return bad(std::string("bfloat16 tensors expected, got ") + std::string(DTypeName(a.dtype)));
  }
  for (const void* ptr : {a.q, a.k, a.v, static_cast<const void*>(a.out)}) {
    if (ptr == nullptr || reinterpret_cast<uintptr_t>(ptr) % 16 != 0) {
      return bad("q, k, v and out must be 16-byte aligned device buffers");
    }
  }
  if (a.lse == nullptr) return bad("an lse buffer (the backward needs it)");
  return Status::Ok();
}

float SoftmaxScale(const AttentionArgs& a) {
  return a.scale > 0.0f ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim));
}

Status FlashAttentionForward(const AttentionArgs& a, cudaStream_t stream) {
  SS_RETURN_IF_ERROR(ValidateAttention(a));
  attn::FwdParams p{static_cast<const attn::bf16*>(a.q),
                    static_cast<const attn::bf16*>(a.k),
                    static_cast<const attn::bf16*>(a.v),
                    static_cast<attn::bf16*>(a.out),
                    a.lse,
                    a.heads,
                    a.kv_heads,
                    a.q_seq,
                    a.kv_seq,
                    static_cast<int>(a.head_dim),
                    static_cast<int>(a.v_head_dim),
                    SoftmaxScale(a) * attn::kLog2e,
                    attn::AttnMask{a.q_seq, a.kv_seq, a.kv_seq - a.q_seq, a.window, a.causal}};
  const int64_t smem64 = attn::ForwardSmemBytes(64, p.d, p.dv);
  const int64_t smem32 = attn::ForwardSmemBytes(32, p.d, p.dv);
  SS_ASSIGN_OR_RETURN(const int block_rows,
                      attn::FlashBlockRows(smem64, smem32, "attention forward"));
  return block_rows == 64 ? attn::LaunchForward<64>(p, a.batch, smem64, stream)
                          : attn::LaunchForward<32>(p, a.batch, smem32, stream);
}

}  // namespace shardscope::backend::cuda
