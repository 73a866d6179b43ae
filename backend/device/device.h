// The device a rank executes its schedule on: memory under PyTorch's caching-allocator rules,
// one in-order queue per lane, events, and the kernels a Work needs, each on real buffers at
// the schedule's shapes. Two implementations: the host (backend/host/host_device.h: Eigen
// GEMMs, loops, a thread per lane) and CUDA (backend/cuda/: a stream per lane, cuBLASLt,
// cuDNN, own kernels); the executor (backend/exec/) drives either the same way.
//
// Contents:
//   DeviceKind, DeviceKindName   cpu | cuda
//   DeviceDescription            name, memory, SMs and library versions (trace metadata)
//   DeviceBuffer                 one allocation: pointer, size, category, stream
//   MemoryCounters               allocated / reserved bytes per category, peaks, OOMs
//   DeviceEvent                  an opaque marker recorded on a lane
//   Device                       the abstract device (memory in the base, the rest virtual)
//   DeviceOptions                what picks and limits a device (local rank, memory limit)
//
// Memory. Device::Allocate and Free apply the caching allocator's policy of the simulator
// (sim/engine/caching_allocator.h: rounding, small / large pools per stream, best fit,
// splitting, coalescing, release-and-retry) to real segments that the implementation
// supplies through RawAllocate / RawFree (malloc on the host, cudaMalloc on a GPU). A block
// is cached per stream = the lane that allocated it. A block freed by another lane than the
// one that will reuse it may still be read there: Free takes the event after which it is
// safe (PyTorch's record_stream) and returns the block to the cache once the event is done.
// allocated bytes are the requested sizes (exactly the schedule's), reserved the segments.
// With expandable segments (DeviceOptions::allocator) a lane's segment is an address range
// that the allocator maps memory into, unit by unit, through RawReserveAddress / RawMap; the
// host device has them (mmap), the CUDA device not yet.
//
// Lanes. Every Lane of core/schedule/schedule.h is one in-order queue; queues run
// concurrently. Kernel calls and HostTask enqueue and return at once (errors of the work
// itself surface at Synchronize or through the Status of a later call); Record / Wait order
// lanes against each other. Calls come from one issuing thread (the executor's), except
// HostTask bodies, which run in lane order on the device's behalf.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "backend/device/kernel_args.h"
#include "core/schedule/schedule.h"
#include "core/timeline/memory_series.h"
#include "core/util/status.h"
#include "sim/engine/caching_allocator.h"

namespace shardscope::backend {

enum class DeviceKind { kCpu, kCuda };
std::string_view DeviceKindName(DeviceKind kind);  // "cpu" | "cuda"

struct DeviceDescription {
  DeviceKind kind = DeviceKind::kCpu;
  std::string name;  // "NVIDIA H200", "host (16 threads)"
  int index = 0;     // CUDA ordinal; 0 on the host
  int64_t memory_bytes = 0;
  int sm_count = 0;  // 0 on the host
  // Library and driver versions as trace metadata names them: "driver", "cuda", "cudnn",
  // "cublas", "nccl", "eigen", ... (what this device links; the communicator adds its own).
  std::map<std::string, std::string> versions;
};

struct DeviceBuffer {
  void* data = nullptr;
  int64_t bytes = 0;  // as requested (the block behind it is rounded up)
  MemCategory category = MemCategory::kTemporaries;
  Lane stream = Lane::kCompute;
  bool host = false;  // pinned host memory (offload), not counted in the device's figures
  int handle = -1;    // the allocator's block
};

struct MemoryCounters {
  CategoryBytes allocated{};  // requested bytes of live device buffers, per category
  CategoryBytes reserved{};   // live segments, by the category of the request that made each
  int64_t allocated_bytes = 0;
  int64_t reserved_bytes = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t host_allocated_bytes = 0;  // pinned host buffers
  int segments = 0;
  int oom_count = 0;  // allocations refused
};

class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
};

struct DeviceOptions {
  int local_rank = 0;              // which GPU (the launcher's local rank)
  int64_t memory_limit_bytes = 0;  // usable bytes; <= 0: what the device has
  int host_threads = 0;            // host device: threads per GEMM (0: hardware concurrency)
  // The caching allocator's settings for device memory (the scenario's, through
  // sim::StepContext::allocator); pinned host memory never uses expandable segments.
  sim::AllocatorConfig allocator;
};

