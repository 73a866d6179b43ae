// Flash-attention backward (FlashAttention-2, algorithm 2): one block per (key tile, kv
// head, sequence) owns its dK and dV accumulators in shared memory and visits every query
// tile of every query head of its GQA group, so dK / dV need no atomics; dQ is accumulated
// in fp32 in global memory with atomics and cast to bf16 at the end. P is recomputed from
// the forward's log-sum-exp; D = rowsum(dO ∘ O) is computed first.
//   dV += Pᵀ·dO    dP = dO·Vᵀ    dS = P ∘ (dP − D)    dK += scale·dSᵀ·Q    dQ += scale·dS·K
#include <string>

#include "backend/cuda/kernels/flash_attention_common.cuh"
#include "backend/cuda/kernels/kernel_util.cuh"
#include "backend/cuda/kernels/kernels.h"

namespace shardscope::backend::cuda {
namespace attn {

namespace {

struct BwdParams {
  const bf16 *q, *k, *v, *dout;
  const float* lse;
  const float* dsum;  // D [batch][heads][q_seq]
  float* dq_acc;      // [batch][heads][q_seq][d]
  bf16 *dk, *dv_out;
  int64_t heads, kv_heads, q_seq, kv_seq;
  int d, dv;
  float scale, scale_log2;
  AttnMask mask;
};

struct BwdSmem {
  bf16 *k, *v, *q, *dout, *p, *ds;
  float *dk, *dv, *s, *dp, *dq, *lse, *dsum;
  int ldk, ldv, ldk_acc, ldv_acc, lds, ldp;
};

__host__ __device__ inline BwdSmem CarveBwd(SmemCarver& c, int kb, int d, int dv) {
  BwdSmem s;
  s.ldk = d + 8;
  s.ldv = dv + 8;
  s.ldk_acc = d + 4;
  s.ldv_acc = dv + 4;
  s.lds = kb + 4;
  s.ldp = kb + 8;
  const int64_t rows = kb;
  s.k = c.Take<bf16>(rows * s.ldk);
  s.v = c.Take<bf16>(rows * s.ldv);
  s.q = c.Take<bf16>(rows * s.ldk);
  s.dout = c.Take<bf16>(rows * s.ldv);
  s.p = c.Take<bf16>(rows * s.ldp);
  s.ds = c.Take<bf16>(rows * s.ldp);
  s.dk = c.Take<float>(rows * s.ldk_acc);
  s.dv = c.Take<float>(rows * s.ldv_acc);
  s.s = c.Take<float>(rows * s.lds);
  s.dp = c.Take<float>(rows * s.lds);
  s.dq = c.Take<float>(rows * s.ldk_acc);
  s.lse = c.Take<float>(rows);
  s.dsum = c.Take<float>(rows);
  return s;
}

int64_t BackwardSmemBytes(int kb, int d, int dv) {
  SmemCarver c(nullptr);
  CarveBwd(c, kb, d, dv);
  return c.bytes();
}

// D[b][h][i] = Σ_c dO[b][h][i][c] · O[b][h][i][c], one warp per row.
__global__ void RowDotKernel(const bf16* __restrict__ o, const bf16* __restrict__ dout,
                             float* __restrict__ dsum, int64_t batch, int64_t heads, int64_t q_seq,
                             int dv) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= batch * heads * q_seq) return;  // whole warps leave together
  const int64_t i = row % q_seq, h = (row / q_seq) % heads, b = row / (q_seq * heads);
  const int64_t base = ((b * heads + h) * q_seq + i) * dv;
  float acc = 0.0f;
  for (int c = lane; c < dv; c += 32) {
    acc += __bfloat162float(o[base + c]) * __bfloat162float(dout[base + c]);
  }
  acc = WarpSum(acc);
  if (lane == 0) dsum[row] = acc;  // row == (b · heads + h) · q_seq + i
}

template <int kB>
__global__ void __launch_bounds__(kAttnThreads) FlashBackwardKernel(const BwdParams p) {
  extern __shared__ __align__(128) unsigned char smem[];
  SmemCarver carver(smem);
  const BwdSmem s = CarveBwd(carver, kB, p.d, p.dv);
  const int64_t k0 = static_cast<int64_t>(blockIdx.x) * kB;
  const int64_t hk = blockIdx.y, b = blockIdx.z;
  const int64_t group = p.heads / p.kv_heads;

  LoadRows(s.k, s.ldk, p.k + (b * p.kv_heads + hk) * p.kv_seq * p.d, p.d, k0, p.kv_seq, kB, p.d);
  LoadRows(s.v, s.ldv, p.v + (b * p.kv_heads + hk) * p.kv_seq * p.dv, p.dv, k0, p.kv_seq, kB, p.dv);
  for (int idx = threadIdx.x; idx < kB * p.d; idx += blockDim.x) {
    s.dk[(idx / p.d) * s.ldk_acc + idx % p.d] = 0.0f;
  }
  for (int idx = threadIdx.x; idx < kB * p.dv; idx += blockDim.x) {
    s.dv[(idx / p.dv) * s.ldv_acc + idx % p.dv] = 0.0f;
  }

  int64_t q_lo, q_hi;
  p.mask.QueryRange(k0, kB, &q_lo, &q_hi);
  for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
    const bf16* qg = p.q + (b * p.heads + h) * p.q_seq * p.d;
    const bf16* dog = p.dout + (b * p.heads + h) * p.q_seq * p.dv;
    float* dqg = p.dq_acc + (b * p.heads + h) * p.q_seq * p.d;
    const float* lse = p.lse + (b * p.heads + h) * p.q_seq;
    const float* dsum = p.dsum + (b * p.heads + h) * p.q_seq;
    for (int64_t q0 = q_lo / kB * kB; q0 < q_hi; q0 += kB) {
      __syncthreads();  // the previous tile's readers of Q, dO, P and dS are done
      LoadRows(s.q, s.ldk, qg, p.d, q0, p.q_seq, kB, p.d);
      LoadRows(s.dout, s.ldv, dog, p.dv, q0, p.q_seq, kB, p.dv);
      for (int r = threadIdx.x; r < kB; r += blockDim.x) {
        const bool valid = q0 + r < p.q_seq;
        s.lse[r] = valid ? lse[q0 + r] : -INFINITY;
        s.dsum[r] = valid ? dsum[q0 + r] : 0.0f;
      }
      __syncthreads();
      BlockMma<false, true>(s.q, s.ldk, s.k, s.ldk, s.s, s.lds, kB, kB, p.d, false);       // S
      BlockMma<false, true>(s.dout, s.ldv, s.v, s.ldv, s.dp, s.lds, kB, kB, p.dv, false);  // dP
      __syncthreads();
      for (int idx = threadIdx.x; idx < kB * kB; idx += blockDim.x) {
        const int r = idx / kB, c = idx % kB;
        const float l = s.lse[r];
        const bool visible = l != -INFINITY && p.mask.Visible(q0 + r, k0 + c);
        const float pr = visible ? exp2f(s.s[r * s.lds + c] * p.scale_log2 - l * kLog2e) : 0.0f;
        s.p[r * s.ldp + c] = __float2bfloat16(pr);
        s.ds[r * s.ldp + c] = __float2bfloat16(pr * (s.dp[r * s.lds + c] - s.dsum[r]));
      }
      __syncthreads();
      // Pᵀ and dSᵀ are the column-major views of the row-major [query][key] tiles.
      BlockMma<true, false>(s.p, s.ldp, s.dout, s.ldv, s.dv, s.ldv_acc, kB, p.dv, kB, true);
      BlockMma<true, false>(s.ds, s.ldp, s.q, s.ldk, s.dk, s.ldk_acc, kB, p.d, kB, true);
      BlockMma<false, false>(s.ds, s.ldp, s.k, s.ldk, s.dq, s.ldk_acc, kB, p.d, kB, false);
      __syncthreads();
      for (int idx = threadIdx.x; idx < kB * p.d; idx += blockDim.x) {
        const int r = idx / p.d, c = idx % p.d;
        if (q0 + r >= p.q_seq) continue;
        atomicAdd(&dqg[(q0 + r) * p.d + c], s.dq[r * s.ldk_acc + c] * p.scale);
      }
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < kB * p.d; idx += blockDim.x) {
    const int r = idx / p.d, c = idx % p.d;
    if (k0 + r >= p.kv_seq) continue;
    p.dk[((b * p.kv_heads + hk) * p.kv_seq + k0 + r) * p.d + c] =
        __float2bfloat16(s.dk[r * s.ldk_acc + c] * p.scale);
  }
  for (int idx = threadIdx.x; idx < kB * p.dv; idx += blockDim.x) {
    const int r = idx / p.dv, c = idx % p.dv;
    if (k0 + r >= p.kv_seq) continue;
    p.dv_out[((b * p.kv_heads + hk) * p.kv_seq + k0 + r) * p.dv + c] =
        __float2bfloat16(s.dv[r * s.ldv_acc + c]);
  }
}

template <int kB>
Status LaunchBackward(const BwdParams& p, int64_t batch, int64_t smem_bytes, cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>((p.kv_seq + kB - 1) / kB), static_cast<unsigned>(p.kv_heads),
            static_cast<unsigned>(batch));
  return LaunchFlash(FlashBackwardKernel<kB>, "FlashBackwardKernel", grid, p, smem_bytes, stream);
}

