// bf16 GEMMs through cuBLASLt: fp32 accumulation, the algorithm cuBLASLt's heuristic picks
// for the shape, the workspace the caller gives (from the device's allocator), plans cached
// per shape so a repeated GEMM costs one hash lookup and the launch. A shape cuBLASLt has no
// algorithm for (odd pitches, unusual type pairs) runs on our own tiled kernel instead
// (kernels/gemm_fallback.h), so no schedule shape fails for want of a cuBLASLt kernel.
//
// Contents:
//   LtGemmArgs      row-major C[m×n] = alpha · op(A)[m×k] · op(B)[k×n] + beta · C (+ bias[n])
//   LtGemm          the cuBLASLt handle and plan cache; Run
//   LinearForward / LinearDataGrad / LinearWeightGrad   nn.Linear's three GEMMs
//   kLtWorkspaceBytes   the workspace to give Run (NVIDIA's recommendation for Hopper)
//
// Example (y = x · Wᵀ for an nn.Linear weight W [out][in]):
//   SS_ASSIGN_OR_RETURN(auto lt, LtGemm::Create());
//   SS_RETURN_IF_ERROR(LinearForward(*lt, x, w, y, tokens, out, in, ws, kLtWorkspaceBytes, s));
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/model/dtype.h"
#include "core/util/status.h"

namespace shardscope::backend::cuda {

inline constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;

// Operands are row-major as PyTorch stores them. trans_a: A is stored [k][m] and used
// transposed; trans_b: B is stored [n][k] (an nn.Linear weight) and used transposed.
// `batch` > 1 runs that many GEMMs, operand i at base + i · stride (elements). Types: A and
// B both bfloat16 (or both float16) with a bf16 / fp16 or fp32 C, or all float32; always
// fp32 accumulation (CUBLAS_COMPUTE_32F: no TF32 for fp32 operands).
struct LtGemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  const void* bias = nullptr;  // [n] in C's type, added to every row (beta must be 0)
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  DType ab_dtype = DType::kBFloat16;
  DType out_dtype = DType::kBFloat16;
  float alpha = 1.0f, beta = 0.0f;
  int batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

class LtGemm {
 public:
  static Result<std::unique_ptr<LtGemm>> Create();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // Enqueues the GEMM on `stream`. `workspace` (device memory, may be null with 0 bytes)
  // is used by this launch only until the stream passes it.
  Status Run(const LtGemmArgs& args, void* workspace, size_t workspace_bytes, cudaStream_t stream);

  // Plans built so far (one per distinct shape, layout and alignment).
  size_t cached_plans() const;

 private:
  struct Plan;
  struct Key {
    int64_t m, n, k, stride_a, stride_b, stride_c;
    int batch;
    uint32_t flags;  // trans_a, trans_b, bias, beta != 0, alignment class, dtypes
    size_t workspace_bytes;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };

  explicit LtGemm(cublasLtHandle_t handle);  // in the .cpp, where Plan is complete
  Result<const Plan*> PlanFor(const LtGemmArgs& args, const Key& key, int alignment_bytes,
                              size_t workspace_bytes);

  cublasLtHandle_t handle_;
  mutable std::mutex mu_;
  std::unordered_map<Key, std::unique_ptr<Plan>, KeyHash> plans_;
};

// nn.Linear (weight [out][in], x [tokens][in], y [tokens][out]):
//   forward      y  = x · Wᵀ (+ bias)
//   data grad    dx = dy · W
//   weight grad  dW = dyᵀ · x (accumulate: dW += …, gradient accumulation)
Status LinearForward(LtGemm& lt, const __nv_bfloat16* x, const __nv_bfloat16* w,
                     const __nv_bfloat16* bias, __nv_bfloat16* y, int64_t tokens, int64_t out,
                     int64_t in, void* workspace, size_t workspace_bytes, cudaStream_t stream);
Status LinearDataGrad(LtGemm& lt, const __nv_bfloat16* dy, const __nv_bfloat16* w,
                      __nv_bfloat16* dx, int64_t tokens, int64_t out, int64_t in, void* workspace,
                      size_t workspace_bytes, cudaStream_t stream);
Status LinearWeightGrad(LtGemm& lt, const __nv_bfloat16* dy, const __nv_bfloat16* x, void* dw,
                        DType dw_dtype, bool accumulate, int64_t tokens, int64_t out, int64_t in,
                        void* workspace, size_t workspace_bytes, cudaStream_t stream);

}  // namespace shardscope::backend::cuda
