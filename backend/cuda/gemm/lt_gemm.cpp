// cuBLASLt is column-major; a row-major C[m×n] = op(A) · op(B) is the column-major
// Cᵀ[n×m] = op(B)ᵀ · op(A)ᵀ, so B's storage is cuBLASLt's first operand and A's its second,
// each transposed exactly when the row-major operand is not stored in the orientation used:
//   B stored [k][n] (no trans_b) = column-major n×k, ld n, op N; stored [n][k] = column-major
//   k×n, ld k, op T.  A stored [m][k] = column-major k×m, ld k, op N; stored [k][m] = column-
//   major m×k, ld m, op T.  C = column-major n×m, ld n; a bias of n entries is per row of Cᵀ.
#include "backend/cuda/gemm/lt_gemm.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernels/gemm_fallback.h"

namespace shardscope::backend::cuda {

struct LtGemm::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool fallback = false;  // cuBLASLt had no algorithm: our own kernel (kernels/gemm_fallback.cu)
  ~Plan() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

namespace {

enum Flag : uint32_t {
  kTransA = 1u << 0,
  kTransB = 1u << 1,
  kBias = 1u << 3,
  kBeta = 1u << 4,
  kAlignShift = 8,     // log2 of the common pointer alignment, bits 8..15
  kAbTypeShift = 16,   // DType of A and B, bits 16..23
  kOutTypeShift = 24,  // DType of C, bits 24..31
};

Result<cudaDataType_t> CudaTypeOf(DType d) {
  switch (d) {
    case DType::kBFloat16:
      return CUDA_R_16BF;
    case DType::kFloat16:
      return CUDA_R_16F;
    case DType::kFloat32:
      return CUDA_R_32F;
    default:
      return InvalidInput(std::string("GEMM: no cuBLASLt type for ") + std::string(DTypeName(d)));
  }
}

// The largest power of two (<= 256) that every operand's address, row pitch and batch
// stride (in bytes) is a multiple of: cuBLASLt's heuristic assumes 256-byte alignment unless
// told otherwise, and a row of 150 bf16 starts 4-byte aligned only.
int CommonAlignment(const LtGemmArgs& g) {
  uintptr_t bits = 256;
  for (const void* p : {g.a, g.b, static_cast<const void*>(g.c), g.bias}) {
    if (p) bits |= reinterpret_cast<uintptr_t>(p);
  }
  const int64_t ab = DTypeBytes(g.ab_dtype), out = DTypeBytes(g.out_dtype);
  for (int64_t v : {(g.trans_a ? g.m : g.k) * ab, (g.trans_b ? g.k : g.n) * ab, g.n * out,
                    g.stride_a * ab, g.stride_b * ab, g.stride_c * out}) {
    if (v != 0) bits |= static_cast<uintptr_t>(v);
  }
  return static_cast<int>(std::min<uintptr_t>(256, bits & (~bits + 1)));
}

Status Set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const void* v, size_t n) {
  return CublasStatus(cublasLtMatmulDescSetAttribute(d, attr, v, n),
                      "cublasLtMatmulDescSetAttribute");
}

Status MakeLayout(cublasLtMatrixLayout_t* out, cudaDataType_t type, int64_t rows, int64_t cols,
                  int64_t ld, int batch, int64_t stride) {
  SS_RETURN_IF_ERROR(CublasStatus(cublasLtMatrixLayoutCreate(out, type, rows, cols, ld),
                                  "cublasLtMatrixLayoutCreate"));
  if (batch > 1) {
    SS_RETURN_IF_ERROR(
        CublasStatus(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                      &batch, sizeof(batch)),
                     "cublasLtMatrixLayoutSetAttribute(batch)"));
    SS_RETURN_IF_ERROR(CublasStatus(
        cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                         sizeof(stride)),
        "cublasLtMatrixLayoutSetAttribute(stride)"));
  }
  return Status::Ok();
}

