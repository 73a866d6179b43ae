// The CUDA device: one non-blocking stream per lane (the communication lanes at the highest
// stream priority, as FSDP2 creates its all-gather and reduce-scatter streams), CUDA events
// for dependencies and timing, our kernels (backend/cuda/kernels/) and cuBLASLt GEMMs
// (backend/cuda/gemm/), memory from cudaMalloc / cudaHostAlloc segments under the caching
// allocator's policy that Device (backend/device/device.h) applies.
//
// Contents:
//   CudaDevice   the Device; MakeCudaDevice (backends.h) makes one
//
// Host tasks run on a worker thread per lane: the lane's stream is gated by a one-thread
// kernel that waits on a mapped host counter, the worker waits for the work before the gate,
// runs the task and opens the gate, so a task may call CUDA itself (a stream callback could
// not) and later work of the lane waits for it.
// Workspaces the schedule does not list (cuBLASLt's, attention backward's dQ accumulator)
// come from the same allocator as temporaries, as PyTorch's do.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "backend/cuda/gemm/lt_gemm.h"
#include "backend/device/device.h"

namespace shardscope::backend::cuda {

class CudaDevice final : public Device {
 public:
  // GPU `ordinal` (already checked to exist), capacity_bytes as Device's.
  static Result<std::unique_ptr<CudaDevice>> Create(int ordinal, int64_t capacity_bytes);
  ~CudaDevice() override;

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

  // The stream of `lane` (NCCL communicators enqueue on it).
  cudaStream_t stream(Lane lane) const { return streams_[Index(lane)]; }
  int ordinal() const { return ordinal_; }
  // Makes this device current for the calling thread.
  Status Bind() const;

 protected:
  void* RawAllocate(int64_t bytes, bool host) override;
  void RawFree(void* ptr, bool host) override;

 private:
  struct HostWorker {
    struct Item {
      cudaEvent_t before = nullptr;  // the lane's work ahead of the task
      uint32_t ticket = 0;
      std::function<Status()> task;
    };
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Item> items;
    uint32_t issued = 0;
    std::thread thread;
  };

  CudaDevice(int ordinal, int64_t capacity_bytes) : Device(capacity_bytes), ordinal_(ordinal) {}
  Status Init();
  static int Index(Lane lane) { return static_cast<int>(lane) - 1; }
  Status CheckLane(Lane lane) const;
  // cuBLASLt's workspace for `lane`, allocated on first use and kept.
  Result<void*> GemmWorkspace(Lane lane);
  void WorkerLoop(int lane);
  void RecordTaskError(const Status& s);

  int ordinal_;
  cudaDeviceProp prop_{};
  std::array<cudaStream_t, kNumLanes> streams_{};
  std::unique_ptr<LtGemm> lt_;
  std::mutex workspace_mu_;
  std::array<DeviceBuffer, kNumLanes> gemm_workspace_{};
  // Host tasks: gate counters in mapped pinned memory, one per lane.
  uint32_t* gates_ = nullptr;
  uint32_t* gates_device_ = nullptr;
  std::array<std::unique_ptr<HostWorker>, kNumLanes> workers_{};
  std::atomic<bool> stopping_{false};
  std::mutex task_error_mu_;
  Status task_error_;
};

}  // namespace shardscope::backend::cuda
