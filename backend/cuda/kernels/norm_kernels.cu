// RMSNorm and LayerNorm, forward and backward: one block per row for the row-wise parts
// (statistics, dx), a column kernel for the weight gradients so their sums over rows are
// coalesced and need one atomic per column and block, not one per element.
#include "backend/cuda/kernels/kernel_util.cuh"
#include "backend/cuda/kernels/kernels.h"

namespace shardscope::backend::cuda {
namespace {

// Rows a block of the column kernel sums before its atomics.
constexpr int kRowsPerColumnBlock = 256;

__global__ void RmsNormForwardKernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                     bf16* __restrict__ y, float* __restrict__ rstd_out,
                                     int64_t cols, float eps) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const bf16* xr = x + row * cols;
  float ss = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = __bfloat162float(xr[c]);
    ss += v * v;
  }
  ss = BlockSum(ss, scratch);
  const float rstd = rsqrtf(ss / static_cast<float>(cols) + eps);
  if (threadIdx.x == 0) rstd_out[row] = rstd;
  // transformers: weight * hidden.to(input_dtype): the normalised value is rounded first.
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float normed = __bfloat162float(__float2bfloat16(__bfloat162float(xr[c]) * rstd));
    y[row * cols + c] = __float2bfloat16(__bfloat162float(w[c]) * normed);
  }
}

// dx = rstd · (g − x̂ · mean(g · x̂)), g = dy · w, x̂ = x · rstd.
__global__ void RmsNormBackwardKernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                      const float* __restrict__ rstd_in,
                                      const bf16* __restrict__ dy, bf16* __restrict__ dx,
                                      int64_t cols) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const float rstd = rstd_in[row];
  const int64_t base = row * cols;
  float dot = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = __bfloat162float(dy[base + c]) * __bfloat162float(w[c]);
    dot += g * __bfloat162float(x[base + c]) * rstd;
  }
  dot = BlockSum(dot, scratch) / static_cast<float>(cols);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = __bfloat162float(dy[base + c]) * __bfloat162float(w[c]);
    const float xhat = __bfloat162float(x[base + c]) * rstd;
    dx[base + c] = __float2bfloat16(rstd * (g - xhat * dot));
  }
}

__global__ void LayerNormForwardKernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                       const bf16* __restrict__ b, bf16* __restrict__ y,
                                       float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                       int64_t cols, float eps) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const bf16* xr = x + row * cols;
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += __bfloat162float(xr[c]);
  const float mean = BlockSum(s, scratch) / static_cast<float>(cols);
  // Two passes (mean, then centred squares): no cancellation for rows with a large mean.
  float ss = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = __bfloat162float(xr[c]) - mean;
    ss += d * d;
  }
  const float rstd = rsqrtf(BlockSum(ss, scratch) / static_cast<float>(cols) + eps);
  if (threadIdx.x == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (__bfloat162float(xr[c]) - mean) * rstd;
    y[row * cols + c] =
        __float2bfloat16(xhat * __bfloat162float(w[c]) + (b ? __bfloat162float(b[c]) : 0.0f));
  }
}

// dx = rstd · (g − mean(g) − x̂ · mean(g · x̂)), g = dy · w.
__global__ void LayerNormBackwardKernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                        const float* __restrict__ mean_in,
                                        const float* __restrict__ rstd_in,
                                        const bf16* __restrict__ dy, bf16* __restrict__ dx,
                                        int64_t cols) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const float mean = mean_in[row], rstd = rstd_in[row];
  const int64_t base = row * cols;
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = __bfloat162float(dy[base + c]) * __bfloat162float(w[c]);
    sum_g += g;
    sum_gx += g * (__bfloat162float(x[base + c]) - mean) * rstd;
  }
  const float mean_g = BlockSum(sum_g, scratch) / static_cast<float>(cols);
  const float mean_gx = BlockSum(sum_gx, scratch) / static_cast<float>(cols);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = __bfloat162float(dy[base + c]) * __bfloat162float(w[c]);
    const float xhat = (__bfloat162float(x[base + c]) - mean) * rstd;
    dx[base + c] = __float2bfloat16(rstd * (g - mean_g - xhat * mean_gx));
  }
}

