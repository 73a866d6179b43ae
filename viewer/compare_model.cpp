#include "viewer/compare_model.h"

#include <algorithm>
#include <cstdlib>
#include <future>
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
  int32_t count = 0;
};

using OpKey = uint64_t;  // rank in the high half, the op_id's StrId in the low half

OpKey Key(int rank, StrId id) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32) | id;
}
int RankOf(OpKey k) { return static_cast<int>(static_cast<int32_t>(k >> 32)); }
StrId IdOf(OpKey k) { return static_cast<StrId>(k & 0xFFFFFFFFu); }

// The summed operations of one trace, found by (rank, StrId) with one array index per rank
// (string ids are dense), which keeps a million-event join cheap.
struct OpTable {
  std::vector<OpSum> ops;
  std::vector<OpKey> keys;
  std::vector<bool> taken;
  std::unordered_map<int, std::vector<int32_t>> index;  // rank → StrId → ops index (-1 none)

  int32_t Find(int rank, StrId id) const {
    const auto it = index.find(rank);
    return it == index.end() || id >= it->second.size() ? -1 : it->second[id];
  }
};

OpTable SumOps(const TraceView& v) {
  OpTable table;
  const Trace& t = v.trace;
  std::vector<int32_t>* slots = nullptr;
  int slots_rank = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const WorkEvent& e = t.events[i];
    if (e.op_id == kEmptyStr) continue;
    if (!slots || slots_rank != e.rank) {
      auto [it, fresh] = table.index.try_emplace(e.rank);
      if (fresh) it->second.assign(t.strings.size(), -1);
      slots = &it->second;
      slots_rank = e.rank;
    }
    int32_t& slot = (*slots)[e.op_id];
    const int64_t start = e.start_ns - v.origin_ns;
    if (slot < 0) {
      slot = static_cast<int32_t>(table.ops.size());
      OpSum& s = table.ops.emplace_back();
      table.keys.push_back(Key(e.rank, e.op_id));
      s.lane = e.lane;
      s.kind = KindOf(t, e);
      s.start_ns = start;
      s.end_ns = start + e.dur_ns;
    }
    OpSum& s = table.ops[slot];
    s.dur_ns += e.dur_ns;
    s.exposed_ns += v.exposed_ns[i];
    s.start_ns = std::min(s.start_ns, start);
    s.end_ns = std::max(s.end_ns, start + e.dur_ns);
    ++s.count;
  }
  table.taken.assign(table.ops.size(), false);
  return table;
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

CompareRow MakeRow(int rank, const TraceView& va, StrId id_a, const TraceView& vb, StrId id_b,
                   const OpSum* a, const OpSum* b) {
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
    r.count_a = a->count;
  }
  if (b) {
    r.dur_b_ns = b->dur_ns;
    r.exposed_b_ns = b->exposed_ns;
    r.start_b_ns = b->start_ns;
    r.end_b_ns = b->end_ns;
    r.count_b = b->count;
  }
  return r;
}

}  // namespace

std::vector<CompareRow> BuildCompareRows(const TraceView& a, const TraceView& b) {
  // The two sums are independent, and the join waits on both (a million events each).
  std::future<OpTable> sum_b = std::async(std::launch::async, [&b] { return SumOps(b); });
  OpTable ops[2] = {SumOps(a), sum_b.get()};
  std::vector<CompareRow> rows;
  rows.reserve(std::max(ops[0].ops.size(), ops[1].ops.size()));
  auto join = [&](int32_t ia, int32_t ib) {
    const OpKey ka = ops[0].keys[ia], kb = ops[1].keys[ib];
    rows.push_back(MakeRow(RankOf(ka), a, IdOf(ka), b, IdOf(kb), &ops[0].ops[ia], &ops[1].ops[ib]));
    ops[0].taken[ia] = ops[1].taken[ib] = true;
  };
  // Exact op_ids first, through the string tables (each distinct op_id looked up once).
  constexpr StrId kUnknown = 0xFFFFFFFFu;
  std::vector<StrId> a_to_b(a.trace.strings.size(), kUnknown);
  for (int32_t ia = 0; ia < static_cast<int32_t>(ops[0].ops.size()); ++ia) {
    const OpKey ka = ops[0].keys[ia];
    StrId& idb = a_to_b[IdOf(ka)];
    if (idb == kUnknown && !b.trace.strings.Find(a.trace.Str(IdOf(ka)), &idb)) idb = kEmptyStr;
    if (idb == kEmptyStr) continue;
    const int32_t ib = ops[1].Find(RankOf(ka), idb);
    if (ib >= 0 && !ops[1].taken[ib]) join(ia, ib);
  }
  // Then the same op under a shorter unit FQN, in either direction (only what is left).
  std::map<std::pair<int, std::string>, int32_t> left[2];
  const TraceView* views[2] = {&a, &b};
  for (int w = 0; w < 2; ++w) {
    for (size_t i = 0; i < ops[w].ops.size(); ++i) {
      if (ops[w].taken[i]) continue;
      const OpKey k = ops[w].keys[i];
      left[w].emplace(std::make_pair(RankOf(k), std::string(views[w]->trace.Str(IdOf(k)))),
                      static_cast<int32_t>(i));
    }
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [key, index] : left[pass]) {
      if (ops[pass].taken[index]) continue;
      for (const std::string& form : UnitSuffixForms(key.second)) {
        const auto found = left[1 - pass].find({key.first, form});
        if (found == left[1 - pass].end() || ops[1 - pass].taken[found->second]) continue;
        pass == 0 ? join(index, found->second) : join(found->second, index);
        break;
      }
    }
  }
  for (int w = 0; w < 2; ++w) {
    for (size_t i = 0; i < ops[w].ops.size(); ++i) {
      if (ops[w].taken[i]) continue;
      const OpKey k = ops[w].keys[i];
      rows.push_back(w == 0 ? MakeRow(RankOf(k), a, IdOf(k), b, 0, &ops[0].ops[i], nullptr)
                            : MakeRow(RankOf(k), a, 0, b, IdOf(k), nullptr, &ops[1].ops[i]));
    }
  }
  // Impact first; (rank, op_id) makes the order total, so it does not depend on the input's.
  // Sorted as small keys, the rows then moved once: a row is ~170 bytes with two strings.
  struct SortKey {
    int64_t impact;
    int rank;
    uint32_t row;
  };
  std::vector<SortKey> keys(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    keys[i] = {rows[i].impact_ns(), rows[i].rank, static_cast<uint32_t>(i)};
  }
  std::sort(keys.begin(), keys.end(), [&rows](const SortKey& x, const SortKey& y) {
    if (x.impact != y.impact) return x.impact > y.impact;
    if (x.rank != y.rank) return x.rank < y.rank;
    return rows[x.row].op_id < rows[y.row].op_id;
  });
  std::vector<CompareRow> sorted;
  sorted.reserve(rows.size());
  for (const SortKey& k : keys) sorted.push_back(std::move(rows[k.row]));
  return sorted;
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

namespace shardscope::viewer {

std::vector<uint32_t> RowEvents(const CompareRow& row, const TraceView& view, int which) {
  std::vector<uint32_t> out;
  const StrId id = which == 0 ? row.id_a : row.id_b;
  if (id == kEmptyStr) return out;
  const std::vector<WorkEvent>& events = view.trace.events;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].op_id == id && events[i].rank == row.rank)
      out.push_back(static_cast<uint32_t>(i));
  }
  return out;
}

}  // namespace shardscope::viewer
