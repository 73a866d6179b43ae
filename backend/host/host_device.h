// The CPU device: every lane is a thread draining its own queue in order, so communication
// (an MPI collective on its lane's thread, an emulated hold) overlaps compute when the
// schedule lets it; kernels are host_kernels.h; memory is malloc'd segments under the caching
// allocator's rules (device.h), with DeviceOptions::memory_limit_bytes as the capacity.
//
// Contents:
//   HostDevice   the Device; MakeHostDevice (backends.h) makes one
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/device/device.h"

namespace shardscope::backend {

class HostDevice final : public Device {
 public:
  explicit HostDevice(const DeviceOptions& options);
  ~HostDevice() override;

  DeviceDescription Describe() const override;

  Result<std::shared_ptr<DeviceEvent>> Record(Lane lane) override;
  Status Wait(Lane lane, const DeviceEvent& event) override;
  bool Done(const DeviceEvent& event) override;
  Result<int64_t> ElapsedNs(const DeviceEvent& from, const DeviceEvent& to) override;
  Status Synchronize(std::chrono::nanoseconds timeout) override;
  Status HostTask(Lane lane, std::function<Status()> task) override;

  Status Gemm(Lane lane, const GemmArgs& args) override;
  Status AttentionForward(Lane lane, const AttentionArgs& args) override;
  Status AttentionBackward(Lane lane, const AttentionArgs& args) override;
  Status RmsNorm(Lane lane, const NormArgs& args) override;
  Status Eltwise(Lane lane, const EltwiseArgs& args) override;
  Status Cast(Lane lane, const CastArgs& args) override;
  Status FsdpCopy(Lane lane, const FsdpCopyArgs& args) override;
  Status AdamW(Lane lane, const AdamWArgs& args) override;
  Status Fill(Lane lane, const FillArgs& args) override;
  Status Memcpy(Lane lane, void* dst, const void* src, int64_t bytes) override;
  Status Memset(Lane lane, void* dst, int value, int64_t bytes) override;
  Status Hold(Lane lane, const HoldArgs& args) override;

 protected:
  void* RawAllocate(int64_t bytes, bool host) override;
  void RawFree(void* ptr, bool host) override;
  // Expandable segments as the CUDA allocator makes them with cuMemAddressReserve / cuMemMap:
  // an inaccessible mapping that reserves no memory, made readable and writable unit by unit.
  void* RawReserveAddress(int64_t bytes) override;
  bool RawMap(void* ptr, int64_t bytes) override;
  void RawUnmap(void* ptr, int64_t bytes) override;
  void RawReleaseAddress(void* ptr, int64_t bytes) override;

 private:
  struct LaneQueue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<Status()>> tasks;
    int64_t enqueued = 0, finished = 0;
    Status error;  // the first failure; the lane then skips its remaining tasks
    std::thread thread;
  };
  Status Enqueue(Lane lane, std::function<Status()> task);
  void LaneLoop(LaneQueue* q);

  DeviceOptions options_;
  std::vector<std::unique_ptr<LaneQueue>> lanes_;
  std::atomic<bool> stopping_{false};
  // Events complete under this lock so a lane waiting on one sleeps instead of spinning.
  std::mutex event_mu_;
  std::condition_variable event_cv_;
  std::chrono::steady_clock::time_point origin_;
};

}  // namespace shardscope::backend
