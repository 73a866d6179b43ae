#include "core/trace/trace_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/trace/accounting.h"
#include "core/trace/comm_purpose.h"
#include "core/trace/step_phase_name.h"
#include "core/trace/work_kind.h"

namespace shardscope {
namespace {

// Sums of many int64 figures are taken in 128 bits and clamped, so no input can overflow them.
int64_t Clamp(__int128 v) {
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// The communication events of [start, end) with the most time no compute covers.
std::vector<StepStats::ExposedOp> ExposedOps(const Trace& trace,
                                             const std::vector<const WorkEvent*>& events,
                                             const std::vector<WorkSpan>& work,
                                             const RankAccounting& accounting, int64_t start,
                                             int64_t end) {
  constexpr size_t kMax = 5;
  struct Candidate {
    size_t index;
    int64_t exposed_ns;
  };
  std::vector<Candidate> found;
  for (size_t i = 0; i < work.size(); ++i) {
    if (!IsCommunication(work[i].kind)) continue;
    const int64_t lo = std::max(start, work[i].start_ns), hi = std::min(end, work[i].end_ns);
    const int64_t exposed = accounting.ExposedNs(lo, hi);
    if (exposed > 0) found.push_back({i, exposed});
  }
  // Only the first kMax are kept: a partial sort, the index last so that ties keep the
  // events' order (what a stable sort of them all gives).
  const size_t kept = std::min(kMax, found.size());
  std::partial_sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(kept), found.end(),
                    [&](const Candidate& a, const Candidate& b) {
                      if (a.exposed_ns != b.exposed_ns) return a.exposed_ns > b.exposed_ns;
                      if (work[a.index].start_ns != work[b.index].start_ns)
                        return work[a.index].start_ns < work[b.index].start_ns;
                      const std::string_view op_a = trace.Str(events[a.index]->op_id);
                      const std::string_view op_b = trace.Str(events[b.index]->op_id);
                      if (op_a != op_b) return op_a < op_b;
                      return a.index < b.index;
                    });
  std::vector<StepStats::ExposedOp> out;
  for (size_t i = 0; i < kept; ++i) {
    const WorkEvent& e = *events[found[i].index];
    out.push_back({std::string(trace.Str(e.op_id)), std::string(trace.Str(e.name)),
                   std::string(CommPurposeName(work[found[i].index].purpose)),
                   std::min(end, e.end_ns()) - std::max(start, e.start_ns), found[i].exposed_ns});
  }
  return out;
}

// Per-event classification (kind, purpose, phase) depends on a few interned fields that a
// million events share among a few thousand values: each distinct value is classified once.
// The keys are what each rule reads: EventCollective the name, lane and whether group_size is
// set; ClassifyEvent those and the extra args (events with any are classified directly);
// PurposeOfOpId the op_id and kind; StepPhaseOfOpId the op_id.
class EventMemo {
 public:
  explicit EventMemo(const Trace& trace) : trace_(trace), phase_(trace.strings.size(), kUnknown) {}

  std::optional<WorkKind> Collective(const WorkEvent& e) { return KindsOf(e).collective; }
  WorkKind Classify(const WorkEvent& e) {
    return e.extra_args == kNoArgs ? KindsOf(e).classified : ClassifyEvent(trace_, e);
  }
  CommPurpose Purpose(const WorkEvent& e, WorkKind kind) {
    if (!IsCommunication(kind)) return CommPurpose::kNone;
    const uint64_t key = (static_cast<uint64_t>(e.op_id) << 8) | static_cast<uint8_t>(kind);
    auto [it, added] = purposes_.try_emplace(key, CommPurpose::kNone);
    if (added) it->second = EventPurpose(trace_, e, kind);
    return it->second;
  }
  // The op_id phase of a compute-lane event as the summary names phases ("" when it has none).
  std::string_view Phase(const WorkEvent& e) {
    int8_t& p = phase_[e.op_id];
    if (p == kUnknown) {
      const std::optional<StepPhase> phase =
          e.op_id == kEmptyStr ? std::nullopt : StepPhaseOfOpId(trace_.Str(e.op_id));
      p = phase ? static_cast<int8_t>(*phase) : kNoPhase;
    }
    return p == kNoPhase ? std::string_view() : StepPhaseName(static_cast<StepPhase>(p));
  }

