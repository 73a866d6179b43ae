#include "core/trace/trace_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

#include "core/trace/trace_stats.h"

namespace shardscope {

bool Tolerance::Allows(double a, double b) const {
  const double d = std::fabs(b - a);
  if (absolute >= 0 && d <= absolute) return true;
  if (relative >= 0 && d <= relative * std::max(std::fabs(a), std::fabs(b))) return true;
  return absolute < 0 && relative < 0;
}

namespace {

// Lists in a report are capped (the counts stay exact) so two unrelated million-event traces
// do not produce a gigabyte of text.
constexpr size_t kMaxListed = 1000;

void Note(std::vector<std::string>* list, int64_t* count,
          const std::function<std::string()>& text) {
  ++*count;
  if (list->size() < kMaxListed) list->push_back(text());
}

double Allowed(const Tolerance& t, double a, double b) {
  double allowed = -1;
  if (t.absolute >= 0) allowed = t.absolute;
  if (t.relative >= 0)
    allowed = std::max(allowed, t.relative * std::max(std::fabs(a), std::fabs(b)));
  return allowed;
}

Tolerance Make(double rel, double abs, std::string text) {
  Tolerance t;
  t.relative = rel;
  t.absolute = abs;
  t.text = std::move(text);
  return t;
}

MetricDelta Compare(std::string metric, std::string unit, double a, double b, const Tolerances& tol,
                    const std::string& tol_name) {
  MetricDelta m;
  m.metric = std::move(metric);
  m.unit = std::move(unit);
  m.a = a;
  m.b = b;
  const double d = std::fabs(b - a);
  auto it = tol.find(tol_name);
  if (it == tol.end()) {
    m.impact = 0;
    return m;
  }
  m.tolerance = it->second.text;
  m.over = !it->second.Allows(a, b);
  const double allowed = Allowed(it->second, a, b);
  m.impact = allowed > 0 ? d / allowed : (d > 0 ? 1e300 : 0);
  return m;
}

void SortByImpact(std::vector<MetricDelta>* metrics) {
  std::stable_sort(metrics->begin(), metrics->end(),
                   [](const MetricDelta& x, const MetricDelta& y) {
                     if (x.over != y.over) return x.over;
                     return x.impact > y.impact;
                   });
}

// Key of an op: (rank, lane or -1 when joined on op_id, string id in A's table), plus its
// occurrence among events with that key (in event order) and the event's index.
struct OpKey {
  int32_t rank;
  int32_t lane;
  StrId id;
  uint32_t occurrence;
  uint32_t index;
};
bool KeyLess(const OpKey& x, const OpKey& y) {
  return std::tie(x.rank, x.lane, x.id, x.occurrence) <
         std::tie(y.rank, y.lane, y.id, y.occurrence);
}

// Keys for every event of `t`, sorted, with string ids translated into `ids_of` (A's table).
// Strings that A lacks get ids past A's table so they never collide. Sorting instead of
// hashing: a million-node hash map costs more than two sorts.
std::vector<OpKey> SortedKeys(const Trace& t, const Trace& ids_of) {
  std::vector<StrId> translate(t.strings.size());
  StrId next = static_cast<StrId>(ids_of.strings.size());
  for (StrId i = 0; i < t.strings.size(); ++i) {
    StrId id = 0;
    translate[i] = ids_of.strings.Find(t.strings.Get(i), &id) ? id : next++;
  }
  std::vector<OpKey> keys;
  keys.reserve(t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    const WorkEvent& e = t.events[i];
    keys.push_back({e.rank, e.op_id != kEmptyStr ? -1 : e.lane,
                    translate[e.op_id != kEmptyStr ? e.op_id : e.name], 0,
                    static_cast<uint32_t>(i)});
  }
  // Occurrence = rank among equal keys in event order (index breaks the tie).
  std::sort(keys.begin(), keys.end(), [](const OpKey& x, const OpKey& y) {
    return std::tie(x.rank, x.lane, x.id, x.index) < std::tie(y.rank, y.lane, y.id, y.index);
  });
  for (size_t k = 1; k < keys.size(); ++k) {
    const OpKey& p = keys[k - 1];
    OpKey& q = keys[k];
    if (p.rank == q.rank && p.lane == q.lane && p.id == q.id) q.occurrence = p.occurrence + 1;
  }
  return keys;
}

std::string Describe(const Trace& t, const WorkEvent& e) {
  return fmt::format("rank {} {}: {} ({})", e.rank, TraceLaneName(e.lane),
                     e.op_id != kEmptyStr ? t.Str(e.op_id) : std::string_view("no op_id"),
                     t.Str(e.name));
}

// Indices (into `seq`) outside one longest increasing subsequence of `seq`.
std::vector<size_t> OutsideLis(const std::vector<int64_t>& seq) {
  std::vector<size_t> tails;  // index into seq of the smallest tail of each length
  std::vector<int64_t> prev(seq.size(), -1);
  for (size_t i = 0; i < seq.size(); ++i) {
    auto it = std::lower_bound(tails.begin(), tails.end(), seq[i],
                               [&](size_t idx, int64_t v) { return seq[idx] < v; });
    if (it != tails.begin()) prev[i] = static_cast<int64_t>(*std::prev(it));
    if (it == tails.end()) {
      tails.push_back(i);
    } else {
      *it = i;
    }
  }
  std::vector<bool> in(seq.size(), false);
  for (int64_t i = tails.empty() ? -1 : static_cast<int64_t>(tails.back()); i >= 0; i = prev[i])
    in[i] = true;
  std::vector<size_t> out;
  for (size_t i = 0; i < seq.size(); ++i) {
    if (!in[i]) out.push_back(i);
  }
  return out;
}

}  // namespace

Tolerances DefaultTolerances() {
  return {{"step_time", Make(0.02, -1, "2%")},
          {"exposed_comm", Make(0.05, -1, "5%")},
          {"peak_memory", Make(0.01, -1, "1%")},
          {"op", Make(-1, 50000, "50us")}};
}

Result<Tolerances> ParseTolerances(std::string_view spec) {
  Tolerances tol = DefaultTolerances();
  static const std::vector<std::pair<std::string_view, double>> kUnits = {
      {"ns", 1},   {"us", 1e3},     {"ms", 1e6},        {"s", 1e9},
      {"B", 1},    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
      {"KB", 1e3}, {"MB", 1e6},     {"GB", 1e9}};
  size_t pos = 0;
  while (pos <= spec.size() && !spec.empty()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view item = spec.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) {
      if (comma == spec.size()) break;
      continue;
    }
    const size_t eq = item.find('=');
    const std::string name(item.substr(0, eq));
    if (eq == std::string_view::npos ||
        (name != "step_time" && name != "exposed_comm" && name != "compute" &&
         name != "peak_memory" && name != "op")) {
      return InvalidInput(
          fmt::format("--tol: \"{}\": expected metric=value with metric one of step_time, "
                      "exposed_comm, compute, peak_memory, op",
                      item));
    }
    const std::string value(item.substr(eq + 1));
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    const std::string unit(end);
    if (end == value.c_str() || !std::isfinite(number) || number < 0) {
      return InvalidInput(
          fmt::format("--tol: \"{}\": expected a number ≥ 0 with % or a unit", item));
    }
    if (unit == "%") {
      tol[name] = Make(number / 100.0, -1, value);
    } else {
      double scale = unit.empty() ? 1 : -1;
      for (const auto& [u, s] : kUnits) {
        if (unit == u) scale = s;
      }
      if (scale < 0) {
        return InvalidInput(
            fmt::format("--tol: \"{}\": unknown unit \"{}\" (expected %, ns, us, ms, s, B, "
                        "KiB, MiB, GiB, KB, MB, GB)",
                        item, unit));
      }
      tol[name] = Make(-1, number * scale, value);
    }
    if (comma == spec.size()) break;
  }
  return tol;
}

