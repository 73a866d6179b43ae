#include "viewer/viewer_state.h"

#include <algorithm>
#include <utility>

namespace shardscope::viewer {

namespace {
uint64_t RowKey(int rank, StrId op_id) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32) | op_id;
}
}  // namespace

void RowIndex::Reset(size_t rows) {
  size_t n = 16;
  while (n < 2 * rows) n *= 2;
  slots_.assign(n, {0, -1});
  count_ = 0;
}

size_t RowIndex::Home(uint64_t key) const {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> 32) & (slots_.size() - 1);
}

void RowIndex::Set(int rank, StrId op_id, int row) {
  if (2 * (count_ + 1) > slots_.size()) {
    std::vector<std::pair<uint64_t, int>> old = std::move(slots_);
    Reset(count_ + 1);
    for (const auto& [key, r] : old) {
      if (r >= 0) Set(static_cast<int>(key >> 32), static_cast<StrId>(key), r);
    }
  }
  const uint64_t key = RowKey(rank, op_id);
  size_t i = Home(key);
  while (slots_[i].second >= 0 && slots_[i].first != key) i = (i + 1) & (slots_.size() - 1);
  if (slots_[i].second < 0) ++count_;
  slots_[i] = {key, row};
}

int RowIndex::Find(int rank, StrId op_id) const {
  if (slots_.empty()) return -1;
  const uint64_t key = RowKey(rank, op_id);
  for (size_t i = Home(key);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].second < 0) return -1;
    if (slots_[i].first == key) return slots_[i].second;
  }
}

namespace {

void ReindexRows(ViewerState* s) {
  // Sized for every row: each side holds at most one entry a row, so the index stays at most
  // half full without growing.
  for (RowIndex& index : s->row_of) index.Reset(s->rows.size());
  for (size_t i = 0; i < s->rows.size(); ++i) {
    const CompareRow& r = s->rows[i];
    if (r.in_a()) s->row_of[0].Set(r.rank, r.id_a, static_cast<int>(i));
    if (r.in_b()) s->row_of[1].Set(r.rank, r.id_b, static_cast<int>(i));
  }
}

void RebuildRows(ViewerState* s) {
  static const TraceView kEmpty;
  s->rows = BuildCompareRows(s->a ? *s->a : kEmpty, s->b ? *s->b : kEmpty);
  if (s->sort_column != CompareColumn::kImpact || !s->sort_descending) {
    SortCompareRows(&s->rows, s->sort_column, s->sort_descending);
  }
  s->selected_row = -1;
  for (auto& e : s->selected_events) e.clear();
  ReindexRows(s);
}

void RefreshSummary(ViewerState* s) {
  const TraceView* views[2] = {s->a.get(), s->b.get()};
  for (int w = 0; w < 2; ++w) {
    s->summary[w] = views[w] ? ComputeSummary(*views[w], s->range) : SummaryFigures{};
  }
}

}  // namespace

int FindRow(const ViewerState& s, int which, int rank, StrId op_id) {
  return s.row_of[which].Find(rank, op_id);
}

int FindRow(const ViewerState& s, int which, int rank, std::string_view op_id) {
  const TraceView* v = which == 0 ? s.a.get() : s.b.get();
  StrId id = kEmptyStr;
  if (!v || !v->trace.strings.Find(op_id, &id)) return -1;
  return FindRow(s, which, rank, id);
}

void SetTraces(ViewerState* s, std::shared_ptr<const TraceView> a,
               std::shared_ptr<const TraceView> b) {
  s->a = std::move(a);
  s->b = std::move(b);
  s->ghost.reset();
  ++s->traces_generation;
  s->range.reset();
  int64_t end = 1;
  if (s->a) end = std::max(end, s->a->end_ns);
  if (s->b) end = std::max(end, s->b->end_ns);
  s->viewport.Fit(0, end);
  RebuildRows(s);
  RefreshSummary(s);
}

void InstallPrediction(ViewerState* s, std::shared_ptr<const TraceView> prediction) {
  s->ghost = std::move(s->a);
  s->a = std::move(prediction);
  ++s->traces_generation;
  RebuildRows(s);
  RefreshSummary(s);
}

void SetRange(ViewerState* s, TimeRange range) {
  if (range.hi_ns < range.lo_ns) std::swap(range.lo_ns, range.hi_ns);
  s->range = range;
  RefreshSummary(s);
}

void ClearRange(ViewerState* s) {
  s->range.reset();
  RefreshSummary(s);
}

void SelectRow(ViewerState* s, int row) {
  for (auto& e : s->selected_events) e.clear();
  if (row < 0 || row >= static_cast<int>(s->rows.size())) {
    s->selected_row = -1;
    return;
  }
  s->selected_row = row;
  const CompareRow& r = s->rows[row];
  if (s->a) s->selected_events[0] = RowEvents(r, *s->a, 0);
  if (s->b) s->selected_events[1] = RowEvents(r, *s->b, 1);
  const int64_t lo = r.in_a() ? r.start_a_ns : r.start_b_ns;
  const int64_t hi = r.in_a() ? r.end_a_ns : r.end_b_ns;
  // Bring it into view, zooming out only when it does not fit.
  if (hi - lo > s->viewport.span_ns) {
    s->viewport.Fit(lo, hi, 0.1);
  } else if (lo < s->viewport.start_ns || hi > s->viewport.end_ns()) {
    s->viewport.CenterOn(lo + (hi - lo) / 2);
  }
}

void SortRows(ViewerState* s, CompareColumn column, bool descending) {
  const CompareRow* selected = s->selected_row >= 0 ? &s->rows[s->selected_row] : nullptr;
  const int rank = selected ? selected->rank : -1;
  const StrId id_a = selected ? selected->id_a : kEmptyStr;
  const StrId id_b = selected ? selected->id_b : kEmptyStr;
  s->sort_column = column;
  s->sort_descending = descending;
  SortCompareRows(&s->rows, column, descending);
  ReindexRows(s);
  const bool had = selected != nullptr;  // `selected` points at another row after the sort
  s->selected_row = !had                ? -1
                    : id_a != kEmptyStr ? FindRow(*s, 0, rank, id_a)
                                        : FindRow(*s, 1, rank, id_b);
}

std::vector<int> VisibleRowIndices(const ViewerState& s) {
  std::vector<int> out;
  out.reserve(s.rows.size());
  for (size_t i = 0; i < s.rows.size(); ++i) {
    if (!s.range || RowOverlaps(s.rows[i], s.range->lo_ns, s.range->hi_ns)) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

bool StepTuning(ViewerState* s) {
  if (!s->tuner) return false;
  std::optional<Prediction> p = s->tuner->TakeResult();
  if (!p) return false;
  s->tuning_generation = p->generation;
  s->tuning_seconds = p->seconds;
  if (!p->status.ok()) {
    s->tuning_error = p->status.message();
    return true;
  }
  s->tuning_error.clear();
  InstallPrediction(s, std::move(p->view));
  return true;
}

}  // namespace shardscope::viewer
