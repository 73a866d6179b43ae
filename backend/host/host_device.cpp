#include "backend/host/host_device.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <Eigen/Core>
#include <cstdlib>
#include <cstring>

#include "backend/backends.h"
#include "backend/host/host_kernels.h"

namespace shardscope::backend {
namespace {

constexpr int64_t kSegmentAlign = 512;  // the allocator's block granularity

struct HostEvent final : DeviceEvent {
  std::atomic<bool> done{false};
  int64_t ns = 0;  // since the device's origin, set before `done`
};

const HostEvent& AsHost(const DeviceEvent& e) { return static_cast<const HostEvent&>(e); }

}  // namespace

HostDevice::HostDevice(const DeviceOptions& options)
    : Device(options.memory_limit_bytes, options.allocator),
      options_(options),
      origin_(std::chrono::steady_clock::now()) {
  for (int i = 0; i < kNumLanes; ++i) {
    lanes_.push_back(std::make_unique<LaneQueue>());
    LaneQueue* q = lanes_.back().get();
    q->thread = std::thread([this, q] { LaneLoop(q); });
  }
}

HostDevice::~HostDevice() {
  stopping_ = true;
  {
    std::lock_guard<std::mutex> lock(event_mu_);
    event_cv_.notify_all();
  }
  for (auto& q : lanes_) {
    {
      std::lock_guard<std::mutex> lock(q->mu);
      q->cv.notify_all();
    }
    q->thread.join();
  }
  ReleaseAllMemory();
}

void HostDevice::LaneLoop(LaneQueue* q) {
  for (;;) {
    std::function<Status()> task;
    {
      std::unique_lock<std::mutex> lock(q->mu);
      q->cv.wait(lock, [&] { return stopping_ || !q->tasks.empty(); });
      if (q->tasks.empty()) return;  // stopping with nothing left
      task = std::move(q->tasks.front());
      q->tasks.pop_front();
    }
    // A failure is kept (Synchronize reports it) and the lane goes on, so events recorded
    // after it still complete and no waiter hangs; its buffers stay valid until freed.
    Status s = stopping_ ? Status::Ok() : task();
    std::lock_guard<std::mutex> lock(q->mu);
    if (!s.ok() && q->error.ok()) q->error = s;
    ++q->finished;
    q->cv.notify_all();
  }
}

Status HostDevice::Enqueue(Lane lane, std::function<Status()> task) {
  const int i = static_cast<int>(lane) - 1;
  if (i < 0 || i >= kNumLanes) return InvalidInput(fmt::format("lane {}", static_cast<int>(lane)));
  LaneQueue& q = *lanes_[i];
  std::lock_guard<std::mutex> lock(q.mu);
  q.tasks.push_back(std::move(task));
  ++q.enqueued;
  q.cv.notify_all();
  return Status::Ok();
}

DeviceDescription HostDevice::Describe() const {
  DeviceDescription d;
  d.kind = DeviceKind::kCpu;
  const unsigned threads = std::thread::hardware_concurrency();
  d.name = fmt::format("host ({} hardware threads)", threads);
  d.memory_bytes = options_.memory_limit_bytes;
  d.versions["eigen"] =
      fmt::format("{}.{}.{}", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION);
  return d;
}

Result<std::shared_ptr<DeviceEvent>> HostDevice::Record(Lane lane) {
  auto e = std::make_shared<HostEvent>();
  SS_RETURN_IF_ERROR(Enqueue(lane, [this, e] {
    e->ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                 origin_)
                .count();
    std::lock_guard<std::mutex> lock(event_mu_);
    e->done.store(true, std::memory_order_release);
    event_cv_.notify_all();
    return Status::Ok();
  }));
  return std::shared_ptr<DeviceEvent>(std::move(e));
}

Status HostDevice::Wait(Lane lane, const DeviceEvent& event) {
  const HostEvent* e = &AsHost(event);
  if (e->done.load(std::memory_order_acquire)) return Status::Ok();
  // The caller keeps the event alive until the waiting lane has passed it (the executor
  // holds every op's events for the whole step).
  return Enqueue(lane, [this, e] {
    std::unique_lock<std::mutex> lock(event_mu_);
    event_cv_.wait(lock, [&] { return stopping_ || e->done.load(std::memory_order_acquire); });
    return Status::Ok();
  });
}

bool HostDevice::Done(const DeviceEvent& event) {
  return AsHost(event).done.load(std::memory_order_acquire);
}

