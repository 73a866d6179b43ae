// Pieces shared by the flash-attention forward and backward kernels (included by .cu only).
//
// Contents:
//   kAttnThreads     threads per block (4 warps)
//   BlockMma         C (fp32, shared) (+)= A · B over bf16 shared-memory tiles, on WMMA
//   LoadRows         rows of one head of a [seq][heads][dim] tensor into shared memory
//   AttnMask         which (query, key) pairs are visible; the tile ranges worth visiting
//   SmemCarver       shared-memory layout, the same on host (size) and device (pointers)
//   MaxSmemPerBlock  the dynamic shared memory a block of the current device may opt into
//   LaunchFlash      one flash kernel over its grid, opted in to its dynamic shared memory
//   FlashBlockRows   the block size (64 or 32 rows) whose shared memory the device allows
#pragma once

#include <cuda_bf16.h>
#include <mma.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "backend/cuda/kernels/flash_attention.h"
#include "backend/cuda/kernels/kernel_util.cuh"

namespace shardscope::backend::cuda::attn {

using bf16 = __nv_bfloat16;
inline constexpr int kAttnThreads = 128;
inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

// C[m×n] = (accumulate ? C : 0) + A[m×k] · B[k×n], m, n, k multiples of 16. A is row-major
// (A(i, kk) at a[i·lda + kk]) or, with kATrans, column-major (a[kk·lda + i]: the transpose
// of a row-major [k][m] tile); B likewise (kBTrans: b[j·ldb + kk], the transpose of a
// row-major [n][k] tile). lda, ldb multiples of 8 and ldc of 4, every base 32-byte aligned
// (WMMA's rules for 16×16 tile pointers). The warps split C's 16×16 tiles; the caller
// synchronises before reading C or overwriting A and B.
template <bool kATrans, bool kBTrans>
__device__ __forceinline__ void BlockMma(const bf16* a, int lda, const bf16* b, int ldb, float* c,
                                         int ldc, int m, int n, int k, bool accumulate) {
  using namespace nvcuda;
  using ALayout = std::conditional_t<kATrans, wmma::col_major, wmma::row_major>;
  using BLayout = std::conditional_t<kBTrans, wmma::col_major, wmma::row_major>;
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int tiles_n = n / 16, tiles = (m / 16) * tiles_n;
  for (int t = warp; t < tiles; t += warps) {
    const int ti = t / tiles_n, tj = t % tiles_n;
    float* ctile = c + ti * 16 * ldc + tj * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    if (accumulate) {
      wmma::load_matrix_sync(acc, ctile, ldc, wmma::mem_row_major);
    } else {
      wmma::fill_fragment(acc, 0.0f);
    }
    for (int kk = 0; kk < k; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, ALayout> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, BLayout> fb;
      const bf16* atile = kATrans ? a + kk * lda + ti * 16 : a + ti * 16 * lda + kk;
      const bf16* btile = kBTrans ? b + tj * 16 * ldb + kk : b + kk * ldb + tj * 16;
      wmma::load_matrix_sync(fa, atile, lda);
      wmma::load_matrix_sync(fb, btile, ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(ctile, acc, ldc, wmma::mem_row_major);
  }
}

// Rows [row0, row0 + rows) of one head (`g` points at row 0 of that head; consecutive rows
// are `row_stride` elements apart) into s[rows][lds]; rows at or past `valid_rows` are zero.
// dim a multiple of 8 and every row 16-byte aligned: 16-byte vector loads.
__device__ __forceinline__ void LoadRows(bf16* s, int lds, const bf16* g, int64_t row_stride,
                                         int64_t row0, int64_t valid_rows, int rows, int dim) {
  const int vecs = dim / 8;
  for (int idx = threadIdx.x; idx < rows * vecs; idx += blockDim.x) {
    const int r = idx / vecs, c = (idx % vecs) * 8;
    int4 val = make_int4(0, 0, 0, 0);
    if (row0 + r < valid_rows)
      val = *reinterpret_cast<const int4*>(g + (row0 + r) * row_stride + c);
    *reinterpret_cast<int4*>(s + r * lds + c) = val;
  }
}

// Queries are the last q_seq of kv_seq positions (offset = kv_seq − q_seq): query i sits at
// position i + offset and sees key j when j <= its position (causal) and, with a window w,
// when |position − j| < w.
struct AttnMask {
  int64_t q_seq, kv_seq, offset, window;
  bool causal;

  __host__ __device__ bool Visible(int64_t i, int64_t j) const {
    if (i >= q_seq || j >= kv_seq) return false;
    const int64_t pos = i + offset;
    if (causal && j > pos) return false;
    if (window > 0 && (j <= pos - window || (!causal && j >= pos + window))) return false;
    return true;
  }
  // Keys [*lo, *hi) that queries [q0, q0 + rows) may see (a superset; Visible decides).
  __host__ __device__ void KeyRange(int64_t q0, int rows, int64_t* lo, int64_t* hi) const {
    const int64_t first = q0 + offset, last = q0 + rows - 1 + offset;
    *lo = window > 0 ? first - window + 1 : 0;
    *hi = causal ? last + 1 : (window > 0 ? last + window : kv_seq);
    if (*lo < 0) *lo = 0;
    if (*hi > kv_seq) *hi = kv_seq;
  }
  // Queries [*lo, *hi) that may see keys [k0, k0 + rows).
  __host__ __device__ void QueryRange(int64_t k0, int rows, int64_t* lo, int64_t* hi) const {
    const int64_t last = k0 + rows - 1;
    *lo = causal ? k0 - offset : (window > 0 ? k0 - offset - window + 1 : 0);
    *hi = window > 0 ? last - offset + window : q_seq;
    if (*lo < 0) *lo = 0;
    if (*hi > q_seq) *hi = q_seq;
  }
};

// Carves a shared-memory block into 128-byte-aligned arrays; run once with base == nullptr
// on the host for the size, then on the device for the pointers, with the same calls.
class SmemCarver {
 public:
  __host__ __device__ explicit SmemCarver(unsigned char* base) : base_(base) {}
  template <typename T>
  __host__ __device__ T* Take(int64_t count) {
    offset_ = (offset_ + 127) / 128 * 128;
    T* p = base_ ? reinterpret_cast<T*>(base_ + offset_) : nullptr;
    offset_ += count * static_cast<int64_t>(sizeof(T));
    return p;
  }
  __host__ __device__ int64_t bytes() const { return offset_; }

 private:
  unsigned char* base_;
  int64_t offset_ = 0;
};

Result<int64_t> MaxSmemPerBlock();  // flash_attention_fwd.cu

// `kernel` over `grid`, kAttnThreads per block, with `smem_bytes` of dynamic shared memory
// (above 48 KiB a kernel must opt in to it first).
template <typename Params>
Status LaunchFlash(void (*kernel)(Params), const char* name, dim3 grid, const Params& p,
                   int64_t smem_bytes, cudaStream_t stream) {
  SS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem_bytes)));
  kernel<<<grid, kAttnThreads, smem_bytes, stream>>>(p);
  return LaunchStatus(name);
}

// 64 when a block of 64 rows fits the device's shared memory (`smem64` bytes), else 32 when
// 32 rows do; RuntimeError naming `what` and the sizes otherwise.
inline Result<int> FlashBlockRows(int64_t smem64, int64_t smem32, const char* what) {
  SS_ASSIGN_OR_RETURN(int64_t max_smem, MaxSmemPerBlock());
  if (smem64 <= max_smem) return 64;
  if (smem32 <= max_smem) return 32;
  return RuntimeError(std::string(what) + " needs " + std::to_string(smem32) +
                      " bytes of shared memory per block; the device allows " +
                      std::to_string(max_smem));
}

}  // namespace shardscope::backend::cuda::attn
