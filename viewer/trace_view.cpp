#include "viewer/trace_view.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <utility>

#include "core/trace/intervals.h"
#include "core/trace/trace_io.h"

namespace shardscope::viewer {

ItemKind KindOf(const Trace& trace, const WorkEvent& event) {
  switch (event.lane) {
    case kLaneCompute:
      return ItemKind::kCompute;
    case kLaneH2D:
    case kLaneD2H:
      return ItemKind::kCopy;
    default:
      break;
  }
  if (!trace.Str(event.name).starts_with("nccl")) return ItemKind::kCopy;
  switch (event.lane) {
    case kLaneAllGather:
      return ItemKind::kAllGather;
    case kLaneReduceScatter:
      return ItemKind::kReduceScatter;
    case kLaneAllReduce:
      return ItemKind::kAllReduce;
    default:
      return ItemKind::kP2P;
  }
}

std::string_view ItemKindName(ItemKind kind) {
  switch (kind) {
    case ItemKind::kCompute:
      return "compute";
    case ItemKind::kAllGather:
      return "all_gather";
    case ItemKind::kReduceScatter:
      return "reduce_scatter";
    case ItemKind::kAllReduce:
      return "all_reduce";
    case ItemKind::kP2P:
      return "p2p";
    case ItemKind::kCopy:
      return "copy";
    case ItemKind::kCount:
      break;
  }
  return "";
}

const Track* TraceView::FindTrack(int rank, int lane) const {
  for (const Track& t : tracks) {
    if (t.rank == rank && t.lane == lane) return &t;
  }
  return nullptr;
}

int64_t StepOrigin(const Trace& trace) {
  StrId step_begin = kEmptyStr;
  if (trace.strings.Find("step_begin", &step_begin)) {
    const Marker* best = nullptr;
    for (const Marker& m : trace.markers) {
      if (m.name != step_begin) continue;
      if (!best || m.rank < best->rank || (m.rank == best->rank && m.time_ns < best->time_ns)) {
        best = &m;
      }
    }
    if (best) return best->time_ns;
  }
  int64_t first = std::numeric_limits<int64_t>::max();
  for (const WorkEvent& e : trace.events) first = std::min(first, e.start_ns);
  return trace.events.empty() ? 0 : first;
}

namespace {

// Per event, the time its rank's compute lane does not cover (compute events: 0, so a table
// sorted by exposed change ranks what the step waits for).
std::vector<int64_t> ExposedTimes(const Trace& trace, const std::vector<Track>& tracks) {
  std::vector<int64_t> exposed(trace.events.size(), 0);
  std::map<int, std::vector<Interval>> compute_by_rank;
  for (const Track& t : tracks) {
    if (t.lane != kLaneCompute) continue;
    std::vector<Interval> spans;
    spans.reserve(t.items.size());
    for (const LaneItem& it : t.items) spans.push_back({it.start_ns, it.end_ns});
    compute_by_rank[t.rank] = UnionOf(std::move(spans));
  }
  for (const Track& t : tracks) {
    if (t.lane == kLaneCompute) continue;
    static const std::vector<Interval> kNone;
    const auto found = compute_by_rank.find(t.rank);
    const std::vector<Interval>& compute = found == compute_by_rank.end() ? kNone : found->second;
    for (const LaneItem& it : t.items) {
      // Covered part: walk the compute intervals overlapping [start, end).
      auto c = std::upper_bound(compute.begin(), compute.end(), it.start_ns,
                                [](int64_t t0, const Interval& iv) { return t0 < iv.end_ns; });
      int64_t covered = 0;
      for (; c != compute.end() && c->start_ns < it.end_ns; ++c) {
        covered += std::min(c->end_ns, it.end_ns) - std::max(c->start_ns, it.start_ns);
      }
      exposed[it.event] = (it.end_ns - it.start_ns) - covered;
    }
  }
  return exposed;
}

}  // namespace

TraceView MakeTraceView(Trace trace, std::string label, std::string path) {
  TraceView v;
  v.label = label.empty() ? trace.metadata.kind : std::move(label);
  v.path = std::move(path);
  v.trace = std::move(trace);
  const Trace& t = v.trace;
  v.origin_ns = StepOrigin(t);

  std::map<std::pair<int, int>, size_t> index;
  for (const WorkEvent& e : t.events) index.emplace(std::make_pair(e.rank, e.lane), 0);
  v.tracks.resize(index.size());
  size_t k = 0;
  for (auto& [key, slot] : index) {
    slot = k;
    v.tracks[k].rank = key.first;
    v.tracks[k].lane = key.second;
    ++k;
  }
  for (size_t i = 0; i < t.events.size(); ++i) {
    const WorkEvent& e = t.events[i];
    const int64_t start = e.start_ns - v.origin_ns;
    v.tracks[index[{e.rank, e.lane}]].items.push_back(
        {start, start + e.dur_ns, static_cast<uint32_t>(i), KindOf(t, e)});
    v.end_ns = std::max(v.end_ns, start + e.dur_ns);
  }
  for (Track& tr : v.tracks) {
    std::stable_sort(tr.items.begin(), tr.items.end(),
                     [](const LaneItem& a, const LaneItem& b) { return a.start_ns < b.start_ns; });
    tr.max_end.resize(tr.items.size());
    int64_t m = std::numeric_limits<int64_t>::min();
    for (size_t i = 0; i < tr.items.size(); ++i) {
      m = std::max(m, tr.items[i].end_ns);
      tr.max_end[i] = m;
    }
  }
  v.exposed_ns = ExposedTimes(t, v.tracks);
  v.memory = BuildMemoryModel(t, v.origin_ns);
  v.stats = ComputeStats(t, /*top_n=*/0);
  return v;
}

Result<TraceView> LoadTraceView(const std::string& path, std::string label) {
  SS_ASSIGN_OR_RETURN(Trace trace, ReadTrace(path));
  if (label.empty()) {
    label = trace.metadata.kind + " (" + std::filesystem::path(path).filename().string() + ")";
  }
  return MakeTraceView(std::move(trace), std::move(label), path);
}

}  // namespace shardscope::viewer