int64_t DqAccBytes(const AttentionArgs& s) {
  const int64_t bytes = s.batch * s.q_seq * s.heads * s.head_dim * 4;
  return (bytes + 255) / 256 * 256;
}

}  // namespace
}  // namespace attn

int64_t FlashAttentionBackwardWorkspaceBytes(const AttentionArgs& a) {
  return attn::DqAccBytes(a) + a.batch * a.heads * a.q_seq * 4;
}

Status FlashAttentionBackward(const AttentionArgs& a, void* workspace, cudaStream_t stream) {
  SS_RETURN_IF_ERROR(ValidateAttention(a));
  for (const void* ptr : {a.d_out, static_cast<const void*>(a.d_q), static_cast<const void*>(a.d_k),
                          static_cast<const void*>(a.d_v), static_cast<const void*>(workspace)}) {
    if (ptr == nullptr || reinterpret_cast<uintptr_t>(ptr) % 16 != 0) {
      return InvalidInput(
          "attention backward: d_out, d_q, d_k, d_v and the workspace must be 16-byte aligned");
    }
  }
  float* dq_acc = static_cast<float*>(workspace);
  float* dsum =
      reinterpret_cast<float*>(static_cast<unsigned char*>(workspace) + attn::DqAccBytes(a));
  const int64_t rows = a.batch * a.heads * a.q_seq;
  const int64_t dq_elems = rows * a.head_dim;
  SS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dq_acc, 0, dq_elems * sizeof(float), stream));
  const int64_t row_dot_blocks = (rows * 32 + kThreads - 1) / kThreads;
  if (row_dot_blocks > 0x7fffffff) return InvalidInput("attention backward: too many rows");
  const auto* out = static_cast<const attn::bf16*>(a.out);
  const auto* dout = static_cast<const attn::bf16*>(a.d_out);
  attn::RowDotKernel<<<static_cast<unsigned>(row_dot_blocks), kThreads, 0, stream>>>(
      out, dout, dsum, a.batch, a.heads, a.q_seq, static_cast<int>(a.v_head_dim));
  SS_RETURN_IF_ERROR(LaunchStatus("RowDotKernel"));

  const float scale = SoftmaxScale(a);
  attn::BwdParams p{static_cast<const attn::bf16*>(a.q),
                    static_cast<const attn::bf16*>(a.k),
                    static_cast<const attn::bf16*>(a.v),
                    dout,
                    a.lse,
                    dsum,
                    dq_acc,
                    static_cast<attn::bf16*>(a.d_k),
                    static_cast<attn::bf16*>(a.d_v),
                    a.heads,
                    a.kv_heads,
                    a.q_seq,
                    a.kv_seq,
                    static_cast<int>(a.head_dim),
                    static_cast<int>(a.v_head_dim),
                    scale,
                    scale * attn::kLog2e,
                    attn::AttnMask{a.q_seq, a.kv_seq, a.kv_seq - a.q_seq, a.window, a.causal}};
  const int64_t smem64 = attn::BackwardSmemBytes(64, p.d, p.dv);
  const int64_t smem32 = attn::BackwardSmemBytes(32, p.d, p.dv);
  SS_ASSIGN_OR_RETURN(const int block_rows,
                      attn::FlashBlockRows(smem64, smem32, "attention backward"));
  SS_RETURN_IF_ERROR(block_rows == 64 ? attn::LaunchBackward<64>(p, a.batch, smem64, stream)
                                      : attn::LaunchBackward<32>(p, a.batch, smem32, stream));
  return CastFloatToBf16(dq_acc, static_cast<attn::bf16*>(a.d_q), dq_elems, stream);
}

}  // namespace shardscope::backend::cuda