// dweight[c] += Σ dy · x̂ and dbias[c] += Σ dy over this block's rows (mean == nullptr: RMS).
__global__ void NormWeightGradKernel(const bf16* __restrict__ x, const float* __restrict__ mean,
                                     const float* __restrict__ rstd, const bf16* __restrict__ dy,
                                     float* __restrict__ dweight, float* __restrict__ dbias,
                                     int64_t rows, int64_t cols) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kRowsPerColumnBlock;
  const int64_t r1 = r0 + kRowsPerColumnBlock < rows ? r0 + kRowsPerColumnBlock : rows;
  float dw = 0.0f, db = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const float g = __bfloat162float(dy[r * cols + c]);
    const float xhat = (__bfloat162float(x[r * cols + c]) - (mean ? mean[r] : 0.0f)) * rstd[r];
    dw += g * xhat;
    db += g;
  }
  atomicAdd(&dweight[c], dw);
  if (dbias) atomicAdd(&dbias[c], db);
}

Status CheckRows(int64_t rows, int64_t cols) {
  if (rows < 0 || cols <= 0 || rows > 0x7fffffff) {
    return InvalidInput("norm kernel: rows in [0, 2^31) and cols > 0 expected, got " +
                        std::to_string(rows) + " x " + std::to_string(cols));
  }
  return Status::Ok();
}

Status LaunchWeightGrad(const bf16* x, const float* mean, const float* rstd, const bf16* dy,
                        float* dweight, float* dbias, int64_t rows, int64_t cols,
                        cudaStream_t stream) {
  SS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dweight, 0, cols * sizeof(float), stream));
  if (dbias) SS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dbias, 0, cols * sizeof(float), stream));
  if (rows == 0) return Status::Ok();
  const int64_t row_blocks = (rows + kRowsPerColumnBlock - 1) / kRowsPerColumnBlock;
  if (row_blocks > 65535) return InvalidInput("norm backward: more than 16M rows");
  dim3 grid(static_cast<unsigned>((cols + kThreads - 1) / kThreads),
            static_cast<unsigned>(row_blocks));
  NormWeightGradKernel<<<grid, kThreads, 0, stream>>>(x, mean, rstd, dy, dweight, dbias, rows,
                                                      cols);
  return LaunchStatus("NormWeightGradKernel");
}

}  // namespace

Status RmsNormForward(const bf16* x, const bf16* weight, bf16* y, float* rstd, int64_t rows,
                      int64_t cols, float eps, cudaStream_t stream) {
  SS_RETURN_IF_ERROR(CheckRows(rows, cols));
  if (rows == 0) return Status::Ok();
  RmsNormForwardKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, weight, y, rstd,
                                                                             cols, eps);
  return LaunchStatus("RmsNormForwardKernel");
}

Status RmsNormBackward(const bf16* x, const bf16* weight, const float* rstd, const bf16* dy,
                       bf16* dx, float* dweight, int64_t rows, int64_t cols, cudaStream_t stream) {
  SS_RETURN_IF_ERROR(CheckRows(rows, cols));
  if (rows > 0) {
    RmsNormBackwardKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, weight, rstd, dy,
                                                                                dx, cols);
    SS_RETURN_IF_ERROR(LaunchStatus("RmsNormBackwardKernel"));
  }
  return LaunchWeightGrad(x, nullptr, rstd, dy, dweight, nullptr, rows, cols, stream);
}

Status LayerNormForward(const bf16* x, const bf16* weight, const bf16* bias, bf16* y, float* mean,
                        float* rstd, int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  SS_RETURN_IF_ERROR(CheckRows(rows, cols));
  if (rows == 0) return Status::Ok();
  LayerNormForwardKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      x, weight, bias, y, mean, rstd, cols, eps);
  return LaunchStatus("LayerNormForwardKernel");
}

Status LayerNormBackward(const bf16* x, const bf16* weight, const float* mean, const float* rstd,
                         const bf16* dy, bf16* dx, float* dweight, float* dbias, int64_t rows,
                         int64_t cols, cudaStream_t stream) {
  SS_RETURN_IF_ERROR(CheckRows(rows, cols));
  if (rows > 0) {
    LayerNormBackwardKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        x, weight, mean, rstd, dy, dx, cols);
    SS_RETURN_IF_ERROR(LaunchStatus("LayerNormBackwardKernel"));
  }
  return LaunchWeightGrad(x, mean, rstd, dy, dweight, dbias, rows, cols, stream);
}

}  // namespace shardscope::backend::cuda
