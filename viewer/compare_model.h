// The comparison table's data: the operations of two traces joined by (rank, op_id), each
// side's total time, the delta and its impact on step time, with sorting and range filtering.
//
// Contents:
//   CompareRow          one operation of one rank in either trace
//   CompareColumn       the sortable columns
//   BuildCompareRows    TraceView × TraceView → rows, by impact (largest first)
//   SortCompareRows     reorders by a column
//   RowOverlaps         whether a row's operation runs inside [lo, hi) in either trace
//   RowEvents           the events of one trace a row sums (for highlighting)
//
// Joining: events with one (rank, op_id) are summed (a measured unit's compute is many
// kernels). Op_ids that differ only by a leading part of the unit's FQN are the same
// operation ("fwd/model.layers.3/compute" in a prediction from a Hugging Face tree,
// "fwd/layers.3/compute" in a torchtitan trace). Impact on step time: a compute operation's
// whole delta; any other operation's change of exposed time (what no compute hides).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viewer/trace_view.h"

namespace shardscope::viewer {

struct CompareRow {
  std::string op_id;    // A's spelling (B's when the op is only in B)
  std::string op_id_b;  // B's spelling (differs from op_id when joined by a unit suffix)
  StrId id_a = kEmptyStr, id_b = kEmptyStr;  // the op_id in each trace's string table
  int rank = 0;
  int lane = 0;
  ItemKind kind = ItemKind::kCompute;
  int64_t dur_a_ns = -1, dur_b_ns = -1;        // summed; -1 when absent from that trace
  int64_t exposed_a_ns = 0, exposed_b_ns = 0;  // summed exposed time
  int64_t start_a_ns = 0, end_a_ns = 0;        // first start / last end, relative
  int64_t start_b_ns = 0, end_b_ns = 0;
  int32_t count_a = 0, count_b = 0;  // events summed in each trace

  bool in_a() const { return dur_a_ns >= 0; }
  bool in_b() const { return dur_b_ns >= 0; }
  // B − A (0 unless in both).
  int64_t delta_ns() const { return in_a() && in_b() ? dur_b_ns - dur_a_ns : 0; }
  // (B − A) / A in percent (0 unless in both and A > 0).
  double delta_pct() const;
  // |Δ| of what the step waits for (see the header comment); the default sort key.
  int64_t impact_ns() const;
};

enum class CompareColumn { kOp, kRank, kA, kB, kDelta, kDeltaPct, kImpact };

// Rows sorted by impact, largest first (ties by rank, then op_id).
std::vector<CompareRow> BuildCompareRows(const TraceView& a, const TraceView& b);
// Stable; ties keep the current order.
void SortCompareRows(std::vector<CompareRow>* rows, CompareColumn column, bool descending);
// True when the row's operation overlaps [lo_ns, hi_ns) in either trace.
bool RowOverlaps(const CompareRow& row, int64_t lo_ns, int64_t hi_ns);
// Indices into `view`'s events of the row's operation in that trace (`which`: 0 = A, 1 = B).
std::vector<uint32_t> RowEvents(const CompareRow& row, const TraceView& view, int which);

}  // namespace shardscope::viewer
