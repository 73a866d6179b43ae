// PyTorch profiler (Kineto) traces → the trace model (internal to core/trace; ReadTrace picks
// it automatically).
//
// Contents:
//   IsKinetoTopLevelKey  the top-level members only Kineto writes (format detection)
//   IsKinetoEvent        an event only Kineto writes (format detection: it has a `cat`)
//   KinetoSink           collects a Kineto file's events in one SAX pass; Finish() builds the Trace
//
// How a Kineto trace maps onto ours (one file = one rank, distributedInfo.rank):
//   - GPU kernels / memcpy / memset become work events. NCCL kernels are classed by name
//     (ncclDevKernel_AllGather_*, ncclKernel_ReduceScatter_*, ...: all_gather, reduce_scatter,
//     all_reduce, p2p); other kernels on a stream that carries NCCL kernels join that lane;
//     memcpy HtoD/DtoH go to h2d/d2h; every other kernel is compute. A kernel is placed in the
//     step by the CPU time of its launch (any thread: backward launches from autograd's).
//   - CPU-only runs (gloo): `gloo:<collective>` ranges on gloo threads are the communication,
//     paired in issue order with the c10d op that issued them (whose name gives the kind: gloo
//     reduce-scatters with an all-reduce, so `gloo:all_reduce` issued by _reduce_scatter_base_ is a
//     reduce_scatter); the main thread's CPU ops are compute, taken outermost but split around
//     FSDP labels (an autograd node can run FSDP's hooks inside it), c10d issue calls left out.
//     They stay on the compute lane whatever their op_id (FSDP's copies included): the main
//     thread ran them; diff joins on op_id, not on lane.
//   - op_ids (op_id.h, exactly as the schedule names them) from FSDP2's record_function labels
//     (kineto_import_timeline.h places each moment): inside "FSDP::all_gather (u)" the copy-in
//     (`copy_in`) and the all-gather; inside "FSDP::all_gather_copy_out (u)" `copy_out`; inside
//     "FSDP::post_backward_reduce (u)" `reduce_copy_in` before the first collective issue, then
//     the collectives (`reduce_scatter`, HSDP's `all_reduce`) and what follows them; work inside a
//     unit's own hooks is that unit's; "FSDP::root_post_backward_callback" is
//     `step/wait_reductions`; the optimizer's ranges `step/optimizer`; everything else is the
//     running unit's `compute:k` (its k-th run holding work in that phase) or `recompute:k`;
//     forward ops inside a backward node (non-reentrant checkpointing's re-run, no label) are
//     the unit's recompute, and the loss is a run of its own each way.
//   - Collective sizes, when the profiler recorded them (record_shapes, NCCL kernel args
//     `In msg nelems` / `Out msg nelems` / `Group size` / `dtype`, c10d `Input Dims` /
//     `Input type`), in the schedule's convention: the gathered bytes of an all-gather, the input
//     bytes of a reduce-scatter, the buffer of an all-reduce.
//   - `ProfilerStep#N` gives step_begin markers; `[memory]` instants become the memory counter
//     (allocated_bytes, reserved_bytes).
//   - Everything else is counted in ImportReport::unknown_by_name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/trace_sax.h"

namespace shardscope::trace_internal {

// schemaVersion, deviceProperties, distributedInfo, baseTimeNanoseconds, trace_id: written
// before traceEvents by Kineto, never by us.
bool IsKinetoTopLevelKey(std::string_view key);
// Kineto gives every event a `cat`; we write none.
inline bool IsKinetoEvent(const RawEvent& e) { return e.cat.present(); }

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
    int32_t comm = -1;  // index into comms_ (collective sizes recorded for this event), or -1
    // A CPU op that records an autograd node ("Sequence number" with "Fwd thread id" 0): a
    // forward op. Inside a backward node it is activation checkpointing's re-run forward.
    bool forward_op = false;
    int64_t end_ns() const { return start_ns + dur_ns; }
  };
  // What the profiler recorded of a collective's size (-1 / 0: not recorded).
  struct CommArgs {
    // Input / output elements: `In msg nelems` / `Out msg nelems`, else from `Input Dims`.
    int64_t in_numel = -1, out_numel = -1;
    int32_t elem_bytes = 0;  // from `dtype` or `Input type`
    int32_t group_size = 0;  // `Group size`
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
  Result<CommArgs> ReadCommArgs(const RawEvent& e) const;

  const std::string& source_;
  Trace* trace_;
  int rank_ = 0;
  std::vector<Event> events_;
  std::vector<MemorySample> memory_;
  std::vector<CommArgs> comms_;
  int world_size_ = 0;  // distributedInfo.world_size
  std::map<std::string, int64_t> string_ids_;
};

}  // namespace shardscope::trace_internal