class Device {
 public:
  // capacity_bytes: what the allocator may reserve (<= 0: unlimited, RawAllocate decides);
  // `allocator`: its settings for device memory.
  explicit Device(int64_t capacity_bytes, sim::AllocatorConfig allocator = {});
  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  virtual DeviceDescription Describe() const = 0;

  // ----- Memory (the caching allocator's policy, on RawAllocate's segments) -----
  // RuntimeError "out of memory" (with the counters in the message) when no segment can be
  // had even after waiting for pending frees and releasing every free cached segment.
  Result<DeviceBuffer> Allocate(int64_t bytes, MemCategory category, Lane stream,
                                bool host = false);
  // `ready` (may be null): the block stays in use until that event is done.
  void Free(const DeviceBuffer& buffer, std::shared_ptr<DeviceEvent> ready = nullptr);
  MemoryCounters memory() const;

  // ----- Lanes and events -----
  // Marks the point the lane has reached; Done once everything enqueued before it ran.
  virtual Result<std::shared_ptr<DeviceEvent>> Record(Lane lane) = 0;
  // Work enqueued on `lane` after this call starts only once `event` is done.
  virtual Status Wait(Lane lane, const DeviceEvent& event) = 0;
  virtual bool Done(const DeviceEvent& event) = 0;
  // Nanoseconds between two done events of this device (either lane; may be negative).
  virtual Result<int64_t> ElapsedNs(const DeviceEvent& from, const DeviceEvent& to) = 0;
  // Blocks until every lane drained; RuntimeError on the first failed work, or when
  // `timeout` passes first (the lanes keep their work: the caller decides what is stuck).
  virtual Status Synchronize(std::chrono::nanoseconds timeout) = 0;
  // Runs `task` on the host in lane order: the lane waits for it (a CPU collective, a check).
  // A task's error fails the lane: later Synchronize returns it.
  virtual Status HostTask(Lane lane, std::function<Status()> task) = 0;

  // ----- Kernels (enqueued on `lane`) -----
  virtual Status Gemm(Lane lane, const GemmArgs& args) = 0;
  virtual Status AttentionForward(Lane lane, const AttentionArgs& args) = 0;
  virtual Status AttentionBackward(Lane lane, const AttentionArgs& args) = 0;
  virtual Status RmsNorm(Lane lane, const NormArgs& args) = 0;
  virtual Status Eltwise(Lane lane, const EltwiseArgs& args) = 0;
  virtual Status Cast(Lane lane, const CastArgs& args) = 0;
  virtual Status FsdpCopy(Lane lane, const FsdpCopyArgs& args) = 0;
  virtual Status AdamW(Lane lane, const AdamWArgs& args) = 0;
  virtual Status Fill(Lane lane, const FillArgs& args) = 0;
  // Copies bytes between any two buffers of this device (device or pinned host: h2d / d2h).
  virtual Status Memcpy(Lane lane, void* dst, const void* src, int64_t bytes) = 0;
  virtual Status Memset(Lane lane, void* dst, int value, int64_t bytes) = 0;
  virtual Status Hold(Lane lane, const HoldArgs& args) = 0;

 protected:
  // A segment of `bytes`: device memory, or pinned host memory with `host`. nullptr when the
  // device has none left (the allocator then releases cached segments and retries).
  virtual void* RawAllocate(int64_t bytes, bool host) = 0;
  virtual void RawFree(void* ptr, bool host) = 0;
  // Expandable segments: an address range of `bytes` with no memory behind it, then memory
  // mapped into and out of whole units of it. nullptr / false where the device cannot.
  virtual void* RawReserveAddress(int64_t /*bytes*/) { return nullptr; }
  virtual bool RawMap(void* /*ptr*/, int64_t /*bytes*/) { return false; }
  virtual void RawUnmap(void* /*ptr*/, int64_t /*bytes*/) {}
  virtual void RawReleaseAddress(void* /*ptr*/, int64_t /*bytes*/) {}
  // Subclasses call this first in their destructor: it returns every segment through
  // RawFree while the subclass still exists.
  void ReleaseAllMemory();

 private:
  struct Pool;
  void ProcessPendingFrees(bool wait_all);
  void FreeNow(const DeviceBuffer& buffer);
  mutable std::mutex mu_;
  std::unique_ptr<Pool> device_pool_;
  std::unique_ptr<Pool> host_pool_;
  struct PendingFree {
    DeviceBuffer buffer;
    std::shared_ptr<DeviceEvent> ready;
  };
  std::vector<PendingFree> pending_;
  MemoryCounters counters_;
};

}  // namespace shardscope::backend
