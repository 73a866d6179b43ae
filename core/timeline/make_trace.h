// A step's Schedule, Timeline and memory series as a trace (formats.md §3, core/trace/trace.h):
// the one trace maker for predicted (simulator) and measured (backend) steps; `kind` and the
// other metadata come from the caller. WriteTrace (core/trace/trace_io.h) writes it.
//
// Contents:
//   TraceInfo   the metadata the caller knows (kind, tool version, scenario, summary, device)
//   OpFlops     the FLOPs of a compute op's items (what compute events carry)
//   MakeTrace   one pid per role's rank, one tid per lane, X events per traced op
//               (op_accounting.h IsTracedOp), `memory` counters + peak / oom markers
//
// Events: collectives carry bytes, group_size and busbw_GBps = bytes / duration ×
// BusBandwidthFactor (core/schedule/op_kind.h), so a predicted and a measured trace of the
// same schedule state bandwidth alike; compute events carry flops; host work (on_host) carries
// the extra arg "on_host": true, which `stats` reads (core/trace/work_kind.h).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "core/schedule/schedule.h"
#include "core/timeline/memory_series.h"
#include "core/timeline/timeline.h"
#include "core/trace/trace.h"

namespace shardscope {

struct TraceInfo {
  std::string kind = "predicted";  // "predicted" | "measured"
  std::string tool_version;        // "shardscope 0.1.0"
  nlohmann::json scenario;         // resolved scenario
  nlohmann::json summary;          // formats.md §2 summary
  nlohmann::json device;
  nlohmann::json library_versions = nlohmann::json::object();
  // Further metadata keys (MakeTrace adds "roles" and "notes" from the schedule).
  nlohmann::json extra = nlohmann::json::object();
};

double OpFlops(const ScheduleOp& op);

// `memory` is per role (may be empty: no counters). Deterministic: the same inputs give the
// same Trace (no clocks, no addresses).
Trace MakeTrace(const Schedule& schedule, const Timeline& timeline,
                std::span<const RoleMemory> memory, const TraceInfo& info);

}  // namespace shardscope
