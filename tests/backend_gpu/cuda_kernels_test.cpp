// The CUDA device's kernels against the host device's (backend/host/host_kernels.h): bit for
// bit where both are exact (fills, casts, FSDP copies, scale-add and mul, AdamW), to rounding
// where the order of a sum differs (GEMMs, norms, SiLU's exp).
#include <gtest/gtest.h>

#include <vector>

#include "backend/host/host_kernels.h"
#include "gpu_test_util.h"

namespace shardscope::backend::testing {
namespace {

using KernelsTest = CudaDeviceTest;

TEST_F(KernelsTest, FillMatchesTheHostBitForBit) {
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kUInt8}) {
    const int64_t n = 100003;  // not a multiple of any block size
    const int64_t bytes = n * DTypeBytes(dtype);
    void* d = Alloc(bytes);
    ASSERT_TRUE(device().Fill(Lane::kCompute, FillArgs{d, dtype, n, 42, 7, 0.5f}).ok());
    std::vector<char> host(bytes), got = Download<char>(d, bytes);
    ASSERT_TRUE(host::Fill(FillArgs{host.data(), dtype, n, 42, 7, 0.5f}).ok());
    EXPECT_EQ(0, std::memcmp(host.data(), got.data(), bytes)) << DTypeName(dtype);
  }
}

TEST_F(KernelsTest, CastsRoundLikeTheHost) {
  const int64_t n = 65537;
  std::vector<float> x = FloatVector(n, 3, 100.0f);
  void* dx = Upload(x);
  void* dy = Alloc(n * 2);
  ASSERT_TRUE(
      device()
          .Cast(Lane::kCompute, CastArgs{n, DType::kFloat32, DType::kBFloat16, dx, dy, 1.0f})
          .ok());
  std::vector<uint16_t> host(n), got = Download<uint16_t>(dy, n);
  ASSERT_TRUE(
      host::Cast(CastArgs{n, DType::kFloat32, DType::kBFloat16, x.data(), host.data(), 1.0f}).ok());
  EXPECT_EQ(host, got);
  // bf16 → fp32 with a scale (the emulated reduction's cast).
  void* dz = Alloc(n * 4);
  ASSERT_TRUE(
      device()
          .Cast(Lane::kCompute, CastArgs{n, DType::kBFloat16, DType::kFloat32, dy, dz, 0.125f})
          .ok());
  std::vector<float> host_z(n), got_z = Download<float>(dz, n);
  ASSERT_TRUE(
      host::Cast(CastArgs{n, DType::kBFloat16, DType::kFloat32, host.data(), host_z.data(), 0.125f})
          .ok());
  EXPECT_EQ(host_z, got_z);
}

// Copy-out of a gathered buffer over 3 ranks into two parameters (the second padded), and a
// reduce copy-in that casts to fp32 and zero-pads, as FSDP2 lays them out.
TEST_F(KernelsTest, FsdpCopiesMatchTheHost) {
  const int64_t shard = 1000, ranks = 3;
  std::vector<uint16_t> gathered = Bf16Vector(shard * ranks, 11);
  void* dg = Upload(gathered);
  void* dout = Zeros<uint16_t>(shard * ranks);
  std::vector<uint16_t> host_out(shard * ranks, 0);
  FsdpCopyArgs dev_args{DType::kBFloat16, DType::kBFloat16, 1.0f, {}};
  FsdpCopyArgs host_args = dev_args;
  for (int64_t r = 0; r < ranks; ++r) {
    // param 0: 600 elements of each shard; param 1: the remaining 400 (last rank: 150 + pad).
    const int64_t p1 = r == ranks - 1 ? 150 : 400;
    const int64_t src = r * shard, dst0 = r * 600, dst1 = ranks * 600 + r * 400;
    dev_args.segments.push_back(
        {static_cast<char*>(dg) + src * 2, static_cast<char*>(dout) + dst0 * 2, 600});
    dev_args.segments.push_back(
        {static_cast<char*>(dg) + (src + 600) * 2, static_cast<char*>(dout) + dst1 * 2, p1});
    host_args.segments.push_back({gathered.data() + src, host_out.data() + dst0, 600});
    host_args.segments.push_back({gathered.data() + src + 600, host_out.data() + dst1, p1});
  }
  ASSERT_TRUE(device().FsdpCopy(Lane::kCompute, dev_args).ok());
  ASSERT_TRUE(host::FsdpCopy(host_args).ok());
  EXPECT_EQ(host_out, Download<uint16_t>(dout, shard * ranks));

  // Reduce copy-in: bf16 gradients → fp32, padded with zeros (src == nullptr), scaled.
  void* drs = Upload(std::vector<float>(2 * shard, -1.0f));
  std::vector<float> host_rs(2 * shard, -1.0f);
  FsdpCopyArgs dev_in{DType::kBFloat16, DType::kFloat32, 0.25f, {}};
  FsdpCopyArgs host_in = dev_in;
  dev_in.segments = {{dg, drs, 1500}, {nullptr, static_cast<char*>(drs) + 1500 * 4, 500}};
  host_in.segments = {{gathered.data(), host_rs.data(), 1500},
                      {nullptr, host_rs.data() + 1500, 500}};
  ASSERT_TRUE(device().FsdpCopy(Lane::kCompute, dev_in).ok());
  ASSERT_TRUE(host::FsdpCopy(host_in).ok());
  EXPECT_EQ(host_rs, Download<float>(drs, 2 * shard));
}

