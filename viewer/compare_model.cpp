#include "viewer/compare_model.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/trace/op_id.h"

namespace shardscope::viewer {

double CompareRow::delta_pct() const {
  if (!in_a() || !in_b() || dur_a_ns <= 0) return 0;
  return 100.0 * static_cast<double>(dur_b_ns - dur_a_ns) / static_cast<double>(dur_a_ns);
}

int64_t CompareRow::impact_ns() const {
  if (!in_a() || !in_b()) return 0;
  if (lane == kLaneCompute) return std::llabs(dur_b_ns - dur_a_ns);
  return std::llabs(exposed_b_ns - exposed_a_ns);
}

namespace {

struct OpSum {
  int lane = 0;
  ItemKind kind = ItemKind::kCompute;
  int64_t dur_ns = 0, exposed_ns = 0, start_ns = 0, end_ns = 0;
  std::vector<uint32_t> events;
};

using OpKey = uint64_t;  // rank in the high half, the op_id's StrId in the low half

OpKey Key(int rank, StrId id) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32) | id;
}
int RankOf(OpKey k) { return static_cast<int>(static_cast<int32_t>(k >> 32)); }
StrId IdOf(OpKey k) { return static_cast<StrId>(k & 0xFFFFFFFFu); }

// (rank, op_id) → summed events.
std::unordered_map<OpKey, OpSum> SumOps(const TraceView& v) {
  std::unordered_map<OpKey, OpSum> by_id;
  const Trace& t = v.trace;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const WorkEvent& e = t.events[i];
    if (e.op_id == kEmptyStr) continue;
    auto [it, fresh] = by_id.try_emplace(Key(e.rank, e.op_id));
    OpSum& s = it->second;
    const int64_t start = e.start_ns - v.origin_ns;
    if (fresh) {
      s.lane = e.lane;
      s.kind = KindOf(t, e);
      s.start_ns = start;
      s.end_ns = start + e.dur_ns;
    }
    s.dur_ns += e.dur_ns;
    s.exposed_ns += v.exposed_ns[i];
    s.start_ns = std::min(s.start_ns, start);
    s.end_ns = std::max(s.end_ns, start + e.dur_ns);
    s.events.push_back(static_cast<uint32_t>(i));
  }
  return by_id;
}

// The op_ids an op may be known by in another tree: with leading FQN parts of its unit dropped
// ("fwd/model.layers.3/compute" → "fwd/layers.3/compute").
std::vector<std::string> UnitSuffixForms(std::string_view op_id) {
  std::vector<std::string> forms;
  Result<OpId> parsed = ParseOpId(op_id);
  if (!parsed.ok()) return forms;
  OpId id = *parsed;
  for (size_t dot = id.unit.find('.'); dot != std::string::npos; dot = id.unit.find('.')) {
    id.unit = id.unit.substr(dot + 1);
    forms.push_back(FormatOpId(id));
  }
  return forms;
}

// Moves the summed events into the row.
CompareRow MakeRow(int rank, const TraceView& va, StrId id_a, const TraceView& vb, StrId id_b,
                   OpSum* a, OpSum* b) {
  CompareRow r;
  r.op_id = a ? va.trace.Str(id_a) : vb.trace.Str(id_b);
  if (b) r.op_id_b = vb.trace.Str(id_b);
  r.id_a = a ? id_a : kEmptyStr;
  r.id_b = b ? id_b : kEmptyStr;
  r.rank = rank;
  const OpSum& any = a ? *a : *b;
  r.lane = any.lane;
  r.kind = any.kind;
  if (a) {
    r.dur_a_ns = a->dur_ns;
    r.exposed_a_ns = a->exposed_ns;
    r.start_a_ns = a->start_ns;
    r.end_a_ns = a->end_ns;
    r.events_a = std::move(a->events);
  }
  if (b) {
    r.dur_b_ns = b->dur_ns;
    r.exposed_b_ns = b->exposed_ns;
    r.start_b_ns = b->start_ns;
    r.end_b_ns = b->end_ns;
    r.events_b = std::move(b->events);
  }
  return r;
}

}  // namespace

