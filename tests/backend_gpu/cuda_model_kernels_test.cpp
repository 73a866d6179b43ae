// The bf16 model kernels beyond the Device interface (norm backward, LayerNorm, SwiGLU,
// GELU, residual add) against double-precision references written from their formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cuda/cuda_device.h"
#include "backend/cuda/kernels/gemm_fallback.h"
#include "backend/cuda/kernels/kernels.h"
#include "backend/host/host_kernels.h"
#include "gpu_test_util.h"

namespace shardscope::backend::testing {
namespace {

class ModelKernelsTest : public CudaDeviceTest {
 protected:
  cudaStream_t stream() { return static_cast<cuda::CudaDevice&>(device()).stream(Lane::kCompute); }
  template <typename T>
  T* As(void* p) {
    return static_cast<T*>(p);
  }
};

using cuda::bf16;

TEST_F(ModelKernelsTest, RmsNormForwardAndBackward) {
  const int64_t rows = 20, cols = 1000;
  const std::vector<uint16_t> x = Bf16Vector(rows * cols, 1, 2.0f), w = Bf16Vector(cols, 2),
                              dy = Bf16Vector(rows * cols, 3);
  const std::vector<float> xf = Widen(x), wf = Widen(w), dyf = Widen(dy);
  void* dx_in = Upload(x);
  void* dw_in = Upload(w);
  void* ddy = Upload(dy);
  void* dyo = Alloc(rows * cols * 2);
  void* drstd = Alloc(rows * 4);
  void* ddx = Alloc(rows * cols * 2);
  void* ddw = Alloc(cols * 4);
  const float eps = 1e-5f;
  ASSERT_TRUE(cuda::RmsNormForward(As<bf16>(dx_in), As<bf16>(dw_in), As<bf16>(dyo),
                                   As<float>(drstd), rows, cols, eps, stream())
                  .ok());
  ASSERT_TRUE(cuda::RmsNormBackward(As<bf16>(dx_in), As<bf16>(dw_in), As<float>(drstd),
                                    As<bf16>(ddy), As<bf16>(ddx), As<float>(ddw), rows, cols,
                                    stream())
                  .ok());
  std::vector<float> y(rows * cols), dx(rows * cols), dw(cols, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c) ss += double(xf[r * cols + c]) * xf[r * cols + c];
    const double rstd = 1.0 / std::sqrt(ss / cols + eps);
    double dot = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = xf[r * cols + c] * rstd;
      y[r * cols + c] = static_cast<float>(xhat * wf[c]);
      dot += dyf[r * cols + c] * wf[c] * xhat;
      dw[c] += static_cast<float>(dyf[r * cols + c] * xhat);
    }
    dot /= cols;
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = xf[r * cols + c] * rstd;
      dx[r * cols + c] = static_cast<float>(rstd * (dyf[r * cols + c] * wf[c] - xhat * dot));
    }
  }
  EXPECT_LE(MaxAbsDiff(y, Widen(Download<uint16_t>(dyo, rows * cols))), MaxAbs(y) / 64);
  EXPECT_LE(MaxAbsDiff(dx, Widen(Download<uint16_t>(ddx, rows * cols))), MaxAbs(dx) / 64);
  EXPECT_LE(MaxAbsDiff(dw, Download<float>(ddw, cols)), MaxAbs(dw) * 1e-3f);
}

TEST_F(ModelKernelsTest, LayerNormForwardAndBackward) {
  const int64_t rows = 9, cols = 777;
  const std::vector<uint16_t> x = Bf16Vector(rows * cols, 4, 3.0f), w = Bf16Vector(cols, 5),
                              b = Bf16Vector(cols, 6), dy = Bf16Vector(rows * cols, 7);
  const std::vector<float> xf = Widen(x), wf = Widen(w), bf = Widen(b), dyf = Widen(dy);
  void* dxi = Upload(x);
  void* dwi = Upload(w);
  void* dbi = Upload(b);
  void* ddy = Upload(dy);
  void* dyo = Alloc(rows * cols * 2);
  void* dmean = Alloc(rows * 4);
  void* drstd = Alloc(rows * 4);
  void* ddx = Alloc(rows * cols * 2);
  void* ddw = Alloc(cols * 4);
  void* ddb = Alloc(cols * 4);
  ASSERT_TRUE(cuda::LayerNormForward(As<bf16>(dxi), As<bf16>(dwi), As<bf16>(dbi), As<bf16>(dyo),
                                     As<float>(dmean), As<float>(drstd), rows, cols, 1e-5f,
                                     stream())
                  .ok());
  ASSERT_TRUE(cuda::LayerNormBackward(As<bf16>(dxi), As<bf16>(dwi), As<float>(dmean),
                                      As<float>(drstd), As<bf16>(ddy), As<bf16>(ddx),
                                      As<float>(ddw), As<float>(ddb), rows, cols, stream())
                  .ok());
  std::vector<float> y(rows * cols), dx(rows * cols), dw(cols, 0.0f), db(cols, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += xf[r * cols + c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) var += std::pow(xf[r * cols + c] - mean, 2);
    const double rstd = 1.0 / std::sqrt(var / cols + 1e-5);
    double mg = 0, mgx = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = (xf[r * cols + c] - mean) * rstd, g = dyf[r * cols + c] * wf[c];
      y[r * cols + c] = static_cast<float>(xhat * wf[c] + bf[c]);
      mg += g;
      mgx += g * xhat;
      dw[c] += static_cast<float>(dyf[r * cols + c] * xhat);
      db[c] += dyf[r * cols + c];
    }
    mg /= cols;
    mgx /= cols;
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = (xf[r * cols + c] - mean) * rstd, g = dyf[r * cols + c] * wf[c];
      dx[r * cols + c] = static_cast<float>(rstd * (g - mg - xhat * mgx));
    }
  }
  EXPECT_LE(MaxAbsDiff(y, Widen(Download<uint16_t>(dyo, rows * cols))), MaxAbs(y) / 64);
  EXPECT_LE(MaxAbsDiff(dx, Widen(Download<uint16_t>(ddx, rows * cols))), MaxAbs(dx) / 64);
  EXPECT_LE(MaxAbsDiff(dw, Download<float>(ddw, cols)), MaxAbs(dw) * 1e-3f);
  EXPECT_LE(MaxAbsDiff(db, Download<float>(ddb, cols)), MaxAbs(db) * 1e-3f);
}