TEST_F(KernelsTest, RawByteCopiesManySegments) {
  // More segments than one launch carries (1024), odd sizes and offsets: the byte path.
  const int64_t segments = 2500, len = 37;
  std::vector<uint8_t> src(segments * len);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  void* ds = Upload(src);
  void* dd = Zeros<uint8_t>(segments * len + 1);
  FsdpCopyArgs args{DType::kUInt8, DType::kUInt8, 1.0f, {}};
  std::vector<uint8_t> want(segments * len + 1, 0);
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t from = (segments - 1 - s) * len;  // reversed order
    args.segments.push_back(
        {static_cast<char*>(ds) + from, static_cast<char*>(dd) + 1 + s * len, len});
    std::memcpy(want.data() + 1 + s * len, src.data() + from, len);
  }
  ASSERT_TRUE(device().FsdpCopy(Lane::kCompute, args).ok());
  EXPECT_EQ(want, Download<uint8_t>(dd, want.size()));
}

TEST_F(KernelsTest, EltwiseMatchesTheHost) {
  const int64_t n = 10000;
  std::vector<float> x0 = FloatVector(n, 5, 4.0f), x1 = FloatVector(n, 6, 2.0f);
  void* d0 = Upload(x0);
  void* d1 = Upload(x1);
  void* dy = Alloc(n * 4);
  for (EltwiseOp op :
       {EltwiseOp::kScaleAdd, EltwiseOp::kMul, EltwiseOp::kSilu, EltwiseOp::kSiluMul}) {
    EltwiseArgs a{op, n, DType::kFloat32, d0, d1, dy, 0.75f, -1.5f};
    ASSERT_TRUE(device().Eltwise(Lane::kCompute, a).ok());
    std::vector<float> host(n);
    EltwiseArgs h{op, n, DType::kFloat32, x0.data(), x1.data(), host.data(), 0.75f, -1.5f};
    ASSERT_TRUE(host::Eltwise(h).ok());
    const std::vector<float> got = Download<float>(dy, n);
    if (op == EltwiseOp::kScaleAdd || op == EltwiseOp::kMul) {
      EXPECT_EQ(host, got) << static_cast<int>(op);  // single roundings: bit-exact
    } else {
      EXPECT_LE(MaxAbsDiff(host, got), 1e-5f * MaxAbs(host)) << static_cast<int>(op);
    }
  }
}

TEST_F(KernelsTest, RmsNormMatchesTheHost) {
  const int64_t rows = 33, cols = 4096;
  std::vector<uint16_t> x = Bf16Vector(rows * cols, 8, 3.0f), w = Bf16Vector(cols, 9);
  void* dx = Upload(x);
  void* dw = Upload(w);
  void* dy = Alloc(rows * cols * 2);
  ASSERT_TRUE(
      device()
          .RmsNorm(Lane::kCompute, NormArgs{rows, cols, DType::kBFloat16, dx, dw, dy, 1e-6f})
          .ok());
  std::vector<uint16_t> host(rows * cols);
  ASSERT_TRUE(
      host::RmsNorm(NormArgs{rows, cols, DType::kBFloat16, x.data(), w.data(), host.data(), 1e-6f})
          .ok());
  const std::vector<float> want = Widen(host), got = Widen(Download<uint16_t>(dy, rows * cols));
  // One bf16 ulp where the two sums round the statistic differently.
  EXPECT_LE(MaxAbsDiff(want, got), MaxAbs(want) * (1.0f / 128.0f));
}

