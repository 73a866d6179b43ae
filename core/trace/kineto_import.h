// PyTorch profiler (Kineto) traces → the trace model (internal to core/trace; ReadTrace picks
// it automatically).
//
// Contents:
//   KinetoSink   collects a Kineto file's events in one SAX pass; Finish() builds the Trace
//
// How a Kineto trace maps onto ours (one file = one rank, distributedInfo.rank):
//   - GPU kernels / memcpy / memset become work events. NCCL kernels are classed by name
//     (ncclDevKernel_AllGather_*, ncclKernel_ReduceScatter_*, ...: all_gather, reduce_scatter,
//     all_reduce, p2p); other kernels on a stream that carries NCCL kernels join that lane (the
//     copy-in of runtime.md); memcpy HtoD/DtoH go to h2d/d2h; every other kernel is compute.
//   - CPU-only runs (gloo): `gloo:<collective>` ranges on gloo threads are the communication; their
//     kind comes from the c10d op that issued them (paired in issue order; gloo implements
//     reduce-scatter with an all-reduce), and the outermost CPU ops of the main thread are compute.
//   - `ProfilerStep#N` gives step_begin markers; FSDP record_function labels
//     ("FSDP::pre_forward (layers.0)", "FSDP::all_gather (layers.0)", ...) give each work event
//     its unit and phase, hence op_ids "fwd/<unit>/all_gather", "bwd/<unit>/compute",
//     "step/optimizer" (unit "root" for the root, as the schedule names it).
//   - `[memory]` instants become the memory counter (allocated_bytes, reserved_bytes).
//   - Everything else is counted in ImportReport::unknown_by_name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/trace_sax.h"

namespace shardscope::trace_internal {

class KinetoSink : public RawEventSink {
 public:
  KinetoSink(const std::string& source, Trace* trace) : source_(source), trace_(trace) {}
  Status OnTopLevel(const std::string& key, const std::string& json_text, bool before) override;
  Status OnEvent(const RawEvent& event) override;
  // Builds the trace from what was collected.
  Status Finish();

  enum class Cat : uint8_t {
    kCpuOp,
    kUserAnnotation,
    kGpuUserAnnotation,
    kKernel,
    kMemcpy,
    kMemset,
    kRuntime,
    kOther
  };
  struct Event {
    int64_t start_ns = 0;
    int64_t dur_ns = 0;
    int64_t pid = 0;
    int64_t tid = 0;
    int64_t correlation = -1;  // GPU kernels and their runtime launch calls
    int64_t stream = -1;
    StrId name = kEmptyStr;
    Cat cat = Cat::kOther;
    int64_t end_ns() const { return start_ns + dur_ns; }
  };
  struct MemorySample {
    int64_t time_ns = 0;
    int64_t allocated = 0;
    int64_t reserved = 0;
    int64_t device_type = 0;  // 0 CPU, 1 CUDA
  };

 private:
  int64_t Id(const RawValue& v);  // pid / tid: integers, or strings mapped to ids < 0
  void Unknown(const std::string& what);

  const std::string& source_;
  Trace* trace_;
  int rank_ = 0;
  std::vector<Event> events_;
  std::vector<MemorySample> memory_;
  std::map<std::string, int64_t> string_ids_;
};

}  // namespace shardscope::trace_internal
