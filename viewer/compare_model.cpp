#include "viewer/compare_model.h"

#include <algorithm>
#include <cstdlib>
#include <map>
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

// (rank, op_id) → summed events, in (rank, op_id text) order.
std::map<std::pair<int, std::string>, OpSum> SumOps(const TraceView& v) {
  std::unordered_map<uint64_t, OpSum> by_id;
  const Trace& t = v.trace;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const WorkEvent& e = t.events[i];
    if (e.op_id == kEmptyStr) continue;
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(e.rank)) << 32) | e.op_id;
    auto [it, fresh] = by_id.try_emplace(key);
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
  std::map<std::pair<int, std::string>, OpSum> out;
  for (auto& [key, sum] : by_id) {
    const int rank = static_cast<int>(static_cast<int32_t>(key >> 32));
    out.emplace(std::make_pair(rank, std::string(t.Str(static_cast<StrId>(key)))), std::move(sum));
  }
  return out;
}

// The op_ids an op may be known by in another tree: itself, then with leading FQN parts of its
// unit dropped ("fwd/model.layers.3/compute" → "fwd/layers.3/compute").
std::vector<std::string> UnitSuffixForms(const std::string& op_id) {
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

CompareRow MakeRow(int rank, const std::string& op_id, const std::string& op_id_b, const OpSum* a,
                   const OpSum* b) {
  CompareRow r;
  r.op_id = op_id;
  r.op_id_b = b ? op_id_b : "";
  r.rank = rank;
  const OpSum& any = a ? *a : *b;
  r.lane = any.lane;
  r.kind = any.kind;
  if (a) {
    r.dur_a_ns = a->dur_ns;
    r.exposed_a_ns = a->exposed_ns;
    r.start_a_ns = a->start_ns;
    r.end_a_ns = a->end_ns;
    r.events_a = a->events;
  }
  if (b) {
    r.dur_b_ns = b->dur_ns;
    r.exposed_b_ns = b->exposed_ns;
    r.start_b_ns = b->start_ns;
    r.end_b_ns = b->end_ns;
    r.events_b = b->events;
  }
  return r;
}

}  // namespace

std::vector<CompareRow> BuildCompareRows(const TraceView& a, const TraceView& b) {
  auto ops_a = SumOps(a);
  auto ops_b = SumOps(b);
  std::vector<CompareRow> rows;
  // Exact op_ids first.
  for (auto it = ops_a.begin(); it != ops_a.end();) {
    auto found = ops_b.find(it->first);
    if (found == ops_b.end()) {
      ++it;
      continue;
    }
    rows.push_back(
        MakeRow(it->first.first, it->first.second, it->first.second, &it->second, &found->second));
    ops_b.erase(found);
    it = ops_a.erase(it);
  }
  // Then the same op under a shorter unit FQN, in either direction.
  for (int pass = 0; pass < 2; ++pass) {
    auto& from = pass == 0 ? ops_a : ops_b;
    auto& to = pass == 0 ? ops_b : ops_a;
    for (auto it = from.begin(); it != from.end();) {
      bool joined = false;
      for (const std::string& form : UnitSuffixForms(it->first.second)) {
        auto found = to.find({it->first.first, form});
        if (found == to.end()) continue;
        const OpSum* sa = pass == 0 ? &it->second : &found->second;
        const OpSum* sb = pass == 0 ? &found->second : &it->second;
        const std::string& name_a = pass == 0 ? it->first.second : form;
        const std::string& name_b = pass == 0 ? form : it->first.second;
        rows.push_back(MakeRow(it->first.first, name_a, name_b, sa, sb));
        to.erase(found);
        joined = true;
        break;
      }
      it = joined ? from.erase(it) : std::next(it);
    }
  }
  for (auto& [key, sum] : ops_a) rows.push_back(MakeRow(key.first, key.second, "", &sum, nullptr));
  for (auto& [key, sum] : ops_b)
    rows.push_back(MakeRow(key.first, key.second, key.second, nullptr, &sum));
  std::stable_sort(rows.begin(), rows.end(), [](const CompareRow& x, const CompareRow& y) {
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
