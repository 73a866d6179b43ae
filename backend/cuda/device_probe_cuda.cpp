// Device probing through the CUDA runtime API and NCCL (plain C++, no kernels needed).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "backend/device_probe.h"

namespace shardscope::backend {

bool BuiltWithCuda() { return true; }

Result<BackendInfo> ProbeDevices() {
  BackendInfo info;
  cudaRuntimeGetVersion(&info.cuda_runtime_version);
  // Without a driver this returns an error (not zero devices): report it, do not crash.
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return RuntimeError(std::string("no CUDA device answers: cudaGetDeviceCount: ") +
                        cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
  }
  if (count == 0) return RuntimeError("no CUDA device answers: cudaGetDeviceCount returned 0");
  cudaDriverGetVersion(&info.cuda_driver_version);
  if (ncclGetVersion(&info.nccl_version) != ncclSuccess) info.nccl_version = 0;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    err = cudaGetDeviceProperties(&prop, i);
    if (err != cudaSuccess) {
      return RuntimeError("cudaGetDeviceProperties(" + std::to_string(i) +
                          "): " + cudaGetErrorString(err));
    }
    info.devices.push_back(DeviceInfo{i, prop.name, static_cast<int64_t>(prop.totalGlobalMem),
                                      prop.multiProcessorCount, prop.major, prop.minor});
  }
  return info;
}

}  // namespace shardscope::backend
