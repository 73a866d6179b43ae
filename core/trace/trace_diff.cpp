#include "core/trace/trace_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <tuple>

#include "core/trace/trace_stats.h"
#include "core/util/terminal_text.h"
#include "core/util/units.h"

namespace shardscope {

double Tolerance::Allowed(double a) const {
  double allowed = -1;
  if (absolute >= 0) allowed = absolute;
  if (relative >= 0) allowed = std::max(allowed, relative * std::fabs(a));
  return allowed;
}

bool Tolerance::Allows(double a, double b) const {
  const double d = b - a;
  if (side == ToleranceSide::kIncrease && d <= 0) return true;
  if (side == ToleranceSide::kDecrease && d >= 0) return true;
  const double allowed = Allowed(a);
  return allowed < 0 || std::fabs(d) <= allowed;
}

std::optional<double> MetricDelta::relative() const {
  if (a == 0) return b == 0 ? std::optional<double>(0.0) : std::nullopt;
  return (b - a) / std::fabs(a);
}

namespace {

// Lists in a report are capped (the counts stay exact) so two unrelated million-event traces
// do not produce a gigabyte of text.
constexpr size_t kMaxDifferencesListed = 1000;

void Note(std::vector<std::string>* list, int64_t* count,
          const std::function<std::string()>& text) {
  ++*count;
  if (list->size() < kMaxDifferencesListed) list->push_back(text());
}

Tolerance Make(double rel, double abs, std::string text) {
  Tolerance t;
  t.relative = rel;
  t.absolute = abs;
  t.text = std::move(text);
  return t;
}

// `a`, `b` in `unit`; `to_base` converts them to the tolerance's base unit (ns or bytes).
MetricDelta Compare(std::string metric, std::string unit, double a, double b, double to_base,
                    const Tolerances& tol, const std::string& tol_name) {
  MetricDelta m;
  m.metric = std::move(metric);
  m.unit = std::move(unit);
  m.a = a;
  m.b = b;
  auto it = tol.find(tol_name);
  if (it == tol.end()) return m;
  const double base_a = a * to_base, base_b = b * to_base;
  const double d = std::fabs(base_b - base_a);
  m.tolerance = it->second.text;
  m.over = !it->second.Allows(base_a, base_b);
  const double allowed = it->second.Allowed(base_a);
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

// Reads `fits` from two summaries (null, or no `fits`, on either side: nothing to compare) and
// whether either is a failed run. The memory tolerance does not enter: not fitting any more is
// a failure by itself.
Status CompareOutcomes(const nlohmann::json& a, const nlohmann::json& b,
                       const std::string& source_a, const std::string& source_b, DiffReport* r) {
  const nlohmann::json* fits[2] = {nullptr, nullptr};
  const nlohmann::json* docs[2] = {&a, &b};
  for (int k = 0; k < 2; ++k) {
    if (!docs[k]->is_object() || !docs[k]->contains("fits")) continue;
    fits[k] = &(*docs[k])["fits"];
    if (!fits[k]->is_boolean()) {
      return InvalidInput(fmt::format("{}: fits: expected true or false, got {}",
                                      k == 0 ? source_a : source_b, fits[k]->dump()));
    }
  }
  // A measured run that failed (run's `failure`: a timeout, out of memory) stops at the
  // failure: its figures are of part of a step, which any tolerance could pass.
  for (int k = 0; k < 2; ++k) {
    if (!docs[k]->is_object() || !docs[k]->contains("failure")) continue;
    const nlohmann::json& f = (*docs[k])["failure"];
    if (f.is_null()) continue;
    if (!f.is_string()) {
      return InvalidInput(fmt::format("{}: failure: expected the run's error text, got {}",
                                      k == 0 ? source_a : source_b, Shortened(f.dump())));
    }
    r->failed_runs.push_back(fmt::format("{} is a failed run: {}", k == 0 ? "A" : "B",
                                         Shortened(f.get<std::string>(), 200)));
  }
  if (fits[0] == nullptr || fits[1] == nullptr) return Status::Ok();
  const bool fa = fits[0]->get<bool>(), fb = fits[1]->get<bool>();
  if (fa && !fb) r->fit_change = "fits → does not fit";
  if (!fa && fb) r->fit_change = "does not fit → fits";
  r->fit_lost = fa && !fb;
  return Status::Ok();
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

namespace {

struct Unit {
  std::string_view name;
  double scale;  // to ns or bytes
};
constexpr Unit kTimeUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
constexpr Unit kByteUnits[] = {{"B", 1},    {"KiB", kKiB}, {"MiB", kMiB}, {"GiB", kGiB},
                               {"KB", 1e3}, {"MB", 1e6},   {"GB", 1e9}};
constexpr std::string_view kTimeMetrics[] = {"step_time", "exposed_comm", "compute", "op"};

std::string UnitList(std::span<const Unit> units) {
  std::string out;
  for (const Unit& u : units) out += (out.empty() ? "" : ", ") + std::string(u.name);
  return out;
}

}  // namespace

std::string ToleranceHelp() {
  std::string defaults;
  const Tolerances d = DefaultTolerances();
  for (const auto& [name, t] : d) defaults += (defaults.empty() ? "" : ",") + name + "=" + t.text;
  return fmt::format(
      "metric=[+|-]N% or metric=[+|-]N<unit> or metric=off, comma-separated. Metrics: "
      "step_time, exposed_comm, compute, op (units {}) and peak_memory (units {}; the allocated "
      "and the reserved peak). "
      "N% is of "
      "A's value; +N fails only on an increase (a regression), -N only on a decrease, N both "
      "ways. Defaults: {} (compute off); metrics not given keep them. A job that fits in A and "
      "not in B always fails.",
      UnitList(kTimeUnits), UnitList(kByteUnits), defaults);
}

Result<Tolerances> ParseTolerances(std::string_view spec) {
  Tolerances tol = DefaultTolerances();
  std::set<std::string> given;
  size_t pos = 0;
  while (pos <= spec.size() && !spec.empty()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view item = spec.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) {
      return InvalidInput(fmt::format(
          "--tol: \"{}\": an empty item (a stray comma?); expected metric=value[,metric=value…]",
          spec));
    }
    const size_t eq = item.find('=');
    const std::string name(item.substr(0, eq));
    if (eq != std::string_view::npos && !given.insert(name).second) {
      // The last one used to win silently: `step_time=2%,step_time=30%` passed at 30%.
      return InvalidInput(fmt::format("--tol: {} is given twice", name));
    }
    const bool is_time =
        std::find(std::begin(kTimeMetrics), std::end(kTimeMetrics), name) != std::end(kTimeMetrics);
    if (eq == std::string_view::npos || (!is_time && name != "peak_memory")) {
      return InvalidInput(
          fmt::format("--tol: \"{}\": expected metric=value with metric one of step_time, "
                      "exposed_comm, compute, op, peak_memory",
                      item));
    }
    const std::string value(item.substr(eq + 1));
    if (value == "off" || value == "none") {
      tol.erase(name);
      if (comma == spec.size()) break;
      continue;
    }
    ToleranceSide side = ToleranceSide::kBoth;
    std::string magnitude = value;
    if (!magnitude.empty() && (magnitude[0] == '+' || magnitude[0] == '-')) {
      side = magnitude[0] == '+' ? ToleranceSide::kIncrease : ToleranceSide::kDecrease;
      magnitude.erase(0, 1);
    }
    // Decimal only (std::from_chars, not strtod: "0x10%" read as 16%).
    double number = 0;
    const auto [end, ec] =
        std::from_chars(magnitude.data(), magnitude.data() + magnitude.size(), number);
    const std::string unit(end, static_cast<const char*>(magnitude.data() + magnitude.size()));
    const bool digits_first =
        !magnitude.empty() && (std::isdigit(magnitude[0]) != 0 || magnitude[0] == '.');
    if (!digits_first || ec != std::errc() || !std::isfinite(number) || number < 0) {
      return InvalidInput(fmt::format(
          "--tol: \"{}\": expected [+|-] and a number ≥ 0 with % or a unit, or off", item));
    }
    const std::span<const Unit> units =
        is_time ? std::span<const Unit>(kTimeUnits) : std::span<const Unit>(kByteUnits);
    Tolerance t;
    if (unit == "%") {
      t = Make(number / 100.0, -1, value);
    } else {
      const auto u =
          std::find_if(units.begin(), units.end(), [&](const Unit& x) { return x.name == unit; });
      if (u == units.end()) {
        return InvalidInput(fmt::format(
            "--tol: \"{}\": {} (expected % or one of {} for {})", item,
            unit.empty() ? std::string("a unit is required") : "unknown unit \"" + unit + "\"",
            UnitList(units), name));
      }
      // 1e308 s is finite, but not in nanoseconds: a limit nothing can reach is `off`.
      if (!std::isfinite(number * u->scale)) {
        return InvalidInput(fmt::format(
            "--tol: \"{}\": too large (past the double range in {}); off means no limit", item,
            is_time ? "nanoseconds" : "bytes"));
      }
      t = Make(-1, number * u->scale, value);
    }
    t.side = side;
    tol[name] = t;
    if (comma == spec.size()) break;
  }
  return tol;
}

namespace {

std::set<int> RanksOf(const Trace& t) {
  std::set<int> ranks;
  for (const WorkEvent& e : t.events) ranks.insert(e.rank);
  return ranks;
}

// `t` with `rank`'s events, counters and markers only.
void KeepRank(Trace* t, int rank) {
  const auto other = [rank](const auto& x) { return x.rank != rank; };
  std::erase_if(t->events, other);
  std::erase_if(t->counters, other);
  std::erase_if(t->markers, other);
}

void RenumberRanks(Trace* t, const std::map<int, int>& to) {
  auto renumber = [&](auto& items) {
    for (auto& x : items) {
      if (const auto it = to.find(x.rank); it != to.end()) x.rank = it->second;
    }
  };
  renumber(t->events);
  renumber(t->counters);
  renumber(t->markers);
}

}  // namespace

// What `run --trace o{rank}.json` writes beside a prediction: one rank's file against a
// predicted trace whose roles each stand for several ranks (its metadata's `roles`: a role's
// `rank` is the first of its `ranks_like` contiguous ranks), or against a trace of more ranks.
// Such a rank is compared with the role that stands for it, and only the ranks both hold are
// compared; each step is a note. A prediction joined on (rank, op_id) found nothing of rank 1,
// and a pipeline's rank 0 file failed as "removed" on stage 1's every op.
Result<DiffReport> DiffTraces(const Trace& a_in, const Trace& b_in, const Tolerances& tolerances) {
  std::vector<std::string> notes;
  std::optional<Trace> a_own, b_own;
  std::set<int> ranks_a = RanksOf(a_in), ranks_b = RanksOf(b_in);
  // The one-rank file `single` (side `single_side`) against the prediction `pred` (its roles):
  // renumbered to the rank of the role that stands for it. Either side may be the prediction.
  auto join_role = [&notes](const Trace& pred, const std::set<int>& pred_ranks, char pred_side,
                            const Trace& single, std::set<int>& single_ranks, char single_side,
                            std::optional<Trace>& single_own) {
    const auto roles = pred.metadata.extra.find("roles");
    if (roles == pred.metadata.extra.end() || !roles->is_array() || single_ranks.size() != 1 ||
        pred_ranks.contains(*single_ranks.begin())) {
      return;
    }
    const int r = *single_ranks.begin();
    for (const nlohmann::json& role : *roles) {
      if (!role.is_object()) continue;
      const int first = role.value("rank", -1), like = role.value("ranks_like", 0);
      if (first < 0 || r < first || r >= first + like || !pred_ranks.contains(first)) continue;
      single_own = single;
      RenumberRanks(&*single_own, {{r, first}});
      notes.push_back(fmt::format(
          "{}'s rank {} compared with {}'s role '{}' (rank {}, which stands for ranks {} to {})",
          single_side, r, pred_side, role.value("name", std::string("?")), first, first,
          first + like - 1));
      single_ranks = {first};
      return;
    }
  };
  join_role(a_in, ranks_a, 'A', b_in, ranks_b, 'B', b_own);
  if (!b_own) join_role(b_in, ranks_b, 'B', a_in, ranks_a, 'A', a_own);
  if (ranks_a.size() > 1 && ranks_b.size() == 1 && ranks_a.contains(*ranks_b.begin())) {
    if (!a_own) a_own = a_in;
    KeepRank(&*a_own, *ranks_b.begin());
    notes.push_back(
        fmt::format("B holds rank {} alone: A's other ranks are left out", *ranks_b.begin()));
  } else if (ranks_b.size() > 1 && ranks_a.size() == 1 && ranks_b.contains(*ranks_a.begin())) {
    if (!b_own) b_own = b_in;
    KeepRank(&*b_own, *ranks_a.begin());
    notes.push_back(
        fmt::format("A holds rank {} alone: B's other ranks are left out", *ranks_a.begin()));
  }
  const Trace& a = a_own ? *a_own : a_in;
  const Trace& b = b_own ? *b_own : b_in;
  DiffReport r;
  r.notes = std::move(notes);
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
                              static_cast<double>(sb.step_time_ns), 1, tolerances, "step_time"));
  r.metrics.push_back(Compare("exposed_comm", "ns", static_cast<double>(sa.exposed_comm_ns),
                              static_cast<double>(sb.exposed_comm_ns), 1, tolerances,
                              "exposed_comm"));
  r.metrics.push_back(Compare("compute", "ns", static_cast<double>(sa.compute_ns),
                              static_cast<double>(sb.compute_ns), 1, tolerances, "compute"));
  if (!sa.memory.empty() || !sb.memory.empty()) {
    r.metrics.push_back(Compare("peak_memory", "bytes", static_cast<double>(sa.peak_memory_bytes),
                                static_cast<double>(sb.peak_memory_bytes), 1, tolerances,
                                "peak_memory"));
  }
  // What decides whether a job fits: under the same tolerance, as a summary's two peaks are.
  // Only where both traces carry the series: one without it (a profiler trace, an older run) is
  // not a -100% regression.
  if (sa.peak_reserved_bytes > 0 && sb.peak_reserved_bytes > 0) {
    r.metrics.push_back(
        Compare("peak_memory_reserved", "bytes", static_cast<double>(sa.peak_reserved_bytes),
                static_cast<double>(sb.peak_reserved_bytes), 1, tolerances, "peak_memory"));
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
    const double allowed = op_tol != nullptr ? op_tol->Allowed(da) : -1;
    candidates.push_back(
        {over, allowed > 0 ? std::fabs(db - da) / allowed : std::fabs(db - da), i});
  }
  auto more_important = [](const Candidate& x, const Candidate& y) {
    return x.over != y.over ? x.over : x.impact > y.impact;
  };
  if (candidates.size() > kMaxDifferencesListed) {
    std::nth_element(candidates.begin(), candidates.begin() + kMaxDifferencesListed,
                     candidates.end(), more_important);
    candidates.resize(kMaxDifferencesListed);
  }
  for (const Candidate& c : candidates) {
    const WorkEvent& ea = a.events[c.index];
    const WorkEvent& eb = b.events[static_cast<size_t>(match_of_a[c.index])];
    r.metrics.push_back(Compare("op " + Describe(a, ea), "ns", static_cast<double>(ea.dur_ns),
                                static_cast<double>(eb.dur_ns), 1, tolerances, "op"));
  }
  SortByImpact(&r.metrics);
  // Named by the file where there is one: "B's metadata summary" left the user to guess which.
  auto summary_of = [](const Trace& t, const char* side) {
    return t.import.path.empty() ? fmt::format("{}'s metadata summary", side)
                                 : fmt::format("{}: metadata.summary", t.import.path);
  };
  SS_RETURN_IF_ERROR(CompareOutcomes(a.metadata.summary, b.metadata.summary, summary_of(a, "A"),
                                     summary_of(b, "B"), &r));
  const bool metric_over =
      std::any_of(r.metrics.begin(), r.metrics.end(), [](const MetricDelta& m) { return m.over; });
  r.within_tolerance = !metric_over && !r.fit_lost && r.failed_runs.empty() && r.added_count == 0 &&
                       r.removed_count == 0 && r.reordered_count == 0;
  return r;
}

// A summary's figure as diff compares it: a finite number, at least 0 (a step time above 0), and
// at most kMaxSummaryFigure in its unit, where seconds, GiB, tokens/s and ratios all stay far
// from what a step can be: beyond it the conversion to ns or bytes overflows, and a −100%
// change read as within every tolerance.
namespace {
constexpr double kMaxSummaryFigure = 1e12;
// The groups of figures by kind and purpose that diff reports (and checks), not limits.
constexpr const char* kCommGroups[] = {"comm_s", "comm_by_purpose_s", "exposed_comm_by_purpose_s"};
Status CheckSummaryFigure(const std::string& src, const std::string& key, const nlohmann::json& v,
                          bool positive) {
  const double x = v.is_number() ? v.get<double>() : std::nan("");
  if (!v.is_number() || !std::isfinite(x) || x < 0 || (positive && x == 0) ||
      x > kMaxSummaryFigure) {
    return InvalidInput(fmt::format("{}: {}: expected a number {} 0 and at most {:g}, got {}", src,
                                    key, positive ? ">" : ">=", kMaxSummaryFigure, v.dump()));
  }
  return Status::Ok();
}
}  // namespace

Status CheckSummaryDocument(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) {
    return InvalidInput(source +
                        ": expected a trace or a summary object (`simulate --summary`; "
                        "docs/summary.md)");
  }
  if (!j.contains("step_time_s")) {
    return InvalidInput(source +
                        ": neither a trace (no traceEvents) nor a summary (no "
                        "step_time_s; `simulate --summary` writes one, docs/summary.md)");
  }
  return Status::Ok();
}

