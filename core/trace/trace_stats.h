// Time accounting of a trace (`shardscope stats`): per rank and step, busy / idle / compute /
// exposed communication / overlap by exact interval arithmetic; per collective kind; the
// longest operations; the memory peak with what ran then and the categories at that moment.
//
// Contents:
//   StepStats        one step of one rank
//   CollectiveStats  one collective kind over the whole trace
//   TopOp            one of the longest work events
//   MemoryPeak       one rank's memory peak
//   TraceStats       all of it, plus headline figures (the slowest rank's mean step, ...)
//   ComputeStats     Trace → TraceStats
//   StatsToJson      the `--json` report
//
// Definitions: steps start at `step_begin` markers (one step spanning the whole rank when there
// are none; the last ends at the rank's last event). Each event is classified by kind
// (work_kind.h ClassifyEvent: a collective is communication on whatever lane it runs) and a
// step's figures are core/trace/accounting.h's, the code the simulator's summary runs:
// busy = union of GPU work; compute = union of compute work; comm = union of collectives;
// exposed = comm \ compute; overlap_ratio = |comm ∩ compute| / |comm|; host = CPU work.
// By purpose (comm_purpose.h: FSDP all-gather / reduce-scatter, HSDP all-reduce, TP, CP, EP,
// PP, from each collective's op_id) the same busy and exposed figures; the collectives with the
// most exposed time are listed by op_id. Memory: besides the peak and every series' value at
// it, each series' maximum over the trace, and the peak within each op_id phase (fwd, bwd,
// step: the phase of the compute-lane event last started at each sample).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/trace/trace.h"

namespace shardscope {

struct StepStats {
  int rank = 0;
  int step = 0;  // 0-based within the rank
  int64_t start_ns = 0, end_ns = 0;
  int64_t step_ns = 0, busy_ns = 0, idle_ns = 0;
  int64_t compute_ns = 0;       // union of compute work (any lane)
  int64_t host_ns = 0;          // union of host work (the GPU counts it as idle)
  int64_t comm_ns = 0;          // union of collectives (any lane)
  int64_t exposed_comm_ns = 0;  // communication while compute is idle
  int64_t exposed_copy_ns = 0;  // h2d / d2h copies while neither compute nor communication runs
  double overlap_ratio = 0;     // overlapped / communication (0 when no communication)
  // Per communication kind and copy ("all_gather", "all_to_all", "h2d", ...), the kinds the
  // rank has: busy = union of that kind; exposed = that union − compute.
  std::map<std::string, int64_t> busy_by_kind_ns;
  std::map<std::string, int64_t> exposed_by_kind_ns;
  // The same per purpose ("fsdp_all_gather", "tp", ...), the purposes the rank has.
  std::map<std::string, int64_t> busy_by_purpose_ns;
  std::map<std::string, int64_t> exposed_by_purpose_ns;
  struct ExposedOp {
    std::string op_id, name, purpose;
    int64_t dur_ns = 0, exposed_ns = 0;  // inside the step
  };
  std::vector<ExposedOp> exposed_ops;  // most exposed first (ties: start, op_id), at most 5
};

// Collectives only (EventCollective), by kind.
struct CollectiveStats {
  std::string kind;  // all_gather, reduce_scatter, all_reduce, all_to_all, p2p
  int64_t count = 0;
  int64_t bytes = 0;
  int64_t time_ns = 0;    // sum of durations
  double busbw_gbps = 0;  // Σ bytes × BusBandwidthFactor / Σ time over events with bytes,
                          // a duration and a group of 2 or more
};

struct TopOp {
  std::string name, op_id;
  int rank = 0, lane = 0;
  int64_t start_ns = 0, dur_ns = 0;
};

struct MemoryPeak {
  int rank = 0;
  std::string key;  // the series the peak is of ("allocated_bytes", or "sum of categories")
  int64_t peak_bytes = 0;
  int64_t time_ns = 0;
  std::vector<std::string> running;              // "compute: <name> [<op_id>]" at the peak
  std::map<std::string, int64_t> at_peak_bytes;  // every series' value at the peak
  std::map<std::string, int64_t> max_bytes;      // every series' maximum over the trace
  struct PhasePeak {
    int64_t peak_bytes = 0, time_ns = 0;
  };
  // "forward", "backward", "optimizer" (op_id phases fwd, bwd, step) → the peak within it.
  std::map<std::string, PhasePeak> by_phase;
};

struct TraceStats {
  std::vector<StepStats> steps;
  std::vector<CollectiveStats> collectives;
  std::vector<TopOp> top_ops;
  std::vector<MemoryPeak> memory;
  // Headlines (diff compares these). Time: the means per step of one rank, the one whose mean
  // step is longest (ties: the lowest rank), as the simulator's summary reports the role that
  // ends last: every figure of one rank, never each figure's own worst rank (a pipeline's
  // compute from one stage beside its step time from another).
  int reported_rank = -1;  // -1 without steps
  int64_t step_time_ns = 0;
  int64_t exposed_comm_ns = 0;
  int64_t compute_ns = 0;
  // Memory: the highest over ranks, as the summary's peaks are the worst role's.
  int64_t peak_memory_bytes = 0;    // allocated (0 when there is no memory counter)
  int64_t peak_reserved_bytes = 0;  // the reserved_bytes series' maximum (0 without it)
};

// Computes the statistics; `top_n` limits top_ops.
TraceStats ComputeStats(const Trace& trace, int top_n = 10);
nlohmann::json StatsToJson(const TraceStats& stats);

}  // namespace shardscope