std::vector<CompareRow> BuildCompareRows(const TraceView& a, const TraceView& b) {
  std::unordered_map<OpKey, OpSum> ops_a = SumOps(a);
  std::unordered_map<OpKey, OpSum> ops_b = SumOps(b);
  std::vector<CompareRow> rows;
  rows.reserve(std::max(ops_a.size(), ops_b.size()));
  // Exact op_ids first, through the string tables (each distinct op_id looked up once).
  std::unordered_map<StrId, StrId> a_to_b;
  std::vector<OpKey> joined;
  for (auto& [ka, sa] : ops_a) {
    auto [t, fresh] = a_to_b.try_emplace(IdOf(ka), kEmptyStr);
    if (fresh) b.trace.strings.Find(a.trace.Str(IdOf(ka)), &t->second);
    if (t->second == kEmptyStr) continue;
    auto fb = ops_b.find(Key(RankOf(ka), t->second));
    if (fb == ops_b.end()) continue;
    rows.push_back(MakeRow(RankOf(ka), a, IdOf(ka), b, t->second, &sa, &fb->second));
    ops_b.erase(fb);
    joined.push_back(ka);
  }
  for (OpKey k : joined) ops_a.erase(k);
  // Then the same op under a shorter unit FQN, in either direction (only what is left).
  std::map<std::pair<int, std::string>, OpKey> left[2];
  for (const auto& [k, sum] : ops_a)
    left[0].emplace(std::make_pair(RankOf(k), std::string(a.trace.Str(IdOf(k)))), k);
  for (const auto& [k, sum] : ops_b)
    left[1].emplace(std::make_pair(RankOf(k), std::string(b.trace.Str(IdOf(k)))), k);
  for (int pass = 0; pass < 2; ++pass) {
    auto& from = left[pass];
    auto& to = left[1 - pass];
    for (auto it = from.begin(); it != from.end();) {
      bool matched = false;
      for (const std::string& form : UnitSuffixForms(it->first.second)) {
        auto found = to.find({it->first.first, form});
        if (found == to.end()) continue;
        const OpKey ka = pass == 0 ? it->second : found->second;
        const OpKey kb = pass == 0 ? found->second : it->second;
        rows.push_back(
            MakeRow(it->first.first, a, IdOf(ka), b, IdOf(kb), &ops_a.at(ka), &ops_b.at(kb)));
        ops_a.erase(ka);
        ops_b.erase(kb);
        to.erase(found);
        matched = true;
        break;
      }
      it = matched ? from.erase(it) : std::next(it);
    }
  }
  for (auto& [k, sum] : ops_a) rows.push_back(MakeRow(RankOf(k), a, IdOf(k), b, 0, &sum, nullptr));
  for (auto& [k, sum] : ops_b) rows.push_back(MakeRow(RankOf(k), a, 0, b, IdOf(k), nullptr, &sum));
  // A deterministic base order (the hash maps' is not), then the default: impact.
  std::sort(rows.begin(), rows.end(), [](const CompareRow& x, const CompareRow& y) {
    if (x.rank != y.rank) return x.rank < y.rank;
    return x.op_id < y.op_id;
  });
  SortCompareRows(&rows, CompareColumn::kImpact, /*descending=*/true);
  return rows;
}

void SortCompareRows(std::vector<CompareRow>* rows, CompareColumn column, bool descending) {
  auto less = [column](const CompareRow& x, const CompareRow& y) {
    switch (column) {
      case CompareColumn::kOp:
        return x.op_id < y.op_id;
      case CompareColumn::kRank:
        return x.rank < y.rank;
      case CompareColumn::kA:
        return x.dur_a_ns < y.dur_a_ns;
      case CompareColumn::kB:
        return x.dur_b_ns < y.dur_b_ns;
      case CompareColumn::kDelta:
        return x.delta_ns() < y.delta_ns();
      case CompareColumn::kDeltaPct:
        return x.delta_pct() < y.delta_pct();
      case CompareColumn::kImpact:
        return x.impact_ns() < y.impact_ns();
    }
    return false;
  };
  if (descending) {
    std::stable_sort(rows->begin(), rows->end(),
                     [&](const CompareRow& x, const CompareRow& y) { return less(y, x); });
  } else {
    std::stable_sort(rows->begin(), rows->end(), less);
  }
}

bool RowOverlaps(const CompareRow& row, int64_t lo_ns, int64_t hi_ns) {
  const bool a = row.in_a() && row.start_a_ns < hi_ns && row.end_a_ns > lo_ns;
  const bool b = row.in_b() && row.start_b_ns < hi_ns && row.end_b_ns > lo_ns;
  return a || b;
}

}  // namespace shardscope::viewer