Result<DiffReport> DiffSummaries(const nlohmann::json& a, const nlohmann::json& b,
                                 const Tolerances& tolerances, const std::string& source_a,
                                 const std::string& source_b) {
  struct Field {
    const char* key;
    const char* tol;
    const char* unit;
    double to_base;
  };
  // Values stay in the field's unit (what its name says); `to_base` turns them into ns or
  // bytes for absolute tolerances ("50us", "1GiB").
  static const Field kFields[] = {{"step_time_s", "step_time", "s", 1e9},
                                  {"exposed_comm_s", "exposed_comm", "s", 1e9},
                                  {"compute_s", "compute", "s", 1e9},
                                  {"idle_s", "", "s", 1e9},
                                  {"overlap_ratio", "", "ratio", 1},
                                  {"tokens_per_s_per_gpu", "", "tokens/s", 1},
                                  {"tflops_per_gpu", "", "TFLOP/s", 1},
                                  {"mfu", "", "ratio", 1},
                                  {"peak_memory_allocated_gib", "peak_memory", "GiB", kGiB},
                                  {"peak_memory_reserved_gib", "peak_memory", "GiB", kGiB}};
  for (const auto* j : {&a, &b}) {
    const std::string& src = j == &a ? source_a : source_b;
    SS_RETURN_IF_ERROR(CheckSummaryDocument(*j, src));
    for (const Field& f : kFields) {
      if (j->contains(f.key)) {
        SS_RETURN_IF_ERROR(
            CheckSummaryFigure(src, f.key, (*j)[f.key], std::string_view(f.key) == "step_time_s"));
      }
    }
    for (const char* group : kCommGroups) {
      const auto it = j->find(group);
      if (it == j->end() || it->is_null()) continue;
      if (!it->is_object()) {
        return InvalidInput(
            fmt::format("{}: {}: expected an object of figures (seconds by name), "
                        "got {}",
                        src, group, it->dump()));
      }
      for (const auto& [k, v] : it->items()) {
        SS_RETURN_IF_ERROR(CheckSummaryFigure(src, std::string(group) + "." + k, v, false));
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
    r.metrics.push_back(Compare(f.key, f.unit, a[f.key].get<double>(), b[f.key].get<double>(),
                                f.to_base, tolerances, f.tol));
  }
  // Communication by kind and by purpose (FSDP all-gather, TP, ...): reported, not limited. A
  // figure on one side only is 0 on the other (a kind or purpose that did not run): TP's
  // communication new in B is listed as new, not left out.
  for (const char* group : kCommGroups) {
    const nlohmann::json empty = nlohmann::json::object();
    const nlohmann::json& ca = a.contains(group) && a[group].is_object() ? a[group] : empty;
    const nlohmann::json& cb = b.contains(group) && b[group].is_object() ? b[group] : empty;
    std::set<std::string> names;
    for (const auto& [k, v] : ca.items()) names.insert(k);
    for (const auto& [k, v] : cb.items()) names.insert(k);
    for (const std::string& k : names) {
      const double va = ca.contains(k) ? ca[k].get<double>() : 0.0;
      const double vb = cb.contains(k) ? cb[k].get<double>() : 0.0;
      r.metrics.push_back(Compare(std::string(group) + "." + k, "s", va, vb, 1e9, tolerances, ""));
    }
  }
  SortByImpact(&r.metrics);
  SS_RETURN_IF_ERROR(CompareOutcomes(a, b, source_a, source_b, &r));
  r.within_tolerance =
      r.added_count == 0 && r.removed_count == 0 && !r.fit_lost && r.failed_runs.empty() &&
      std::none_of(r.metrics.begin(), r.metrics.end(), [](const MetricDelta& m) { return m.over; });
  return r;
}

nlohmann::json DiffToJson(const DiffReport& report, size_t max_metrics) {
  using nlohmann::json;
  json j;
  j["within_tolerance"] = report.within_tolerance;
  j["fit_change"] = report.fit_change.empty() ? json(nullptr) : json(report.fit_change);
  j["failed_runs"] = report.failed_runs;
  j["notes"] = report.notes;
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
                            {"relative", m.relative() ? json(*m.relative()) : json(nullptr)},
                            {"tolerance", m.tolerance},
                            {"over", m.over}});
  }
  j["metrics_left_out"] =
      report.metrics.size() > max_metrics ? report.metrics.size() - max_metrics : 0;
  return j;
}

}  // namespace shardscope
