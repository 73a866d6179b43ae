// What the CUDA benchmarks share: one CUDA device for the process (or the reason there is
// none), buffers from its allocator filled with deterministic values, and the H200's dense
// bf16 peak the targets are stated against (shared/spec/cost-model.md).
//
// Contents:
//   kH200Bf16PeakFlops   989 TFLOP/s
//   BenchDevice          the device, or nullptr with Why() when no GPU answers
//   FilledBuffer         a filled device buffer (kept for the process)
//   TimeOnLane           GPU time of `iters` calls of a body, between two events
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <string>

#include "backend/backends.h"

namespace shardscope::backend::bench {

inline constexpr double kH200Bf16PeakFlops = 989e12;

inline std::string& NoDeviceReason() {
  static std::string why;
  return why;
}

inline Device* BenchDevice() {
  static std::unique_ptr<Device> device = [] {
    auto d = MakeCudaDevice(DeviceOptions{});
    if (!d.ok()) {
      NoDeviceReason() = d.status().message();
      return std::unique_ptr<Device>();
    }
    return std::move(*d);
  }();
  return device.get();
}

inline void* FilledBuffer(int64_t elements, DType dtype, uint64_t seed, float scale) {
  Device* d = BenchDevice();
  auto b = d->Allocate(elements * DTypeBytes(dtype), MemCategory::kTemporaries, Lane::kCompute);
  if (!b.ok()) return nullptr;
  if (!d->Fill(Lane::kCompute, FillArgs{b->data, dtype, elements, seed, 0, scale}).ok()) {
    return nullptr;
  }
  return b->data;
}

// Runs `body` `iters` times on the compute lane and returns the GPU seconds between events
// recorded around them (after one warm-up call), or a negative value on an error.
inline double TimeOnLane(int iters, const std::function<Status()>& body) {
  Device* d = BenchDevice();
  if (!body().ok()) return -1;
  auto start = d->Record(Lane::kCompute);
  for (int i = 0; i < iters; ++i) {
    if (!body().ok()) return -1;
  }
  auto end = d->Record(Lane::kCompute);
  if (!start.ok() || !end.ok() || !d->Synchronize(std::chrono::seconds(120)).ok()) return -1;
  auto ns = d->ElapsedNs(**start, **end);
  return ns.ok() ? static_cast<double>(*ns) * 1e-9 : -1;
}

}  // namespace shardscope::backend::bench