Result<int64_t> HostDevice::ElapsedNs(const DeviceEvent& from, const DeviceEvent& to) {
  if (!Done(from) || !Done(to)) return RuntimeError("elapsed time of an event not yet reached");
  return AsHost(to).ns - AsHost(from).ns;
}

Status HostDevice::Synchronize(std::chrono::nanoseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int i = 0; i < kNumLanes; ++i) {
    LaneQueue& q = *lanes_[i];
    std::unique_lock<std::mutex> lock(q.mu);
    const int64_t target = q.enqueued;
    if (!q.cv.wait_until(lock, deadline, [&] { return q.finished >= target; })) {
      return RuntimeError(fmt::format("lane {} still busy after {:.3f} s",
                                      LaneName(static_cast<Lane>(i + 1)),
                                      std::chrono::duration<double>(timeout).count()));
    }
  }
  for (auto& q : lanes_) {
    std::lock_guard<std::mutex> lock(q->mu);
    if (!q->error.ok()) return q->error;
  }
  return Status::Ok();
}

Status HostDevice::HostTask(Lane lane, std::function<Status()> task) {
  return Enqueue(lane, std::move(task));
}

Status HostDevice::Gemm(Lane lane, const GemmArgs& args) {
  return Enqueue(lane, [args] { return host::Gemm(args); });
}
Status HostDevice::AttentionForward(Lane lane, const AttentionArgs& args) {
  return Enqueue(lane, [args] { return host::AttentionForward(args); });
}
Status HostDevice::AttentionBackward(Lane lane, const AttentionArgs& args) {
  return Enqueue(lane, [args] { return host::AttentionBackward(args); });
}
Status HostDevice::RmsNorm(Lane lane, const NormArgs& args) {
  return Enqueue(lane, [args] { return host::RmsNorm(args); });
}
Status HostDevice::Eltwise(Lane lane, const EltwiseArgs& args) {
  return Enqueue(lane, [args] { return host::Eltwise(args); });
}
Status HostDevice::Cast(Lane lane, const CastArgs& args) {
  return Enqueue(lane, [args] { return host::Cast(args); });
}
Status HostDevice::FsdpCopy(Lane lane, const FsdpCopyArgs& args) {
  return Enqueue(lane, [args] { return host::FsdpCopy(args); });
}
Status HostDevice::AdamW(Lane lane, const AdamWArgs& args) {
  return Enqueue(lane, [args] { return host::AdamW(args); });
}
Status HostDevice::Fill(Lane lane, const FillArgs& args) {
  return Enqueue(lane, [args] { return host::Fill(args); });
}
Status HostDevice::Memcpy(Lane lane, void* dst, const void* src, int64_t bytes) {
  return Enqueue(lane, [=] {
    std::memmove(dst, src, static_cast<size_t>(bytes));
    return Status::Ok();
  });
}
Status HostDevice::Memset(Lane lane, void* dst, int value, int64_t bytes) {
  return Enqueue(lane, [=] {
    std::memset(dst, value, static_cast<size_t>(bytes));
    return Status::Ok();
  });
}
Status HostDevice::Hold(Lane lane, const HoldArgs& args) {
  const int64_t ns = args.ns;
  return Enqueue(lane, [ns] {
    std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
    return Status::Ok();
  });
}

void* HostDevice::RawAllocate(int64_t bytes, bool /*host*/) {
  const int64_t size = (bytes + kSegmentAlign - 1) / kSegmentAlign * kSegmentAlign;
  return std::aligned_alloc(kSegmentAlign, static_cast<size_t>(size));
}

void HostDevice::RawFree(void* ptr, bool /*host*/) { std::free(ptr); }

void* HostDevice::RawReserveAddress(int64_t bytes) {
  void* p = mmap(nullptr, static_cast<size_t>(bytes), PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

bool HostDevice::RawMap(void* ptr, int64_t bytes) {
  return mprotect(ptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE) == 0;
}

void HostDevice::RawUnmap(void* ptr, int64_t bytes) {
  // The pages go back to the system and the range faults again if touched, as an unmapped
  // range of a GPU's segment would.
  madvise(ptr, static_cast<size_t>(bytes), MADV_DONTNEED);
  mprotect(ptr, static_cast<size_t>(bytes), PROT_NONE);
}

void HostDevice::RawReleaseAddress(void* ptr, int64_t bytes) {
  munmap(ptr, static_cast<size_t>(bytes));
}

Result<std::unique_ptr<Device>> MakeHostDevice(const DeviceOptions& options) {
  return std::unique_ptr<Device>(std::make_unique<HostDevice>(options));
}

}  // namespace shardscope::backend