TEST_F(KernelsTest, AdamWIsBitExactAgainstTheHostOverSteps) {
  for (DType grad_dtype : {DType::kFloat32, DType::kBFloat16}) {
    const std::vector<int64_t> sizes = {1, 1000, 65536 + 3};
    AdamWArgs dev_args, host_args;
    dev_args.grad_dtype = host_args.grad_dtype = grad_dtype;
    std::vector<std::vector<float>> p, m, v;
    std::vector<std::vector<char>> g;
    for (size_t t = 0; t < sizes.size(); ++t) {
      const int64_t n = sizes[t];
      p.push_back(FloatVector(n, 100 + t));
      m.emplace_back(n, 0.0f);
      v.emplace_back(n, 0.0f);
      std::vector<char> grad(n * DTypeBytes(grad_dtype));
      ASSERT_TRUE(host::Fill(FillArgs{grad.data(), grad_dtype, n, 200 + t, 0, 0.01f}).ok());
      g.push_back(grad);
      dev_args.tensors.push_back({Upload(p[t]), Upload(g[t]), Upload(m[t]), Upload(v[t]), n});
      host_args.tensors.push_back({p[t].data(), g[t].data(), m[t].data(), v[t].data(), n});
    }
    for (int64_t step = 1; step <= 3; ++step) {
      dev_args.step = host_args.step = step;
      ASSERT_TRUE(device().AdamW(Lane::kCompute, dev_args).ok());
      ASSERT_TRUE(host::AdamW(host_args).ok());
    }
    for (size_t t = 0; t < sizes.size(); ++t) {
      EXPECT_EQ(p[t], Download<float>(dev_args.tensors[t].param, sizes[t])) << t;
      EXPECT_EQ(m[t], Download<float>(dev_args.tensors[t].exp_avg, sizes[t])) << t;
      EXPECT_EQ(v[t], Download<float>(dev_args.tensors[t].exp_avg_sq, sizes[t])) << t;
    }
  }
}

struct GemmCase {
  int64_t m, n, k, batch;
  bool ta, tb;
  DType out;
  float beta;
};

TEST_F(KernelsTest, GemmsMatchTheHost) {
  const std::vector<GemmCase> cases = {
      {128, 256, 64, 1, false, false, DType::kBFloat16, 0.0f},
      {100, 72, 40, 1, false, true, DType::kBFloat16, 0.0f},  // forward: x · Wᵀ
      {64, 48, 200, 1, true, false, DType::kFloat32, 1.0f},   // weight grad, accumulated
      {33, 17, 24, 3, true, true, DType::kFloat32, 0.0f},     // batched, both transposed
  };
  for (const GemmCase& c : cases) {
    const int64_t na = c.batch * c.m * c.k, nb = c.batch * c.k * c.n, nc = c.batch * c.m * c.n;
    std::vector<uint16_t> a = Bf16Vector(na, 1), b = Bf16Vector(nb, 2);
    std::vector<char> out(nc * DTypeBytes(c.out));
    ASSERT_TRUE(host::Fill(FillArgs{out.data(), c.out, nc, 3, 0, 1.0f}).ok());
    void* da = Upload(a);
    void* db = Upload(b);
    void* dc = Upload(out);
    GemmArgs g{c.m,   c.n, c.k, c.batch, c.ta, c.tb,  DType::kBFloat16, DType::kBFloat16,
               c.out, da,  db,  dc,      1.0f, c.beta};
    ASSERT_TRUE(device().Gemm(Lane::kCompute, g).ok()) << c.m << "x" << c.n << "x" << c.k;
    GemmArgs h = g;
    h.a = a.data();
    h.b = b.data();
    h.out = out.data();
    ASSERT_TRUE(host::Gemm(h).ok());
    std::vector<float> want(nc), got(nc);
    const std::vector<char> dev = Download<char>(dc, out.size());
    for (int64_t i = 0; i < nc; ++i) {
      if (c.out == DType::kFloat32) {
        std::memcpy(&want[i], out.data() + 4 * i, 4);
        std::memcpy(&got[i], dev.data() + 4 * i, 4);
      } else {
        uint16_t w, d;
        std::memcpy(&w, out.data() + 2 * i, 2);
        std::memcpy(&d, dev.data() + 2 * i, 2);
        want[i] = Bf16BitsToFloat(w);
        got[i] = Bf16BitsToFloat(d);
      }
    }
    // fp32 accumulation in another order; a bf16 output is one rounding away.
    const float tol = (c.out == DType::kFloat32 ? 1e-4f : 1.0f / 128.0f) * MaxAbs(want);
    EXPECT_LE(MaxAbsDiff(want, got), tol) << c.m << "x" << c.n << "x" << c.k;
  }
}

}  // namespace
}  // namespace shardscope::backend::testing
