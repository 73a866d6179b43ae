// The device API of a build without nvcc: every query says so.
#include "backend/device_probe.h"

namespace shardscope::backend {

bool BuiltWithCuda() { return false; }

Result<BackendInfo> ProbeDevices() {
  return RuntimeError(
      "this shardscope was built without CUDA (nvcc was not found at configure time)");
}

}  // namespace shardscope::backend
