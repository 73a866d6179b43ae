#include "backend/device/device.h"

#include <fmt/format.h>

#include <map>
#include <thread>
#include <unordered_map>
#include <utility>

#include "sim/engine/caching_allocator.h"

namespace shardscope::backend {

std::string_view DeviceKindName(DeviceKind kind) {
  return kind == DeviceKind::kCuda ? "cuda" : "cpu";
}

// The simulator's allocator policy over segments this device's RawAllocate supplies.
struct Device::Pool : sim::SegmentBacking {
  Pool(Device* device, bool host, int64_t limit, sim::AllocatorConfig config)
      : device(device), host(host), limit(limit), model(0, config) {
    model.set_backing(this);
  }
  bool Reserve(int segment, int64_t bytes) override {
    if (limit > 0 && reserved + bytes > limit) return false;
    void* p = device->RawAllocate(bytes, host);
    if (p == nullptr) return false;
    if (segment >= static_cast<int>(base.size())) base.resize(segment + 1, nullptr);
    base[segment] = p;
    segment_bytes[segment] = bytes;
    reserved += bytes;
    return true;
  }
  void Release(int segment) override {
    device->RawFree(base[segment], host);
    base[segment] = nullptr;
    reserved -= segment_bytes[segment];
    released.push_back(segment);
  }
  bool ReserveAddressSpace(int segment, int64_t bytes) override {
    void* p = device->RawReserveAddress(bytes);
    if (p == nullptr) {
      refusal = fmt::format("the device gave no address range of {} bytes", bytes);
      return false;
    }
    if (segment >= static_cast<int>(base.size())) base.resize(segment + 1, nullptr);
    base[segment] = p;
    address_bytes[segment] = bytes;
    return true;
  }
  // Mapped memory counts, by category, in 2 MiB steps (both pools' units are multiples).
  bool Map(int segment, int64_t offset, int64_t bytes) override {
    if (limit > 0 && reserved + bytes > limit) {
      refusal = fmt::format("{} bytes more would pass the limit", bytes);
      return false;
    }
    if (!device->RawMap(static_cast<char*>(base[segment]) + offset, bytes)) {
      refusal = fmt::format("the device refused {} bytes more", bytes);
      return false;
    }
    reserved += bytes;
    for (int64_t at = offset; at < offset + bytes; at += kStep) {
      mapped_category[{segment, at}] = request_category;
      if (!host) device->counters_.reserved[static_cast<int>(request_category)] += kStep;
    }
    return true;
  }
  void Unmap(int segment, int64_t offset, int64_t bytes) override {
    device->RawUnmap(static_cast<char*>(base[segment]) + offset, bytes);
    reserved -= bytes;
    for (int64_t at = offset; at < offset + bytes; at += kStep) {
      const auto it = mapped_category.find({segment, at});
      if (it == mapped_category.end()) continue;
      if (!host) device->counters_.reserved[static_cast<int>(it->second)] -= kStep;
      mapped_category.erase(it);
    }
  }
  void ReleaseAddressSpace(int segment) override {
    device->RawReleaseAddress(base[segment], address_bytes[segment]);
    base[segment] = nullptr;
    address_bytes.erase(segment);
  }
  static constexpr int64_t kStep = sim::kAllocatorSmallBufferBytes;

  Device* device;
  bool host;
  int64_t limit;
  int64_t reserved = 0;
  sim::CachingAllocatorModel model;
  std::vector<void*> base;                         // by segment id
  std::unordered_map<int, int64_t> segment_bytes;  // live segments
  std::unordered_map<int, MemCategory> segment_category;
  std::vector<int> released;  // segments Release dropped since the last look
  // Expandable segments: each one's address range, and what is mapped in it by the category
  // of the request that mapped it.
  std::unordered_map<int, int64_t> address_bytes;
  std::map<std::pair<int, int64_t>, MemCategory> mapped_category;
  MemCategory request_category = MemCategory::kActivations;  // of the Allocate under way
  std::string refusal;  // why the last mapping failed, for the OOM message
};

Device::Device(int64_t capacity_bytes, sim::AllocatorConfig allocator)
    : device_pool_(std::make_unique<Pool>(this, false, capacity_bytes, allocator)),
      host_pool_(std::make_unique<Pool>(this, true, 0, sim::AllocatorConfig{})) {}

Device::~Device() = default;

void Device::ReleaseAllMemory() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Pool* pool : {device_pool_.get(), host_pool_.get()}) {
    for (auto& [segment, bytes] : pool->segment_bytes) {
      if (pool->base[segment] != nullptr) RawFree(pool->base[segment], pool->host);
      pool->base[segment] = nullptr;
    }
    pool->segment_bytes.clear();
    for (auto& [segment, bytes] : pool->address_bytes) {
      if (pool->base[segment] != nullptr) RawReleaseAddress(pool->base[segment], bytes);
      pool->base[segment] = nullptr;
    }
    pool->address_bytes.clear();
  }
  pending_.clear();
}