 private:
  static constexpr int8_t kUnknown = -2, kNoPhase = -1;
  struct Kinds {
    std::optional<WorkKind> collective;
    WorkKind classified;
  };
  const Kinds& KindsOf(const WorkEvent& e) {
    const uint64_t key = (static_cast<uint64_t>(e.name) << 32) |
                         (static_cast<uint64_t>(static_cast<uint32_t>(e.lane)) << 1) |
                         (e.group_size > 0 ? 1 : 0);
    if (key == last_key_ && last_ != nullptr) return *last_;
    auto [it, added] = kinds_.try_emplace(key);
    if (added) {
      it->second.collective = EventCollective(trace_, e);
      it->second.classified = ClassifyWork(it->second.collective, e.lane, false);
    }
    last_key_ = key;
    last_ = &it->second;
    return it->second;
  }

  const Trace& trace_;
  std::vector<int8_t> phase_;  // by op_id: a StepPhase, kNoPhase or kUnknown (not yet asked)
  std::unordered_map<uint64_t, Kinds> kinds_;
  std::unordered_map<uint64_t, CommPurpose> purposes_;
  uint64_t last_key_ = 0;
  const Kinds* last_ = nullptr;
};

void RankSteps(const Trace& trace, int rank, const std::vector<const WorkEvent*>& events,
               EventMemo* memo, std::vector<StepStats>* out) {
  if (events.empty()) return;
  int64_t first = INT64_MAX, last = INT64_MIN;
  std::vector<WorkSpan> work;
  work.reserve(events.size());
  for (const WorkEvent* e : events) {
    first = std::min(first, e->start_ns);
    last = std::max(last, e->end_ns());
    const WorkKind kind = memo->Classify(*e);
    work.push_back({e->start_ns, e->end_ns(), kind, memo->Purpose(*e, kind)});
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

  std::array<bool, kNumWorkKinds> present{};
  std::array<bool, kNumCommPurposes> purpose_present{};
  for (const WorkSpan& w : work) {
    present[static_cast<int>(w.kind)] = true;
    purpose_present[static_cast<int>(w.purpose)] = true;
  }
  const RankAccounting accounting(work);
  for (size_t s = 0; s < begins.size(); ++s) {
    const int64_t end = s + 1 < begins.size() ? begins[s + 1] : std::max(last, begins[s]);
    const StepAccount a = accounting.Window(begins[s], end);
    StepStats st;
    st.rank = rank;
    st.step = static_cast<int>(s);
    st.start_ns = a.start_ns;
    st.end_ns = a.end_ns;
    st.step_ns = a.step_ns;
    st.busy_ns = a.busy_ns;
    st.idle_ns = a.idle_ns;
    st.compute_ns = a.compute_ns;
    st.host_ns = a.host_ns;
    st.comm_ns = a.comm_ns;
    st.exposed_comm_ns = a.exposed_comm_ns;
    st.exposed_copy_ns = a.exposed_copy_ns;
    st.overlap_ratio = a.overlap_ratio();
    for (int k = 0; k < kNumWorkKinds; ++k) {
      const WorkKind kind = static_cast<WorkKind>(k);
      if (!present[k] || kind == WorkKind::kCompute || kind == WorkKind::kHost) continue;
      const std::string name(WorkKindName(kind));
      st.busy_by_kind_ns[name] = a.busy_by_kind_ns[k];
      st.exposed_by_kind_ns[name] = a.exposed_by_kind_ns[k];
    }
    for (int p = 1; p < kNumCommPurposes; ++p) {
      if (!purpose_present[p]) continue;
      const std::string name(CommPurposeName(static_cast<CommPurpose>(p)));
      st.busy_by_purpose_ns[name] = a.busy_by_purpose_ns[p];
      st.exposed_by_purpose_ns[name] = a.exposed_by_purpose_ns[p];
    }
    st.exposed_ops = ExposedOps(trace, events, work, accounting, a.start_ns, a.end_ns);
    out->push_back(std::move(st));
  }
}

void RankMemory(const Trace& trace, int rank, const std::vector<const WorkEvent*>& events,
                EventMemo* memo, std::vector<MemoryPeak>* out) {
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
  std::map<StrId, int64_t> max_bytes;
  // Compute-lane events by start, for the phase of each sample.
  std::vector<const WorkEvent*> compute;
  for (const WorkEvent* e : events) {
    if (e->lane == kLaneCompute) compute.push_back(e);
  }
  const auto by_start = [](const WorkEvent* a, const WorkEvent* b) {
    return a->start_ns < b->start_ns;
  };
  if (!std::is_sorted(compute.begin(), compute.end(), by_start)) {
    std::stable_sort(compute.begin(), compute.end(), by_start);
  }
  size_t next_compute = 0;
  std::string_view phase;
  for (size_t i = 0; i < samples.size(); ++i) {
    const CounterSample* c = samples[i];
    int64_t& slot = current[c->key];
    if (!has_allocated && !(has_reserved && c->key == reserved))
      sum += static_cast<__int128>(c->value) - slot;
    slot = c->value;
    auto [max_it, inserted] = max_bytes.emplace(c->key, c->value);
    if (!inserted) max_it->second = std::max(max_it->second, c->value);
    // Evaluate once all samples of one instant are applied.
    if (i + 1 < samples.size() && samples[i + 1]->time_ns == c->time_ns) continue;
    const int64_t value = has_allocated ? current[allocated] : Clamp(sum);
    while (next_compute < compute.size() && compute[next_compute]->start_ns <= c->time_ns) {
      if (std::string_view p = memo->Phase(*compute[next_compute]); !p.empty()) phase = p;
      ++next_compute;
    }
    if (!phase.empty()) {
      auto [it, added] = peak.by_phase.try_emplace(std::string(phase));
      if (added || value > it->second.peak_bytes) it->second = {value, c->time_ns};
    }
    if (value > peak.peak_bytes) {
      peak.peak_bytes = value;
      peak.time_ns = c->time_ns;
      at_peak = current;
    }
  }
  for (const auto& [key, v] : at_peak) peak.at_peak_bytes[std::string(trace.Str(key))] = v;
  for (const auto& [key, v] : max_bytes) peak.max_bytes[std::string(trace.Str(key))] = v;
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
  EventMemo memo(trace);
  std::map<int, std::vector<const WorkEvent*>> by_rank;
  std::vector<const WorkEvent*>* rank_events = nullptr;  // events come by rank: one lookup a run
  for (const WorkEvent& e : trace.events) {
    if (rank_events == nullptr || rank_events->back()->rank != e.rank)
      rank_events = &by_rank[e.rank];
    rank_events->push_back(&e);
  }
  for (int rank : trace.Ranks()) {
    const auto& events = by_rank[rank];
    RankSteps(trace, rank, events, &memo, &stats.steps);
    RankMemory(trace, rank, events, &memo, &stats.memory);
  }

  // Per collective kind, in WorkKind order (an array: one event in three is a collective).
  std::array<CollectiveStats, kNumWorkKinds> coll;
  std::array<std::pair<__int128, __int128>, kNumWorkKinds> sums{};  // bytes, time
  std::array<double, kNumWorkKinds> bw_time{}, bw_bytes{};
  for (const WorkEvent& e : trace.events) {
    const std::optional<WorkKind> kind = memo.Collective(e);
    if (!kind) continue;
    const int k = static_cast<int>(*kind);
    ++coll[k].count;
    sums[k].first += e.bytes;
    sums[k].second += e.dur_ns;
    if (e.bytes > 0 && e.group_size > 1 && e.dur_ns > 0) {
      bw_time[k] += static_cast<double>(e.dur_ns);
      bw_bytes[k] += static_cast<double>(e.bytes) * BusBandwidthFactor(*kind, e.group_size);
    }
  }
  for (int k = 0; k < kNumWorkKinds; ++k) {
    CollectiveStats& c = coll[k];
    if (c.count == 0) continue;
    c.kind = std::string(WorkKindName(static_cast<WorkKind>(k)));
    c.bytes = Clamp(sums[k].first);
    c.time_ns = Clamp(sums[k].second);
    if (bw_time[k] > 0) c.busbw_gbps = bw_bytes[k] / bw_time[k];
    stats.collectives.push_back(c);
  }

  std::vector<const WorkEvent*> order;
  if (top_n > 0) {
    order.reserve(trace.events.size());
    for (const WorkEvent& e : trace.events) order.push_back(&e);
  }
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

  // Headlines: the slowest rank's means per step (TraceStats).
  std::map<int, std::array<__int128, 4>> per_rank;  // step, exposed, compute, count
  for (const StepStats& s : stats.steps) {
    auto& a = per_rank[s.rank];
    a[0] += s.step_ns;
    a[1] += s.exposed_comm_ns;
    a[2] += s.compute_ns;
    a[3] += 1;
  }
  for (const auto& [rank, a] : per_rank) {
    const int64_t step = Clamp(a[0] / a[3]);
    if (stats.reported_rank >= 0 && step <= stats.step_time_ns) continue;
    stats.reported_rank = rank;
    stats.step_time_ns = step;
    stats.exposed_comm_ns = Clamp(a[1] / a[3]);
    stats.compute_ns = Clamp(a[2] / a[3]);
  }
  for (const MemoryPeak& m : stats.memory) {
    stats.peak_memory_bytes = std::max(stats.peak_memory_bytes, m.peak_bytes);
    if (const auto it = m.max_bytes.find("reserved_bytes"); it != m.max_bytes.end())
      stats.peak_reserved_bytes = std::max(stats.peak_reserved_bytes, it->second);
  }
  return stats;
}

namespace {

nlohmann::json ExposedOpsJson(const std::vector<StepStats::ExposedOp>& ops) {
  nlohmann::json out = nlohmann::json::array();
  for (const StepStats::ExposedOp& o : ops) {
    out.push_back({{"op_id", o.op_id},
                   {"name", o.name},
                   {"purpose", o.purpose},
                   {"dur_ns", o.dur_ns},
                   {"exposed_ns", o.exposed_ns}});
  }
  return out;
}

nlohmann::json PhasesJson(const std::map<std::string, MemoryPeak::PhasePeak>& phases) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, p] : phases) {
    out[name] = {{"peak_bytes", p.peak_bytes}, {"time_ns", p.time_ns}};
  }
  return out;
}

}  // namespace

