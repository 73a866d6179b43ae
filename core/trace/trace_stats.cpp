#include "core/trace/trace_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/trace/intervals.h"

namespace shardscope {
namespace {

// Sums of many int64 figures are taken in 128 bits and clamped, so no input can overflow them.
int64_t Clamp(__int128 v) {
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// nccl-tests bus-bandwidth factor for a collective over n ranks.
double BusFactor(int lane, int n) {
  if (n <= 1) return 0;
  const double f = static_cast<double>(n - 1) / n;
  if (lane == kLaneAllReduce) return 2 * f;
  if (lane == kLaneAllGather || lane == kLaneReduceScatter) return f;
  return 1;
}

void RankSteps(const Trace& trace, int rank, const std::vector<const WorkEvent*>& events,
               std::vector<StepStats>* out) {
  if (events.empty()) return;
  int64_t first = INT64_MAX, last = INT64_MIN;
  std::array<std::vector<Interval>, kMaxLane + 1> lanes;
  std::vector<Interval> all;
  for (const WorkEvent* e : events) {
    first = std::min(first, e->start_ns);
    last = std::max(last, e->end_ns());
    all.push_back({e->start_ns, e->end_ns()});
    if (e->lane >= 1 && e->lane <= kMaxLane) lanes[e->lane].push_back({e->start_ns, e->end_ns()});
  }
  std::vector<int64_t> begins;
  const StrId step_begin = [&] {
    StrId id = kEmptyStr;
    return trace.strings.Find("step_begin", &id) ? id : kEmptyStr;
  }();
  for (const Marker& m : trace.markers) {
    if (m.rank == rank && step_begin != kEmptyStr && m.name == step_begin)
      begins.push_back(m.time_ns);
  }
  std::sort(begins.begin(), begins.end());
  begins.erase(std::unique(begins.begin(), begins.end()), begins.end());
  if (begins.empty()) begins.push_back(first);

  const auto busy = UnionOf(all);
  const auto compute = UnionOf(lanes[kLaneCompute]);
  std::vector<Interval> comm_all;
  std::array<std::vector<Interval>, kMaxLane + 1> merged;
  for (int l = 1; l <= kMaxLane; ++l) {
    merged[l] = UnionOf(lanes[l]);
    if (IsCommLane(l)) comm_all.insert(comm_all.end(), lanes[l].begin(), lanes[l].end());
  }
  const auto comm = UnionOf(std::move(comm_all));

  for (size_t s = 0; s < begins.size(); ++s) {
    StepStats st;
    st.rank = rank;
    st.step = static_cast<int>(s);
    st.start_ns = begins[s];
    st.end_ns = s + 1 < begins.size() ? begins[s + 1] : std::max(last, begins[s]);
    st.step_ns = st.end_ns - st.start_ns;
    const auto b = ClipTo(busy, st.start_ns, st.end_ns);
    const auto c = ClipTo(compute, st.start_ns, st.end_ns);
    const auto m = ClipTo(comm, st.start_ns, st.end_ns);
    st.busy_ns = TotalNs(b);
    st.idle_ns = st.step_ns - st.busy_ns;
    st.compute_ns = TotalNs(c);
    st.comm_ns = TotalNs(m);
    const int64_t overlapped = IntersectNs(m, c);
    st.exposed_comm_ns = st.comm_ns - overlapped;
    st.overlap_ratio = st.comm_ns > 0 ? static_cast<double>(overlapped) / st.comm_ns : 0.0;
    for (int l = 1; l <= kMaxLane; ++l) {
      if (!IsCommLane(l) || merged[l].empty()) continue;
      const auto lane = ClipTo(merged[l], st.start_ns, st.end_ns);
      st.exposed_by_lane_ns[std::string(TraceLaneName(l))] = TotalNs(lane) - IntersectNs(lane, c);
    }
    out->push_back(std::move(st));
  }
}

void RankMemory(const Trace& trace, int rank, const std::vector<const WorkEvent*>& events,
                std::vector<MemoryPeak>* out) {
  std::vector<const CounterSample*> samples;
  for (const CounterSample& c : trace.counters) {
    if (c.rank == rank) samples.push_back(&c);
  }
  if (samples.empty()) return;
  std::stable_sort(
      samples.begin(), samples.end(),
      [](const CounterSample* a, const CounterSample* b) { return a->time_ns < b->time_ns; });
  StrId allocated = kEmptyStr;
  const bool has_allocated =
      trace.strings.Find("allocated_bytes", &allocated) &&
      std::any_of(samples.begin(), samples.end(),
                  [&](const CounterSample* c) { return c->key == allocated; });
  // Without allocated_bytes the peak is of the sum of the category series.
  StrId reserved = kEmptyStr;
  const bool has_reserved = trace.strings.Find("reserved_bytes", &reserved);
  std::map<StrId, int64_t> current;
  __int128 sum = 0;
  MemoryPeak peak;
  peak.rank = rank;
  peak.key = has_allocated ? "allocated_bytes" : "sum of categories";
  peak.peak_bytes = INT64_MIN;
  std::map<StrId, int64_t> at_peak;
  for (size_t i = 0; i < samples.size(); ++i) {
    const CounterSample* c = samples[i];
    int64_t& slot = current[c->key];
    if (!has_allocated && !(has_reserved && c->key == reserved))
      sum += static_cast<__int128>(c->value) - slot;
    slot = c->value;
    // Evaluate once all samples of one instant are applied.
    if (i + 1 < samples.size() && samples[i + 1]->time_ns == c->time_ns) continue;
    const int64_t value = has_allocated ? current[allocated] : Clamp(sum);
    if (value > peak.peak_bytes) {
      peak.peak_bytes = value;
      peak.time_ns = c->time_ns;
      at_peak = current;
    }
  }
  for (const auto& [key, v] : at_peak) peak.at_peak_bytes[std::string(trace.Str(key))] = v;
  for (const WorkEvent* e : events) {
    if (e->start_ns <= peak.time_ns && peak.time_ns < e->end_ns()) {
      peak.running.push_back(fmt::format("{}: {} [{}]", TraceLaneName(e->lane), trace.Str(e->name),
                                         trace.Str(e->op_id)));
    }
  }
  out->push_back(std::move(peak));
}

}  // namespace

TraceStats ComputeStats(const Trace& trace, int top_n) {
  TraceStats stats;
  std::map<int, std::vector<const WorkEvent*>> by_rank;
  for (const WorkEvent& e : trace.events) by_rank[e.rank].push_back(&e);
  for (int rank : trace.Ranks()) {
    const auto& events = by_rank[rank];
    RankSteps(trace, rank, events, &stats.steps);
    RankMemory(trace, rank, events, &stats.memory);
  }

  std::map<int, CollectiveStats> coll;
  std::map<int, std::pair<__int128, __int128>> sums;  // bytes, time
  std::map<int, double> bw_time;
  std::map<int, double> bw_bytes;
  for (const WorkEvent& e : trace.events) {
    if (!IsCommLane(e.lane)) continue;
    CollectiveStats& c = coll[e.lane];
    c.kind = std::string(TraceLaneName(e.lane));
    ++c.count;
    sums[e.lane].first += e.bytes;
    sums[e.lane].second += e.dur_ns;
    if (e.bytes > 0 && e.group_size > 1 && e.dur_ns > 0) {
      bw_time[e.lane] += static_cast<double>(e.dur_ns);
      bw_bytes[e.lane] += static_cast<double>(e.bytes) * BusFactor(e.lane, e.group_size);
    }
  }
  for (auto& [lane, c] : coll) {
    c.bytes = Clamp(sums[lane].first);
    c.time_ns = Clamp(sums[lane].second);
    if (bw_time[lane] > 0) c.busbw_gbps = bw_bytes[lane] / bw_time[lane];
    stats.collectives.push_back(c);
  }

  std::vector<const WorkEvent*> order;
  order.reserve(trace.events.size());
  for (const WorkEvent& e : trace.events) order.push_back(&e);
  const size_t n = std::min<size_t>(order.size(), static_cast<size_t>(std::max(top_n, 0)));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [](const WorkEvent* a, const WorkEvent* b) {
                      return a->dur_ns != b->dur_ns ? a->dur_ns > b->dur_ns
                                                    : a->start_ns < b->start_ns;
                    });
  for (size_t i = 0; i < n; ++i) {
    const WorkEvent& e = *order[i];
    stats.top_ops.push_back({std::string(trace.Str(e.name)), std::string(trace.Str(e.op_id)),
                             e.rank, e.lane, e.start_ns, e.dur_ns});
  }

