#include "backend/device_probe.h"

#include <gtest/gtest.h>

namespace shardscope::backend {
namespace {

// Skips (does not fail) where no driver or device answers, as on CI.
TEST(DeviceProbeGpuTest, ReportsDevicesWhenPresent) {
  auto info = ProbeDevices();
  if (!info.ok()) {
    EXPECT_EQ(info.status().code(), ErrorCode::kRuntime);
    EXPECT_FALSE(info.status().message().empty());
    GTEST_SKIP() << info.status().message();
  }
  ASSERT_FALSE(info->devices.empty());
  EXPECT_GT(info->devices[0].total_memory_bytes, 0);
  EXPECT_GT(info->devices[0].sm_count, 0);
  EXPECT_GE(info->cuda_runtime_version, 12000);
  EXPECT_GT(info->nccl_version, 0);
}

}  // namespace
}  // namespace shardscope::backend