Result<DeviceBuffer> Device::Allocate(int64_t bytes, MemCategory category, Lane stream, bool host) {
  if (bytes <= 0) return InvalidInput(fmt::format("allocation of {} bytes", bytes));
  std::lock_guard<std::mutex> lock(mu_);
  ProcessPendingFrees(false);
  Pool& pool = host ? *host_pool_ : *device_pool_;
  const int stream_id = static_cast<int>(stream) - 1;
  pool.request_category = category;
  int handle = pool.model.Allocate(bytes, stream_id);
  if (handle < 0 && !pending_.empty()) {
    // PyTorch synchronizes outstanding record_stream events before giving up.
    ProcessPendingFrees(true);
    handle = pool.model.Allocate(bytes, stream_id);
  }
  for (int s : pool.released) {
    if (!host)
      counters_.reserved[static_cast<int>(pool.segment_category[s])] -= pool.segment_bytes[s];
    pool.segment_bytes.erase(s);
    pool.segment_category.erase(s);
  }
  pool.released.clear();
  if (handle < 0) {
    ++counters_.oom_count;
    counters_.reserved_bytes = device_pool_->reserved;
    // A request needs more than its own bytes: say how much the allocator asked for, so that
    // "12 MiB free" beside a failed 11 MiB request is not read as a bug.
    const int64_t rounded = sim::RoundAllocationBytes(bytes);
    if (pool.model.config().expandable_segments) {
      const int64_t unit = sim::ExpandableUnitBytes(rounded > sim::kAllocatorSmallSizeBytes);
      return RuntimeError(fmt::format(
          "out of memory: {} bytes of {} on lane {} did not fit: no cached block of the lane held "
          "it, and mapping more of the lane's expandable segment (in {} MiB units) failed: {} ({} "
          "reserved{}, {} allocated)",
          bytes, MemCategoryName(category), LaneName(stream), unit / 1048576,
          pool.refusal.empty() ? "refused" : pool.refusal, pool.reserved,
          pool.limit > 0 ? fmt::format(" of {} usable", pool.limit) : "",
          counters_.allocated_bytes));
    }
    const int64_t segment_bytes = sim::SegmentBytes(rounded);
    const char* why = rounded <= sim::kAllocatorSmallSizeBytes
                          ? "requests up to 1 MiB share 2 MiB segments"
                      : rounded < sim::kAllocatorMinLargeAllocBytes
                          ? "requests of 1 to 10 MiB take 20 MiB segments"
                          : "the request rounded up to 2 MiB";
    return RuntimeError(fmt::format(
        "out of memory: {} bytes of {} on lane {} did not fit: no cached block of the lane held "
        "it, and a new segment of {:.1f} MiB ({}) {} ({} reserved{}, {} allocated)",
        bytes, MemCategoryName(category), LaneName(stream), segment_bytes / 1048576.0, why,
        pool.limit > 0 ? "would pass the limit" : "was refused", pool.reserved,
        pool.limit > 0 ? fmt::format(" of {} usable", pool.limit) : "",
        host ? counters_.host_allocated_bytes : counters_.allocated_bytes));
  }
  const int segment = pool.model.segment_of(handle);
  // An expandable segment's reserved bytes are counted as they are mapped (Pool::Map).
  if (pool.segment_bytes.count(segment) != 0 &&
      pool.segment_category.find(segment) == pool.segment_category.end()) {
    pool.segment_category[segment] = category;
    if (!host) counters_.reserved[static_cast<int>(category)] += pool.segment_bytes[segment];
  }
  DeviceBuffer b;
  b.data = static_cast<char*>(pool.base[segment]) + pool.model.offset_of(handle);
  b.bytes = bytes;
  b.category = category;
  b.stream = stream;
  b.host = host;
  b.handle = handle;
  if (host) {
    counters_.host_allocated_bytes += bytes;
  } else {
    counters_.allocated[static_cast<int>(category)] += bytes;
    counters_.allocated_bytes += bytes;
    counters_.reserved_bytes = pool.reserved;
    counters_.segments = pool.model.segment_count();
    counters_.peak_allocated_bytes =
        std::max(counters_.peak_allocated_bytes, counters_.allocated_bytes);
    counters_.peak_reserved_bytes = std::max(counters_.peak_reserved_bytes, pool.reserved);
  }
  return b;
}

void Device::FreeNow(const DeviceBuffer& b) {
  Pool& pool = b.host ? *host_pool_ : *device_pool_;
  pool.model.Free(b.handle);
  if (b.host) {
    counters_.host_allocated_bytes -= b.bytes;
  } else {
    counters_.allocated[static_cast<int>(b.category)] -= b.bytes;
    counters_.allocated_bytes -= b.bytes;
  }
}

void Device::Free(const DeviceBuffer& buffer, std::shared_ptr<DeviceEvent> ready) {
  if (buffer.handle < 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (ready != nullptr && !Done(*ready)) {
    pending_.push_back(PendingFree{buffer, std::move(ready)});
    // Allocated bytes drop when the schedule frees (what the trace reports); the block itself
    // comes back to the cache when the event is done.
    if (!buffer.host) {
      counters_.allocated[static_cast<int>(buffer.category)] -= buffer.bytes;
      counters_.allocated_bytes -= buffer.bytes;
    } else {
      counters_.host_allocated_bytes -= buffer.bytes;
    }
    return;
  }
  FreeNow(buffer);
}

void Device::ProcessPendingFrees(bool wait_all) {
  size_t kept = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    PendingFree& p = pending_[i];
    if (wait_all) {
      while (!Done(*p.ready)) std::this_thread::yield();
    }
    if (Done(*p.ready)) {
      Pool& pool = p.buffer.host ? *host_pool_ : *device_pool_;
      pool.model.Free(p.buffer.handle);  // its bytes were counted off at Free
    } else {
      pending_[kept++] = std::move(p);
    }
  }
  pending_.resize(kept);
}

MemoryCounters Device::memory() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

}  // namespace shardscope::backend