Result<DiffReport> DiffTraces(const Trace& a, const Trace& b, const Tolerances& tolerances) {
  DiffReport r;
  r.ops_a = static_cast<int64_t>(a.events.size());
  r.ops_b = static_cast<int64_t>(b.events.size());
  const std::vector<OpKey> keys_a = SortedKeys(a, a);
  const std::vector<OpKey> keys_b = SortedKeys(b, a);
  std::vector<int64_t> match_of_a(a.events.size(), -1);
  std::vector<bool> b_matched(b.events.size(), false);
  size_t ia = 0, ib = 0;
  while (ia < keys_a.size()) {
    if (ib < keys_b.size() && KeyLess(keys_b[ib], keys_a[ia])) {
      ++ib;
    } else if (ib < keys_b.size() && !KeyLess(keys_a[ia], keys_b[ib])) {
      match_of_a[keys_a[ia].index] = keys_b[ib].index;
      b_matched[keys_b[ib].index] = true;
      ++ia;
      ++ib;
    } else {
      ++ia;
    }
  }
  for (size_t i = 0; i < a.events.size(); ++i) {
    if (match_of_a[i] < 0)
      Note(&r.removed, &r.removed_count, [&] { return Describe(a, a.events[i]); });
  }
  for (size_t j = 0; j < b.events.size(); ++j) {
    if (!b_matched[j]) Note(&r.added, &r.added_count, [&] { return Describe(b, b.events[j]); });
  }

  // Order within a lane: walk A's lanes in time order and check B's order of the same ops.
  // Events are sorted by (rank, lane, start) after reading; sort positions to be safe.
  std::vector<size_t> order_a(a.events.size()), order_b(b.events.size());
  for (size_t i = 0; i < order_a.size(); ++i) order_a[i] = i;
  for (size_t j = 0; j < order_b.size(); ++j) order_b[j] = j;
  auto by_lane_time = [](const Trace& t) {
    return [&t](size_t x, size_t y) {
      const WorkEvent& p = t.events[x];
      const WorkEvent& q = t.events[y];
      return std::tie(p.rank, p.lane, p.start_ns, x) < std::tie(q.rank, q.lane, q.start_ns, y);
    };
  };
  std::sort(order_a.begin(), order_a.end(), by_lane_time(a));
  std::sort(order_b.begin(), order_b.end(), by_lane_time(b));
  std::vector<int64_t> pos_b(b.events.size());
  for (size_t k = 0; k < order_b.size(); ++k) pos_b[order_b[k]] = static_cast<int64_t>(k);
  size_t begin = 0;
  while (begin < order_a.size()) {
    size_t end = begin;
    const WorkEvent& head = a.events[order_a[begin]];
    std::vector<int64_t> seq;
    std::vector<size_t> which;
    while (end < order_a.size() && a.events[order_a[end]].rank == head.rank &&
           a.events[order_a[end]].lane == head.lane) {
      const size_t i = order_a[end];
      if (match_of_a[i] >= 0) {
        const WorkEvent& eb = b.events[static_cast<size_t>(match_of_a[i])];
        if (eb.lane != head.lane) {
          Note(&r.reordered, &r.reordered_count, [&] {
            return Describe(a, a.events[i]) +
                   fmt::format(" moved to lane {}", TraceLaneName(eb.lane));
          });
        } else {
          seq.push_back(pos_b[static_cast<size_t>(match_of_a[i])]);
          which.push_back(i);
        }
      }
      ++end;
    }
    for (size_t k : OutsideLis(seq)) {
      Note(&r.reordered, &r.reordered_count, [&] { return Describe(a, a.events[which[k]]); });
    }
    begin = end;
  }

  // Metric deltas: headline figures, then every matched op's duration.
  const TraceStats sa = ComputeStats(a, 0);
  const TraceStats sb = ComputeStats(b, 0);
  r.metrics.push_back(Compare("step_time", "ns", static_cast<double>(sa.step_time_ns),
                              static_cast<double>(sb.step_time_ns), tolerances, "step_time"));
  r.metrics.push_back(Compare("exposed_comm", "ns", static_cast<double>(sa.exposed_comm_ns),
                              static_cast<double>(sb.exposed_comm_ns), tolerances, "exposed_comm"));
  r.metrics.push_back(Compare("compute", "ns", static_cast<double>(sa.compute_ns),
                              static_cast<double>(sb.compute_ns), tolerances, "compute"));
  if (!sa.memory.empty() || !sb.memory.empty()) {
    r.metrics.push_back(Compare("peak_memory", "bytes", static_cast<double>(sa.peak_memory_bytes),
                                static_cast<double>(sb.peak_memory_bytes), tolerances,
                                "peak_memory"));
  }
  // Per-op durations: rank cheaply first, then describe only the most important ones.
  struct Candidate {
    bool over;
    double impact;
    size_t index;
  };
  std::vector<Candidate> candidates;
  const Tolerance* op_tol = tolerances.count("op") != 0 ? &tolerances.at("op") : nullptr;
  for (size_t i = 0; i < a.events.size(); ++i) {
    if (match_of_a[i] < 0) continue;
    ++r.ops_matched;
    const double da = static_cast<double>(a.events[i].dur_ns);
    const double db = static_cast<double>(b.events[static_cast<size_t>(match_of_a[i])].dur_ns);
    if (da == db) continue;
    const bool over = op_tol != nullptr && !op_tol->Allows(da, db);
    if (over) ++r.ops_over;
    const double allowed = op_tol != nullptr ? Allowed(*op_tol, da, db) : -1;
    candidates.push_back(
        {over, allowed > 0 ? std::fabs(db - da) / allowed : std::fabs(db - da), i});
  }
  auto more_important = [](const Candidate& x, const Candidate& y) {
    return x.over != y.over ? x.over : x.impact > y.impact;
  };
  if (candidates.size() > kMaxListed) {
    std::nth_element(candidates.begin(), candidates.begin() + kMaxListed, candidates.end(),
                     more_important);
    candidates.resize(kMaxListed);
  }
  for (const Candidate& c : candidates) {
    const WorkEvent& ea = a.events[c.index];
    const WorkEvent& eb = b.events[static_cast<size_t>(match_of_a[c.index])];
    r.metrics.push_back(Compare("op " + Describe(a, ea), "ns", static_cast<double>(ea.dur_ns),
                                static_cast<double>(eb.dur_ns), tolerances, "op"));
  }
  SortByImpact(&r.metrics);
  const bool metric_over =
      std::any_of(r.metrics.begin(), r.metrics.end(), [](const MetricDelta& m) { return m.over; });
  r.within_tolerance =
      !metric_over && r.added_count == 0 && r.removed_count == 0 && r.reordered_count == 0;
  return r;
}

