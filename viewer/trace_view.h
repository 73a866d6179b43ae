// One loaded trace as the viewer draws it: per (rank, lane) tracks of items sorted by start in
// integer ns relative to the step start, each work event's exposed time, the memory series and
// the trace's statistics. Built once per trace (or per new prediction), read by every panel.
//
// Contents:
//   ItemKind, KindOf, ItemKindName   what an item's colour says (compute, each collective, copy)
//   LaneItem                         one work event on a track
//   Track                            one (rank, lane): items by start + prefix max of ends
//   TraceView                        a Trace with its tracks, origin, exposed times, memory, stats
//   MakeTraceView                    Trace → TraceView
//   LoadTraceView                    ReadTrace + MakeTraceView
//   StepOrigin                       where a trace's step starts (the alignment point)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/trace_stats.h"
#include "core/util/status.h"
#include "viewer/memory_model.h"

namespace shardscope::viewer {

enum class ItemKind { kCompute, kAllGather, kReduceScatter, kAllReduce, kP2P, kCopy, kCount };

// Compute lane → compute; h2d/d2h → copy; a communication lane's `nccl*` events → that
// collective, its other events (copy-in/out, casts) → copy.
ItemKind KindOf(const Trace& trace, const WorkEvent& event);
std::string_view ItemKindName(ItemKind kind);

struct LaneItem {
  int64_t start_ns = 0;  // relative to TraceView::origin_ns
  int64_t end_ns = 0;
  uint32_t event = 0;  // index into Trace::events
  ItemKind kind = ItemKind::kCompute;
};

struct Track {
  int rank = 0;
  int lane = 0;
  std::vector<LaneItem> items;   // by start
  std::vector<int64_t> max_end;  // max_end[i] = max end of items[0..i] (monotonic, for search)
};

struct TraceView {
  std::string label;  // "predicted", "measured", or the file name
  std::string path;
  Trace trace;
  int64_t origin_ns = 0;            // absolute time of the step start (subtracted from every time)
  int64_t end_ns = 0;               // last end, relative
  std::vector<Track> tracks;        // by (rank, lane)
  std::vector<int64_t> exposed_ns;  // per event: the part no compute of its rank covers
  MemoryModel memory;
  TraceStats stats;

  // The track of (rank, lane), or null.
  const Track* FindTrack(int rank, int lane) const;
};

// The first step_begin marker of the lowest rank that has one, else the first event start.
int64_t StepOrigin(const Trace& trace);

// `label` names the trace in the panels; an empty label takes metadata.kind.
TraceView MakeTraceView(Trace trace, std::string label, std::string path = "");
Result<TraceView> LoadTraceView(const std::string& path, std::string label = "");

}  // namespace shardscope::viewer
