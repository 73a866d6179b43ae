// The host device: the caching allocator's rules on real segments, deferred frees, lanes that
// run concurrently and in order, and kernels against direct computations.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/backends.h"
#include "backend/device/dtype_access.h"
#include "sim/engine/caching_allocator.h"

namespace shardscope::backend {
namespace {

constexpr auto kTimeout = std::chrono::seconds(30);

std::unique_ptr<Device> Host(int64_t limit = 0) {
  DeviceOptions o;
  o.memory_limit_bytes = limit;
  return MakeHostDevice(o).value();
}

TEST(HostDeviceTest, AllocatorFollowsTheCachingPolicyOnRealSegments) {
  auto dev = Host();
  DeviceBuffer a = dev->Allocate(1000, MemCategory::kActivations, Lane::kCompute).value();
  ASSERT_NE(a.data, nullptr);
  std::memset(a.data, 1, 1000);  // real memory
  MemoryCounters m = dev->memory();
  EXPECT_EQ(m.allocated_bytes, 1000);
  EXPECT_EQ(m.allocated[static_cast<int>(MemCategory::kActivations)], 1000);
  EXPECT_EQ(m.reserved_bytes, sim::kAllocatorSmallBufferBytes);  // one small-pool segment
  EXPECT_EQ(m.reserved[static_cast<int>(MemCategory::kActivations)], m.reserved_bytes);
  DeviceBuffer b = dev->Allocate(3000, MemCategory::kTemporaries, Lane::kCompute).value();
  EXPECT_EQ(static_cast<char*>(b.data) - static_cast<char*>(a.data), 1024)
      << "split after 2 blocks of 512";
  dev->Free(a);
  DeviceBuffer c = dev->Allocate(900, MemCategory::kActivations, Lane::kCompute).value();
  EXPECT_EQ(c.data, a.data) << "the freed block is reused by the same stream";
  DeviceBuffer d = dev->Allocate(900, MemCategory::kActivations, Lane::kAllGather).value();
  EXPECT_NE(d.data, a.data) << "another stream gets its own segment";
  EXPECT_EQ(dev->memory().reserved_bytes, 2 * sim::kAllocatorSmallBufferBytes);
  dev->Free(b);
  dev->Free(c);
  dev->Free(d);
  EXPECT_EQ(dev->memory().allocated_bytes, 0);
}

TEST(HostDeviceTest, ALimitRefusesSegmentsAfterReleasingCachedOnes) {
  auto dev = Host(int64_t{40} << 20);
  DeviceBuffer a =
      dev->Allocate(int64_t{12} << 20, MemCategory::kActivations, Lane::kCompute).value();
  dev->Free(a);  // cached: 12 MiB segment, free
  // 30 MiB does not fit beside the cached 12 MiB: released, then it fits.
  Result<DeviceBuffer> b =
      dev->Allocate(int64_t{30} << 20, MemCategory::kActivations, Lane::kCompute);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(dev->memory().reserved_bytes, int64_t{30} << 20);
  Result<DeviceBuffer> c =
      dev->Allocate(int64_t{20} << 20, MemCategory::kTemporaries, Lane::kCompute);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kRuntime);
  EXPECT_NE(c.status().message().find("out of memory"), std::string::npos);
  // What the allocator asked for, and why more than the request (40 MiB limit, 30 reserved).
  EXPECT_NE(c.status().message().find("a new segment of 20.0 MiB (the request rounded up to 2 "
                                      "MiB) would pass the limit (31457280 reserved of 41943040 "
                                      "usable"),
            std::string::npos)
      << c.status().message();
  Result<DeviceBuffer> small =
      dev->Allocate(int64_t{9} << 20, MemCategory::kTemporaries, Lane::kCompute);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("a new segment of 20.0 MiB (requests of 1 to 10 MiB "
                                          "take 20 MiB segments)"),
            std::string::npos)
      << small.status().message();
  EXPECT_EQ(dev->memory().oom_count, 2);
  dev->Free(b.value());
}

// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True on the host: a lane's segment is one address
// range, mapped in 20 MiB units as requests need, the blocks laid out as the model lays them.
TEST(HostDeviceTest, ExpandableSegmentsMapUnitsOfOneRangePerLane) {
  DeviceOptions o;
  o.memory_limit_bytes = int64_t{100} << 20;
  o.allocator.expandable_segments = true;
  o.allocator.address_space_bytes = int64_t{1} << 30;
  auto dev = MakeHostDevice(o).value();
  const int64_t mib = int64_t{1} << 20;
  DeviceBuffer a = dev->Allocate(30 * mib, MemCategory::kActivations, Lane::kCompute).value();
  std::memset(a.data, 1, static_cast<size_t>(30 * mib));  // mapped memory, writable
  EXPECT_EQ(dev->memory().reserved_bytes, 40 * mib);
  DeviceBuffer b = dev->Allocate(15 * mib, MemCategory::kTemporaries, Lane::kCompute).value();
  EXPECT_EQ(static_cast<char*>(b.data) - static_cast<char*>(a.data), 30 * mib)
      << "the new unit joins the free 10 MiB after a";
  std::memset(b.data, 2, static_cast<size_t>(15 * mib));
  MemoryCounters m = dev->memory();
  EXPECT_EQ(m.reserved_bytes, 60 * mib);
  EXPECT_EQ(m.reserved[static_cast<int>(MemCategory::kActivations)], 40 * mib);
  EXPECT_EQ(m.reserved[static_cast<int>(MemCategory::kTemporaries)], 20 * mib);
  EXPECT_EQ(m.segments, 1);
  // Another lane's range; at the 100 MiB limit the compute lane's free units are unmapped.
  dev->Free(a);
  DeviceBuffer c = dev->Allocate(50 * mib, MemCategory::kActivations, Lane::kAllGather).value();
  std::memset(c.data, 3, static_cast<size_t>(50 * mib));
  // 60 + 60 > 100: the whole unit inside a's free 30 MiB is unmapped, its last 10 MiB stay.
  EXPECT_EQ(dev->memory().reserved_bytes, 100 * mib);
  EXPECT_EQ(dev->memory().reserved[static_cast<int>(MemCategory::kActivations)], 80 * mib);
  EXPECT_EQ(static_cast<unsigned char*>(b.data)[0], 2) << "b's memory kept";
  Result<DeviceBuffer> d = dev->Allocate(40 * mib, MemCategory::kActivations, Lane::kAllGather);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("mapping more of the lane's expandable segment (in 20 MiB "
                                      "units) failed: 41943040 bytes more would pass the limit"),
            std::string::npos)
      << d.status().message();
  dev->Free(b);
  dev->Free(c);
  EXPECT_EQ(dev->memory().allocated_bytes, 0);
}

TEST(HostDeviceTest, AFreeWithAPendingEventKeepsTheBlockUntilItIsDone) {
  auto dev = Host();
  DeviceBuffer a = dev->Allocate(4096, MemCategory::kActivations, Lane::kCompute).value();
  ASSERT_TRUE(dev->Hold(Lane::kAllGather, HoldArgs{50'000'000, 1}).ok());  // 50 ms
  auto ready = dev->Record(Lane::kAllGather).value();
  dev->Free(a, ready);
  EXPECT_EQ(dev->memory().allocated_bytes, 0) << "the schedule's free counts at once";
  DeviceBuffer b = dev->Allocate(4096, MemCategory::kActivations, Lane::kCompute).value();
  EXPECT_NE(b.data, a.data) << "still in use by the other lane";
  ASSERT_TRUE(dev->Synchronize(kTimeout).ok());
  DeviceBuffer c = dev->Allocate(4096, MemCategory::kActivations, Lane::kCompute).value();
  EXPECT_EQ(c.data, a.data) << "back in the cache once the event is done";
  dev->Free(b);
  dev->Free(c);
}