Result<DiffReport> DiffSummaries(const nlohmann::json& a, const nlohmann::json& b,
                                 const Tolerances& tolerances, const std::string& source_a,
                                 const std::string& source_b) {
  struct Field {
    const char* key;
    const char* tol;
    const char* unit;
    double scale;
  };
  // Seconds become ns and GiB become bytes so absolute tolerances ("50us", "1GiB") apply.
  static const Field kFields[] = {
      {"step_time_s", "step_time", "ns", 1e9},
      {"exposed_comm_s", "exposed_comm", "ns", 1e9},
      {"compute_s", "compute", "ns", 1e9},
      {"idle_s", "", "ns", 1e9},
      {"overlap_ratio", "", "ratio", 1},
      {"tokens_per_s_per_gpu", "", "tokens/s", 1},
      {"tflops_per_gpu", "", "TFLOP/s", 1},
      {"mfu", "", "ratio", 1},
      {"peak_memory_allocated_gib", "peak_memory", "bytes", 1073741824.0},
      {"peak_memory_reserved_gib", "peak_memory", "bytes", 1073741824.0}};
  for (const auto* j : {&a, &b}) {
    const std::string& src = j == &a ? source_a : source_b;
    if (!j->is_object()) return InvalidInput(src + ": expected a summary object (formats.md §2)");
    if (!j->contains("step_time_s"))
      return InvalidInput(src + ": step_time_s: missing (expected a summary, formats.md §2)");
    for (const Field& f : kFields) {
      if (j->contains(f.key) && !(*j)[f.key].is_number()) {
        return InvalidInput(
            fmt::format("{}: {}: expected a number, got {}", src, f.key, (*j)[f.key].dump()));
      }
    }
  }
  DiffReport r;
  for (const Field& f : kFields) {
    if (!a.contains(f.key) && !b.contains(f.key)) continue;
    if (!a.contains(f.key) || !b.contains(f.key)) {
      if (a.contains(f.key)) {
        Note(&r.removed, &r.removed_count, [&] { return std::string(f.key); });
      } else {
        Note(&r.added, &r.added_count, [&] { return std::string(f.key); });
      }
      continue;
    }
    r.metrics.push_back(Compare(f.key, f.unit, a[f.key].get<double>() * f.scale,
                                b[f.key].get<double>() * f.scale, tolerances, f.tol));
  }
  const auto ca = a.value("comm_s", nlohmann::json::object());
  const auto cb = b.value("comm_s", nlohmann::json::object());
  if (ca.is_object() && cb.is_object()) {
    for (const auto& [k, v] : ca.items()) {
      if (cb.contains(k) && v.is_number() && cb[k].is_number()) {
        r.metrics.push_back(Compare("comm_s." + k, "ns", v.get<double>() * 1e9,
                                    cb[k].get<double>() * 1e9, tolerances, ""));
      }
    }
  }
  SortByImpact(&r.metrics);
  r.within_tolerance =
      r.added_count == 0 && r.removed_count == 0 &&
      std::none_of(r.metrics.begin(), r.metrics.end(), [](const MetricDelta& m) { return m.over; });
  return r;
}