nlohmann::json StatsToJson(const TraceStats& stats) {
  using nlohmann::json;
  json j;
  j["step_time_ns"] = stats.step_time_ns;
  j["exposed_comm_ns"] = stats.exposed_comm_ns;
  j["compute_ns"] = stats.compute_ns;
  j["peak_memory_bytes"] = stats.peak_memory_bytes;
  j["peak_memory_reserved_bytes"] = stats.peak_reserved_bytes;
  j["reported_rank"] = stats.reported_rank;
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
                          {"host_ns", s.host_ns},
                          {"comm_ns", s.comm_ns},
                          {"exposed_comm_ns", s.exposed_comm_ns},
                          {"exposed_copy_ns", s.exposed_copy_ns},
                          {"overlap_ratio", s.overlap_ratio},
                          {"busy_by_kind_ns", s.busy_by_kind_ns},
                          {"exposed_by_kind_ns", s.exposed_by_kind_ns},
                          {"busy_by_purpose_ns", s.busy_by_purpose_ns},
                          {"exposed_by_purpose_ns", s.exposed_by_purpose_ns},
                          {"exposed_ops", ExposedOpsJson(s.exposed_ops)}});
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
                           {"at_peak_bytes", m.at_peak_bytes},
                           {"max_bytes", m.max_bytes},
                           {"peak_by_phase", PhasesJson(m.by_phase)}});
  }
  return j;
}

}  // namespace shardscope