TEST(HostDeviceTest, LanesRunConcurrentlyAndInOrder) {
  auto dev = Host();
  std::atomic<int> step{0};
  std::vector<int> seen;
  // The all-gather lane holds 100 ms while the compute lane runs its tasks in order.
  ASSERT_TRUE(dev->Hold(Lane::kAllGather, HoldArgs{100'000'000, 1}).ok());
  auto ag_done = dev->Record(Lane::kAllGather).value();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(dev->HostTask(Lane::kCompute,
                              [&, i] {
                                seen.push_back(i);
                                ++step;
                                return Status::Ok();
                              })
                    .ok());
  }
  auto compute_done = dev->Record(Lane::kCompute).value();
  ASSERT_TRUE(dev->Wait(Lane::kCompute, *ag_done).ok());
  auto after_wait = dev->Record(Lane::kCompute).value();
  ASSERT_TRUE(dev->Synchronize(kTimeout).ok());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
  // The compute tasks finished long before the hold; the wait did not.
  EXPECT_GT(dev->ElapsedNs(*compute_done, *ag_done).value(), 50'000'000)
      << "the compute lane ran beside the hold, not after it";
  EXPECT_GE(dev->ElapsedNs(*ag_done, *after_wait).value(), 0);
}

TEST(HostDeviceTest, AFailedTaskSurfacesAtSynchronize) {
  auto dev = Host();
  ASSERT_TRUE(dev->HostTask(Lane::kP2P, [] { return RuntimeError("peer 3 died"); }).ok());
  const Status s = dev->Synchronize(kTimeout);
  EXPECT_EQ(s.code(), ErrorCode::kRuntime);
  EXPECT_NE(s.message().find("peer 3 died"), std::string::npos);
}

TEST(HostDeviceTest, GemmAndCastsAgainstDirectComputation) {
  auto dev = Host();
  const int64_t m = 5, k = 7, n = 3;
  std::vector<float> a(m * k), b(k * n), out(m * n), bt(n * k);
  for (int64_t i = 0; i < m * k; ++i) a[i] = 0.25f * static_cast<float>(i % 9) - 1;
  for (int64_t i = 0; i < k * n; ++i) b[i] = 0.5f * static_cast<float>(i % 5) - 1;
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) bt[c * k + r] = b[r * n + c];
  GemmArgs g;
  g.m = m, g.n = n, g.k = k;
  g.a_dtype = g.b_dtype = g.out_dtype = DType::kFloat32;
  g.a = a.data(), g.b = b.data(), g.out = out.data();
  ASSERT_TRUE(dev->Gemm(Lane::kCompute, g).ok());
  std::vector<float> out_t(m * n);
  GemmArgs gt = g;
  gt.trans_b = true, gt.b = bt.data(), gt.out = out_t.data();
  ASSERT_TRUE(dev->Gemm(Lane::kCompute, gt).ok());
  ASSERT_TRUE(dev->Synchronize(kTimeout).ok());
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double want = 0;
      for (int64_t i = 0; i < k; ++i) want += a[r * k + i] * b[i * n + c];
      EXPECT_NEAR(out[r * n + c], want, 1e-5);
      EXPECT_NEAR(out_t[r * n + c], want, 1e-5);
    }
  }
  // float → bfloat16 rounds to nearest even: 1 + 2^-8 is a tie and goes to 1.
  float x[2] = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256};
  uint16_t y[2];
  ASSERT_TRUE(
      dev->Cast(Lane::kCompute, CastArgs{2, DType::kFloat32, DType::kBFloat16, x, y, 1.0f}).ok());
  ASSERT_TRUE(dev->Synchronize(kTimeout).ok());
  EXPECT_EQ(Bf16BitsToFloat(y[0]), 1.0f);
  EXPECT_EQ(Bf16BitsToFloat(y[1]), 1.0f + 4.0f / 256);
}