std::string ShapeText(const LtGemmArgs& g) {
  return "GEMM " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) +
         (g.trans_a ? " A^T" : "") + (g.trans_b ? " B^T" : "") +
         (g.batch > 1 ? " batch " + std::to_string(g.batch) : "");
}

}  // namespace

size_t LtGemm::KeyHash::operator()(const Key& k) const {
  size_t h = 0;
  for (int64_t v :
       {k.m, k.n, k.k, k.stride_a, k.stride_b, k.stride_c, static_cast<int64_t>(k.batch),
        static_cast<int64_t>(k.flags), static_cast<int64_t>(k.workspace_bytes)}) {
    h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  return h;
}

Result<std::unique_ptr<LtGemm>> LtGemm::Create() {
  cublasLtHandle_t handle = nullptr;
  SS_RETURN_IF_ERROR(CublasStatus(cublasLtCreate(&handle), "cublasLtCreate"));
  return std::unique_ptr<LtGemm>(new LtGemm(handle));
}

LtGemm::LtGemm(cublasLtHandle_t handle) : handle_(handle) {}

LtGemm::~LtGemm() {
  plans_.clear();
  cublasLtDestroy(handle_);
}

size_t LtGemm::cached_plans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

Result<const LtGemm::Plan*> LtGemm::PlanFor(const LtGemmArgs& g, const Key& key,
                                            int alignment_bytes, size_t workspace_bytes) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return static_cast<const Plan*>(it->second.get());

  auto plan = std::make_unique<Plan>();
  SS_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                   "cublasLtMatmulDescCreate"));
  const cublasOperation_t op_first = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;   // from B
  const cublasOperation_t op_second = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // from A
  SS_RETURN_IF_ERROR(Set(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)));
  SS_RETURN_IF_ERROR(Set(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)));
  if (g.bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    SS_ASSIGN_OR_RETURN(const cudaDataType_t bias_type, CudaTypeOf(g.out_dtype));
    SS_RETURN_IF_ERROR(Set(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    SS_RETURN_IF_ERROR(
        Set(plan->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
  }
  SS_ASSIGN_OR_RETURN(const cudaDataType_t ab_type, CudaTypeOf(g.ab_dtype));
  SS_ASSIGN_OR_RETURN(const cudaDataType_t out_type, CudaTypeOf(g.out_dtype));
  if (g.trans_b) {
    SS_RETURN_IF_ERROR(MakeLayout(&plan->a, ab_type, g.k, g.n, g.k, g.batch, g.stride_b));
  } else {
    SS_RETURN_IF_ERROR(MakeLayout(&plan->a, ab_type, g.n, g.k, g.n, g.batch, g.stride_b));
  }
  if (g.trans_a) {
    SS_RETURN_IF_ERROR(MakeLayout(&plan->b, ab_type, g.m, g.k, g.m, g.batch, g.stride_a));
  } else {
    SS_RETURN_IF_ERROR(MakeLayout(&plan->b, ab_type, g.k, g.m, g.k, g.batch, g.stride_a));
  }
  SS_RETURN_IF_ERROR(MakeLayout(&plan->c, out_type, g.n, g.m, g.n, g.batch, g.stride_c));

  cublasLtMatmulPreference_t pref = nullptr;
  SS_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate"));
  const uint32_t align = static_cast<uint32_t>(alignment_bytes);
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof(workspace_bytes));
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    if (st == CUBLAS_STATUS_SUCCESS) {
      st = cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align));
    }
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(handle_, plan->op, plan->a, plan->b, plan->c, plan->c, pref,
                                        1, &result, &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  SS_RETURN_IF_ERROR(CublasStatus(st, "cublasLtMatmulAlgoGetHeuristic for " + ShapeText(g)));
  if (found == 0) {
    plan->fallback = true;
  } else {
    plan->algo = result.algo;
  }
  const Plan* raw = plan.get();
  plans_.emplace(key, std::move(plan));
  return raw;
}

Status LtGemm::Run(const LtGemmArgs& g, void* workspace, size_t workspace_bytes,
                   cudaStream_t stream) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch < 1) {
    return InvalidInput(ShapeText(g) + ": m, n, k and batch must be positive");
  }
  if (g.bias && g.beta != 0.0f) return InvalidInput(ShapeText(g) + ": bias with beta != 0");
  if (!workspace) workspace_bytes = 0;
  const int alignment = CommonAlignment(g);
  if (g.ab_dtype == DType::kFloat32 && g.out_dtype != DType::kFloat32) {
    return InvalidInput(ShapeText(g) + ": fp32 operands need an fp32 output");
  }
  const uint32_t flags =
      (g.trans_a ? kTransA : 0u) | (g.trans_b ? kTransB : 0u) | (g.bias ? kBias : 0u) |
      (g.beta != 0.0f ? kBeta : 0u) |
      (static_cast<uint32_t>(std::countr_zero(static_cast<unsigned>(alignment))) << kAlignShift) |
      (static_cast<uint32_t>(g.ab_dtype) << kAbTypeShift) |
      (static_cast<uint32_t>(g.out_dtype) << kOutTypeShift);
  const Key key{g.m, g.n, g.k, g.stride_a, g.stride_b, g.stride_c, g.batch, flags, workspace_bytes};
  // One lock over lookup and launch: the cached descriptor carries the bias pointer.
  std::lock_guard<std::mutex> lock(mu_);
  SS_ASSIGN_OR_RETURN(const Plan* plan, PlanFor(g, key, alignment, workspace_bytes));
  if (plan->fallback) return FallbackGemm(g, stream);
  if (g.bias) {
    SS_RETURN_IF_ERROR(Set(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
  }
  return CublasStatus(
      cublasLtMatmul(handle_, plan->op, &g.alpha, g.b, plan->a, g.a, plan->b, &g.beta, g.c, plan->c,
                     g.c, plan->c, &plan->algo, workspace, workspace_bytes, stream),
      "cublasLtMatmul for " + ShapeText(g));
}

Status LinearForward(LtGemm& lt, const __nv_bfloat16* x, const __nv_bfloat16* w,
                     const __nv_bfloat16* bias, __nv_bfloat16* y, int64_t tokens, int64_t out,
                     int64_t in, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  LtGemmArgs g;
  g.a = x;
  g.b = w;
  g.c = y;
  g.bias = bias;
  g.m = tokens;
  g.n = out;
  g.k = in;
  g.trans_b = true;
  return lt.Run(g, workspace, workspace_bytes, stream);
}

Status LinearDataGrad(LtGemm& lt, const __nv_bfloat16* dy, const __nv_bfloat16* w,
                      __nv_bfloat16* dx, int64_t tokens, int64_t out, int64_t in, void* workspace,
                      size_t workspace_bytes, cudaStream_t stream) {
  LtGemmArgs g;
  g.a = dy;
  g.b = w;
  g.c = dx;
  g.m = tokens;
  g.n = in;
  g.k = out;
  return lt.Run(g, workspace, workspace_bytes, stream);
}

Status LinearWeightGrad(LtGemm& lt, const __nv_bfloat16* dy, const __nv_bfloat16* x, void* dw,
                        DType dw_dtype, bool accumulate, int64_t tokens, int64_t out, int64_t in,
                        void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  LtGemmArgs g;
  g.a = dy;  // stored [tokens][out], used transposed: [out][tokens]
  g.b = x;   // [tokens][in]
  g.c = dw;  // [out][in]
  g.m = out;
  g.n = in;
  g.k = tokens;
  g.trans_a = true;
  g.out_dtype = dw_dtype;
  g.beta = accumulate ? 1.0f : 0.0f;
  return lt.Run(g, workspace, workspace_bytes, stream);
}

}  // namespace shardscope::backend::cuda
