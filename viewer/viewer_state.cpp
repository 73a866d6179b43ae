#include "viewer/viewer_state.h"

#include <algorithm>
#include <utility>

namespace shardscope::viewer {

namespace {
uint64_t RowKey(int rank, StrId op_id) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32) | op_id;
}
}  // namespace

void RowIndex::Reset(size_t rows) { index_.Reset(rows); }

void RowIndex::Set(int rank, StrId op_id, int row) { index_.Set(RowKey(rank, op_id), row); }

int RowIndex::Find(int rank, StrId op_id) const { return index_.Find(RowKey(rank, op_id)); }

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
