#include "viewer/trace_view.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <utility>

#include "core/trace/intervals.h"
#include "core/trace/trace_io.h"

namespace shardscope::viewer {

namespace {

// KindOf for an event on `lane` whose name does or does not start with "nccl".
ItemKind KindForLane(int lane, bool nccl_name) {
  switch (lane) {
    case kLaneCompute:
      return ItemKind::kCompute;
    case kLaneH2D:
    case kLaneD2H:
      return ItemKind::kCopy;
    default:
      break;
  }
  if (!nccl_name) return ItemKind::kCopy;
  switch (lane) {
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

}  // namespace

ItemKind KindOf(const Trace& trace, const WorkEvent& event) {
  return KindForLane(event.lane, trace.Str(event.name).starts_with("nccl"));
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

  // Tracks in (rank, lane) order. A read trace is sorted by (rank, lane, start), so each track
  // is one run of events, looked up once per run rather than once per event, and already in
  // order.
  std::map<std::pair<int, int>, uint32_t> index;
  std::vector<uint32_t> track_of(t.events.size());
  std::vector<size_t> counts;
  {
    std::pair<int, int> run_key{0, 0};
    uint32_t run_track = 0;
    for (size_t i = 0; i < t.events.size(); ++i) {
      const WorkEvent& e = t.events[i];
      const std::pair<int, int> key{e.rank, e.lane};
      if (i == 0 || key != run_key) {
        run_key = key;
        run_track = index.emplace(key, static_cast<uint32_t>(index.size())).first->second;
        if (run_track == counts.size()) counts.push_back(0);
      }
      track_of[i] = run_track;
      ++counts[run_track];
    }
  }
  std::vector<uint32_t> slot(index.size());  // first-seen index → position in (rank, lane) order
  v.tracks.resize(index.size());
  {
    uint32_t k = 0;
    for (const auto& [key, first_seen] : index) {
      slot[first_seen] = k;
      v.tracks[k].rank = key.first;
      v.tracks[k].lane = key.second;
      v.tracks[k].items.reserve(counts[first_seen]);
      ++k;
    }
  }
  // Whether a name starts with "nccl" (KindOf's test), once per name.
  std::vector<int8_t> nccl_name(t.strings.size(), -1);
  for (size_t i = 0; i < t.events.size(); ++i) {
    const WorkEvent& e = t.events[i];
    const int64_t start = e.start_ns - v.origin_ns;
    int8_t& nccl = nccl_name[e.name];
    if (nccl < 0) nccl = t.Str(e.name).starts_with("nccl") ? 1 : 0;
    const ItemKind kind = KindForLane(e.lane, nccl == 1);
    v.tracks[slot[track_of[i]]].items.push_back(
        {start, start + e.dur_ns, static_cast<uint32_t>(i), kind});
    v.end_ns = std::max(v.end_ns, start + e.dur_ns);
  }
  for (Track& tr : v.tracks) {
    const auto by_start = [](const LaneItem& a, const LaneItem& b) {
      return a.start_ns < b.start_ns;
    };
    if (!std::is_sorted(tr.items.begin(), tr.items.end(), by_start)) {
      std::stable_sort(tr.items.begin(), tr.items.end(), by_start);
    }
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
