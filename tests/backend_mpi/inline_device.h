// A Device for communicator tests: host tasks run at once on the calling thread, memory is
// malloc, and no kernel is needed (each says so if called). The MPI communicators only use
// HostTask, so their tests do not depend on the host device's lane threads.
#pragma once

#include <cstdlib>
#include <string>

#include "backend/device/device.h"

namespace shardscope::backend {

class InlineDevice final : public Device {
 public:
  InlineDevice() : Device(0) {}
  ~InlineDevice() override { ReleaseAllMemory(); }

  DeviceDescription Describe() const override {
    DeviceDescription d;
    d.name = "inline test device";
    return d;
  }
  Result<std::shared_ptr<DeviceEvent>> Record(Lane) override {
    return std::make_shared<DeviceEvent>();
  }
  Status Wait(Lane, const DeviceEvent&) override { return Status::Ok(); }
  bool Done(const DeviceEvent&) override { return true; }
  Result<int64_t> ElapsedNs(const DeviceEvent&, const DeviceEvent&) override { return 0; }
  Status Synchronize(std::chrono::nanoseconds) override { return Status::Ok(); }
  Status HostTask(Lane, std::function<Status()> task) override { return task(); }

  Status Gemm(Lane, const GemmArgs&) override { return No("Gemm"); }
  Status AttentionForward(Lane, const AttentionArgs&) override { return No("Attention"); }
  Status AttentionBackward(Lane, const AttentionArgs&) override { return No("Attention"); }
  Status RmsNorm(Lane, const NormArgs&) override { return No("RmsNorm"); }
  Status Eltwise(Lane, const EltwiseArgs&) override { return No("Eltwise"); }
  Status Cast(Lane, const CastArgs&) override { return No("Cast"); }
  Status FsdpCopy(Lane, const FsdpCopyArgs&) override { return No("FsdpCopy"); }
  Status AdamW(Lane, const AdamWArgs&) override { return No("AdamW"); }
  Status Fill(Lane, const FillArgs&) override { return No("Fill"); }
  Status Memcpy(Lane, void*, const void*, int64_t) override { return No("Memcpy"); }
  Status Memset(Lane, void*, int, int64_t) override { return No("Memset"); }
  Status Hold(Lane, const HoldArgs&) override { return No("Hold"); }

 protected:
  void* RawAllocate(int64_t bytes, bool) override { return std::malloc(bytes); }
  void RawFree(void* ptr, bool) override { std::free(ptr); }

 private:
  static Status No(const char* what) {
    return RuntimeError(std::string("the communicator tests' device runs no ") + what);
  }
};

}  // namespace shardscope::backend