nlohmann::json DiffToJson(const DiffReport& report, size_t max_metrics) {
  using nlohmann::json;
  json j;
  j["within_tolerance"] = report.within_tolerance;
  j["ops"] = {{"a", report.ops_a},
              {"b", report.ops_b},
              {"matched", report.ops_matched},
              {"over_tolerance", report.ops_over}};
  j["structural"] = {{"added", report.added},
                     {"removed", report.removed},
                     {"reordered", report.reordered},
                     {"added_count", report.added_count},
                     {"removed_count", report.removed_count},
                     {"reordered_count", report.reordered_count}};
  j["metrics"] = json::array();
  for (size_t i = 0; i < report.metrics.size() && i < max_metrics; ++i) {
    const MetricDelta& m = report.metrics[i];
    j["metrics"].push_back({{"metric", m.metric},
                            {"unit", m.unit},
                            {"a", m.a},
                            {"b", m.b},
                            {"delta", m.b - m.a},
                            {"relative", m.a != 0 ? (m.b - m.a) / std::fabs(m.a) : 0.0},
                            {"tolerance", m.tolerance},
                            {"over", m.over}});
  }
  j["metrics_left_out"] =
      report.metrics.size() > max_metrics ? report.metrics.size() - max_metrics : 0;
  return j;
}

}  // namespace shardscope