  // Headlines: the worst rank's mean per step.
  std::map<int, std::array<__int128, 4>> per_rank;  // step, exposed, compute, count
  for (const StepStats& s : stats.steps) {
    auto& a = per_rank[s.rank];
    a[0] += s.step_ns;
    a[1] += s.exposed_comm_ns;
    a[2] += s.compute_ns;
    a[3] += 1;
  }
  for (const auto& [rank, a] : per_rank) {
    stats.step_time_ns = std::max(stats.step_time_ns, Clamp(a[0] / a[3]));
    stats.exposed_comm_ns = std::max(stats.exposed_comm_ns, Clamp(a[1] / a[3]));
    stats.compute_ns = std::max(stats.compute_ns, Clamp(a[2] / a[3]));
  }
  for (const MemoryPeak& m : stats.memory)
    stats.peak_memory_bytes = std::max(stats.peak_memory_bytes, m.peak_bytes);
  return stats;
}

nlohmann::json StatsToJson(const TraceStats& stats) {
  using nlohmann::json;
  json j;
  j["step_time_ns"] = stats.step_time_ns;
  j["exposed_comm_ns"] = stats.exposed_comm_ns;
  j["compute_ns"] = stats.compute_ns;
  j["peak_memory_bytes"] = stats.peak_memory_bytes;
  j["steps"] = json::array();
  for (const StepStats& s : stats.steps) {
    j["steps"].push_back({{"rank", s.rank},
                          {"step", s.step},
                          {"start_ns", s.start_ns},
                          {"end_ns", s.end_ns},
                          {"step_ns", s.step_ns},
                          {"busy_ns", s.busy_ns},
                          {"idle_ns", s.idle_ns},
                          {"compute_ns", s.compute_ns},
                          {"comm_ns", s.comm_ns},
                          {"exposed_comm_ns", s.exposed_comm_ns},
                          {"overlap_ratio", s.overlap_ratio},
                          {"exposed_by_lane_ns", s.exposed_by_lane_ns}});
  }
  j["collectives"] = json::array();
  for (const CollectiveStats& c : stats.collectives) {
    j["collectives"].push_back({{"kind", c.kind},
                                {"count", c.count},
                                {"bytes", c.bytes},
                                {"time_ns", c.time_ns},
                                {"busbw_GBps", c.busbw_gbps}});
  }
  j["top_ops"] = json::array();
  for (const TopOp& t : stats.top_ops) {
    j["top_ops"].push_back({{"name", t.name},
                            {"op_id", t.op_id},
                            {"rank", t.rank},
                            {"lane", std::string(TraceLaneName(t.lane))},
                            {"start_ns", t.start_ns},
                            {"dur_ns", t.dur_ns}});
  }
  j["memory"] = json::array();
  for (const MemoryPeak& m : stats.memory) {
    j["memory"].push_back({{"rank", m.rank},
                           {"series", m.key},
                           {"peak_bytes", m.peak_bytes},
                           {"time_ns", m.time_ns},
                           {"running", m.running},
                           {"at_peak_bytes", m.at_peak_bytes}});
  }
  return j;
}

}  // namespace shardscope