TEST(HostDeviceTest, AccumulatingCopyAddsInFloatAndRoundsOnce) {
  // dst = cast(dst + scale · src): the gradient accumulator's `+=` (fp32 math, one rounding
  // to dst's dtype); a segment without src leaves dst alone.
  auto dev = Host();
  const uint16_t g[2] = {FloatToBf16Bits(0.5f), FloatToBf16Bits(-3.0f)};
  float acc[2] = {1.0f, 0x1p-30f};
  uint16_t narrow[2] = {FloatToBf16Bits(1.0f), FloatToBf16Bits(2.0f)};
  FsdpCopyArgs a;
  a.src_dtype = DType::kBFloat16;
  a.dst_dtype = DType::kFloat32;
  a.accumulate = true;
  a.segments = {{g, acc, 2}};
  ASSERT_TRUE(dev->FsdpCopy(Lane::kCompute, a).ok());
  FsdpCopyArgs to_bf16 = a;
  to_bf16.dst_dtype = DType::kBFloat16;
  to_bf16.scale = 1.0f / 512;  // 1 + 2^-10 is below half a bfloat16 step: rounds back to 1
  to_bf16.segments = {{g, narrow, 1}, {nullptr, narrow + 1, 1}};
  ASSERT_TRUE(dev->FsdpCopy(Lane::kCompute, to_bf16).ok());
  ASSERT_TRUE(dev->Synchronize(kTimeout).ok());
  EXPECT_EQ(acc[0], 1.5f);
  EXPECT_EQ(acc[1], -3.0f);  // 2^-30 is far below float32's step at 3: rounded away
  EXPECT_EQ(Bf16BitsToFloat(narrow[0]), 1.0f);
  EXPECT_EQ(Bf16BitsToFloat(narrow[1]), 2.0f);
}

TEST(HostDeviceTest, AttentionBackwardMatchesFiniteDifferences) {
  auto dev = Host();
  AttentionArgs a;
  a.batch = 1, a.heads = 2, a.kv_heads = 1, a.q_seq = 3, a.kv_seq = 4, a.head_dim = 2,
  a.v_head_dim = 2;
  a.dtype = DType::kFloat32;
  std::vector<float> q(12), k(8), v(8), o(12), lse(6), dout(12), dq(12), dk(8), dv(8);
  for (size_t i = 0; i < q.size(); ++i) q[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  for (size_t i = 0; i < k.size(); ++i) k[i] = 0.2f * static_cast<float>(i % 5) - 0.4f;
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.15f * static_cast<float>(i % 3) + 0.1f;
  for (size_t i = 0; i < dout.size(); ++i) dout[i] = 0.05f * static_cast<float>(i % 4) - 0.1f;
  a.q = q.data(), a.k = k.data(), a.v = v.data(), a.out = o.data(), a.lse = lse.data();
  a.d_out = dout.data(), a.d_q = dq.data(), a.d_k = dk.data(), a.d_v = dv.data();
  auto loss = [&](std::vector<float>& qq) {
    AttentionArgs f = a;
    std::vector<float> oo(12), ll(6);
    f.q = qq.data(), f.out = oo.data(), f.lse = ll.data();
    EXPECT_TRUE(dev->AttentionForward(Lane::kCompute, f).ok());
    EXPECT_TRUE(dev->Synchronize(kTimeout).ok());
    double s = 0;
    for (size_t i = 0; i < oo.size(); ++i) s += oo[i] * dout[i];
    return s;
  };
  ASSERT_TRUE(dev->AttentionForward(Lane::kCompute, a).ok());
  ASSERT_TRUE(dev->AttentionBackward(Lane::kCompute, a).ok());
  ASSERT_TRUE(dev->Synchronize(kTimeout).ok());
  for (size_t i = 0; i < q.size(); ++i) {
    std::vector<float> plus = q, minus = q;
    plus[i] += 1e-2f;
    minus[i] -= 1e-2f;
    EXPECT_NEAR(dq[i], (loss(plus) - loss(minus)) / 2e-2, 2e-3) << "dq[" << i << "]";
  }
}

}  // namespace
}  // namespace shardscope::backend