TEST_F(ModelKernelsTest, ElementwiseChains) {
  const int64_t n = 50001;
  const std::vector<uint16_t> g = Bf16Vector(n, 8, 4.0f), u = Bf16Vector(n, 9),
                              d = Bf16Vector(n, 10);
  const std::vector<float> gf = Widen(g), uf = Widen(u), df = Widen(d);
  void* dg = Upload(g);
  void* du = Upload(u);
  void* dd = Upload(d);
  void* o1 = Alloc(n * 2);
  void* o2 = Alloc(n * 2);
  void* o3 = Alloc(n * 2);
  auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  std::vector<float> silu_mul(n), dgate(n), dup(n), gelu(n), gelu_tanh_grad(n), add(n);
  for (int64_t i = 0; i < n; ++i) {
    const double x = gf[i], s = sig(x);
    silu_mul[i] = static_cast<float>(x * s * uf[i]);
    dgate[i] = static_cast<float>(df[i] * uf[i] * s * (1 + x * (1 - s)));
    dup[i] = static_cast<float>(df[i] * x * s);
    gelu[i] = static_cast<float>(0.5 * x * (1 + std::erf(x / std::sqrt(2.0))));
    const double k = std::sqrt(2.0 / M_PI), t = std::tanh(k * (x + 0.044715 * x * x * x));
    gelu_tanh_grad[i] = static_cast<float>(
        df[i] * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)));
    add[i] = gf[i] + uf[i];
  }
  ASSERT_TRUE(cuda::SiluMulForward(As<bf16>(dg), As<bf16>(du), As<bf16>(o1), n, stream()).ok());
  EXPECT_LE(MaxAbsDiff(silu_mul, Widen(Download<uint16_t>(o1, n))), MaxAbs(silu_mul) / 128);
  ASSERT_TRUE(cuda::SiluMulBackward(As<bf16>(dg), As<bf16>(du), As<bf16>(dd), As<bf16>(o1),
                                    As<bf16>(o2), n, stream())
                  .ok());
  EXPECT_LE(MaxAbsDiff(dgate, Widen(Download<uint16_t>(o1, n))), MaxAbs(dgate) / 128);
  EXPECT_LE(MaxAbsDiff(dup, Widen(Download<uint16_t>(o2, n))), MaxAbs(dup) / 128);
  ASSERT_TRUE(
      cuda::GeluForward(As<bf16>(dg), As<bf16>(o3), n, cuda::GeluKind::kErf, stream()).ok());
  EXPECT_LE(MaxAbsDiff(gelu, Widen(Download<uint16_t>(o3, n))), MaxAbs(gelu) / 128);
  ASSERT_TRUE(cuda::GeluBackward(As<bf16>(dg), As<bf16>(dd), As<bf16>(o3), n, cuda::GeluKind::kTanh,
                                 stream())
                  .ok());
  EXPECT_LE(MaxAbsDiff(gelu_tanh_grad, Widen(Download<uint16_t>(o3, n))),
            MaxAbs(gelu_tanh_grad) / 128);
  ASSERT_TRUE(cuda::ResidualAdd(As<bf16>(dg), As<bf16>(du), As<bf16>(o3), n, stream()).ok());
  EXPECT_LE(MaxAbsDiff(add, Widen(Download<uint16_t>(o3, n))), MaxAbs(add) / 256);
}

// The GEMM cuBLASLt declines runs on our own kernel: odd pitches, transposes, a batch, beta.
TEST_F(ModelKernelsTest, FallbackGemmMatchesTheHost) {
  const int64_t m = 37, n = 75, k = 150, batch = 2;
  const std::vector<uint16_t> a = Bf16Vector(batch * m * k, 1), b = Bf16Vector(batch * k * n, 2);
  std::vector<float> c = FloatVector(batch * m * n, 3);
  void* da = Upload(a);
  void* db = Upload(b);
  void* dc = Upload(c);
  cuda::LtGemmArgs g;
  g.a = da;
  g.b = db;
  g.c = dc;
  g.m = m, g.n = n, g.k = k, g.batch = batch;
  g.trans_a = true, g.trans_b = true;
  g.ab_dtype = DType::kBFloat16, g.out_dtype = DType::kFloat32;
  g.alpha = 0.5f, g.beta = 1.0f;
  g.stride_a = m * k, g.stride_b = k * n, g.stride_c = m * n;
  ASSERT_TRUE(cuda::FallbackGemm(g, stream()).ok());
  GemmArgs h{m,
             n,
             k,
             batch,
             true,
             true,
             DType::kBFloat16,
             DType::kBFloat16,
             DType::kFloat32,
             a.data(),
             b.data(),
             c.data(),
             0.5f,
             1.0f};
  ASSERT_TRUE(host::Gemm(h).ok());
  EXPECT_LE(MaxAbsDiff(c, Download<float>(dc, batch * m * n)), 1e-4f * MaxAbs(c));
}

}  // namespace
}  // namespace shardscope::backend::testing
