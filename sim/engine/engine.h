// The discrete-event engine: times one step of a Schedule, given each op's duration.
//
// Contents:
//   OverlapContention  per-op figures of the SM / HBM contention model
//   EngineOptions  how compute slows while communication runs beside it
//   RunEngine      the simulation loop → a Timeline (core/timeline/timeline.h: OpTiming,
//                  Transition in the order the engine processed them, counters)
//
// Semantics (runtime.md "Lanes"): per role and lane, ops start in issue order (their order in
// Schedule::ops), one at a time; an op starts as soon as its lane is free, all its deps have
// ended and, for an op with a process group, the previous op of that (role, group) has
// started. A collective (all-gather, reduce-scatter, all-reduce, all-to-all) also waits until
// the previous one of its (role, group) has ended: NCCL serializes the operations of one
// communicator even across streams (NVIDIA/nccl#574), so an FSDP all-gather prefetch and a
// reduce-scatter of the same mesh dimension take turns. Pipeline sends and receives keep
// their order only (torch batches them into groups). Events are ordered by (time, sequence
// number), so ties resolve the same way on every run. Time is int64 nanoseconds; the step
// starts at 0.
//
// Overlap slowdown: a compute-lane op that is not itself communication progresses at rate
// 1/f while communication kernels (IsCollective from core/schedule, on any non-compute lane)
// of the same role run, and at rate 1 otherwise. With OverlapContention, f depends on the op
// and on the running collectives (sim/cost/cost_params.h "overlap"):
//   f = 1 + sm_share · (S / (S − min(ΣC, S/2)) − 1)
//         + hbm_share · (1 / (1 − min(ΣB / B_hbm, ½)) − 1)
// with S = sm_count, C the blocks and B the HBM traffic of each running collective. Without
// it, f = overlap_slowdown for every op. The remaining work is re-rated at every change, so
// a GEMM half overlapped with an all-gather is stretched by half the factor. Host copies
// (h2d/d2h) use copy engines and do not slow compute; ops with on_host run on the CPU and are
// never stretched (they keep their compute-lane issue order).
//
// Durations come from the caller (see durations.h for the cost-model adapter), which keeps
// this loop independent of any cost model and lets tests hand-make timelines.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/timeline/timeline.h"
#include "core/util/status.h"

namespace shardscope::sim {

// Spans are indexed by op and are either empty (that term is off) or one entry per op.
struct OverlapContention {
  int sm_count = 0;                      // S; 0 turns the SM term off
  double hbm_gbps = 0;                   // B_hbm; 0 turns the HBM term off
  std::span<const float> sm_share;       // compute ops: share of the duration SMs bound
  std::span<const float> hbm_share;      // compute ops: share of the duration HBM bounds
  std::span<const int> comm_blocks;      // collectives: C, thread blocks held
  std::span<const float> comm_hbm_gbps;  // collectives: B, HBM traffic
};

struct EngineOptions {
  double overlap_slowdown = 1.0;  // >= 1; 1 means communication never slows compute
  // When set (and alive for the RunEngine call), replaces overlap_slowdown.
  const OverlapContention* contention = nullptr;
};

// Simulates `schedule` with `base_duration_ns[i]` the unslowed duration of op i.
// Errors (InvalidInput) name the op: bad dep / role / group indices, negative durations, and
// deadlocks (ops that can never start, with what each waits for).
Result<Timeline> RunEngine(const Schedule& schedule, std::span<const int64_t> base_duration_ns,
                           const EngineOptions& options);

}  // namespace shardscope::sim
