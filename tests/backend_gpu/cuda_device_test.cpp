// The CUDA device itself: allocator accounting against what the driver reports
// (cudaMemGetInfo), out of memory as a Status, lanes ordered by events, timing, host tasks,
// the synchronisation timeout, and the no-GPU / bad-local-rank answers.
#include "backend/cuda/cuda_device.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "gpu_test_util.h"

namespace shardscope::backend::testing {
namespace {

using DeviceTest = CudaDeviceTest;

int64_t FreeBytes() {
  size_t free_bytes = 0, total = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  return static_cast<int64_t>(free_bytes);
}

TEST_F(DeviceTest, ReservedMemoryIsWhatTheDriverLost) {
  Sync();
  const int64_t free_before = FreeBytes();
  const MemoryCounters before = device().memory();
  std::vector<DeviceBuffer> held;
  // Small pool (2 MiB segments), large pool (20 MiB segments), a large request of its own.
  for (int64_t bytes : {int64_t{1000}, int64_t{300} << 10, int64_t{3} << 20, int64_t{13} << 20,
                        int64_t{200} << 20}) {
    auto b = device().Allocate(bytes, MemCategory::kActivations, Lane::kCompute);
    ASSERT_TRUE(b.ok()) << b.status().message();
    held.push_back(*b);
  }
  const MemoryCounters during = device().memory();
  const int64_t reserved = during.reserved_bytes - before.reserved_bytes;
  EXPECT_EQ(during.allocated[static_cast<int>(MemCategory::kActivations)] -
                before.allocated[static_cast<int>(MemCategory::kActivations)],
            1000 + (300 << 10) + (3 << 20) + (13 << 20) + (int64_t{200} << 20));
  // The driver maps in 2 MiB pages: every segment is a multiple, so the loss is exact up to
  // what the runtime itself allocates on the side (a page or two).
  const int64_t lost = free_before - FreeBytes();
  EXPECT_GE(lost, reserved);
  EXPECT_LE(lost, reserved + (int64_t{4} << 20));
  // Freed blocks stay cached: reserved and the driver's figure do not move.
  for (const DeviceBuffer& b : held) device().Free(b);
  EXPECT_EQ(device().memory().reserved_bytes, during.reserved_bytes);
  EXPECT_EQ(device().memory().allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(FreeBytes(), free_before - lost);
}

TEST_F(DeviceTest, OutOfMemoryIsARuntimeErrorAndCounted) {
  const DeviceDescription d = device().Describe();
  auto b = device().Allocate(d.memory_bytes * 2, MemCategory::kTemporaries, Lane::kCompute);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kRuntime);
  EXPECT_NE(b.status().message().find("out of memory"), std::string::npos);
  EXPECT_EQ(device().memory().oom_count, 1);
  // The device is still usable afterwards.
  EXPECT_TRUE(device().Allocate(1 << 20, MemCategory::kTemporaries, Lane::kCompute).ok());
}

TEST_F(DeviceTest, EventsOrderLanesAndTimeThem) {
  void* buf = Zeros<float>(1024);
  auto start = device().Record(Lane::kAllGather);
  ASSERT_TRUE(start.ok());
  ASSERT_TRUE(device().Hold(Lane::kAllGather, HoldArgs{20'000'000, 4}).ok());  // 20 ms
  ASSERT_TRUE(
      device().Fill(Lane::kAllGather, FillArgs{buf, DType::kFloat32, 1024, 1, 0, 1.0f}).ok());
  auto held = device().Record(Lane::kAllGather);
  ASSERT_TRUE(held.ok());
  // The compute lane waits for the hold, then overwrites the fill: the order is visible.
  ASSERT_TRUE(device().Wait(Lane::kCompute, **held).ok());
  ASSERT_TRUE(device().Fill(Lane::kCompute, FillArgs{buf, DType::kFloat32, 1024, 2, 0, 1.0f}).ok());
  auto end = device().Record(Lane::kCompute);
  ASSERT_TRUE(end.ok());
  Sync();
  EXPECT_TRUE(device().Done(**end));
  auto ns = device().ElapsedNs(**start, **end);
  ASSERT_TRUE(ns.ok());
  EXPECT_GE(*ns, 19'000'000);
  EXPECT_LT(*ns, 1'000'000'000);
  const std::vector<float> got = Download<float>(buf, 1024);
  EXPECT_EQ(got[5], DeterministicValue(2, 5));
}

TEST_F(DeviceTest, HostTasksRunInLaneOrderAndMayCallCuda) {
  void* buf = Zeros<float>(256);
  std::vector<float> seen(256, -1.0f);
  std::atomic<bool> ran{false};
  ASSERT_TRUE(device().Fill(Lane::kCompute, FillArgs{buf, DType::kFloat32, 256, 7, 0, 1.0f}).ok());
  ASSERT_TRUE(device()
                  .HostTask(Lane::kCompute,
                            [&] {
                              // A synchronous copy from inside the task: CUDA calls are allowed.
                              if (cudaMemcpy(seen.data(), buf, 256 * sizeof(float),
                                             cudaMemcpyDeviceToHost) != cudaSuccess) {
                                return RuntimeError("cudaMemcpy in a host task");
                              }
                              ran = true;
                              return Status::Ok();
                            })
                  .ok());
  ASSERT_TRUE(device().Fill(Lane::kCompute, FillArgs{buf, DType::kFloat32, 256, 8, 0, 1.0f}).ok());
  Sync();
  EXPECT_TRUE(ran);
  EXPECT_EQ(seen[3], DeterministicValue(7, 3));  // after the first fill, before the second
  EXPECT_EQ(Download<float>(buf, 256)[3], DeterministicValue(8, 3));
  // A failing task fails Synchronize.
  ASSERT_TRUE(device().HostTask(Lane::kD2H, [] { return RuntimeError("task failed"); }).ok());
  Status s = device().Synchronize(std::chrono::seconds(10));
  EXPECT_EQ(s.code(), ErrorCode::kRuntime);
}

TEST_F(DeviceTest, SynchronizeTimesOutInsteadOfHanging) {
  ASSERT_TRUE(device().Hold(Lane::kReduceScatter, HoldArgs{500'000'000, 1}).ok());  // 0.5 s
  Status s = device().Synchronize(std::chrono::milliseconds(20));
  EXPECT_EQ(s.code(), ErrorCode::kRuntime);
  EXPECT_NE(s.message().find("reduce_scatter"), std::string::npos) << s.message();
  Sync();
}

TEST_F(DeviceTest, DescribesTheGpuAndItsLibraries) {
  const DeviceDescription d = device().Describe();
  EXPECT_EQ(d.kind, DeviceKind::kCuda);
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.sm_count, 0);
  for (const char* key : {"driver", "cuda", "cublaslt", "nccl"}) {
    EXPECT_EQ(d.versions.count(key), 1u) << key;
  }
}

TEST(CudaDeviceOptionsTest, NoGpuOrBadLocalRankIsARuntimeError) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    auto d = MakeCudaDevice(DeviceOptions{});
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), ErrorCode::kRuntime);
    EXPECT_NE(d.status().message().find("no CUDA device answers"), std::string::npos);
    return;
  }
  DeviceOptions o;
  o.local_rank = count;  // one past the last GPU
  auto d = MakeCudaDevice(o);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kRuntime);
}

}  // namespace
}  // namespace shardscope::backend::testing
