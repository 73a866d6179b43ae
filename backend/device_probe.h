// Which accelerators this process can use, asked of the CUDA runtime and NCCL.
//
// Contents:
//   DeviceInfo      one visible GPU
//   BackendInfo     runtime, driver and NCCL versions plus the devices
//   ProbeDevices    asks the runtime; an error (never a crash) when no driver or device answers
//
// Without a driver cudaGetDeviceCount returns an error rather than zero devices; both cases
// come back as a RuntimeError naming the CUDA error, so GPU tests can skip cleanly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace shardscope::backend {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int64_t total_memory_bytes = 0;
  int sm_count = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
};

struct BackendInfo {
  int cuda_runtime_version = 0;  // e.g. 13000
  int cuda_driver_version = 0;
  int nccl_version = 0;  // e.g. 22805
  std::vector<DeviceInfo> devices;
};

// True when this build has the CUDA/NCCL backend compiled in.
bool BuiltWithCuda();

// Queries the CUDA runtime and NCCL. RuntimeError when built without CUDA, when no driver is
// loaded, or when no device is visible.
Result<BackendInfo> ProbeDevices();

}  // namespace shardscope::backend
