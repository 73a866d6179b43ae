// The comparison table: one row per joined operation, sortable by any column (impact on step
// time by default), limited to the selected range; the delta cell is red when B took longer,
// green when shorter, stronger with the percentage. Selecting a row outlines it on the timeline.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "viewer/format.h"
#include "viewer/panels.h"

namespace shardscope::viewer {

// The delta cell's colour: alpha grows with |Δ%| up to 50%.
ImU32 DeltaColor(double delta_pct) {
  const double strength = std::clamp(std::abs(delta_pct) / 50.0, 0.15, 1.0);
  const int alpha = static_cast<int>(60 + 170 * strength);
  return delta_pct > 0 ? IM_COL32(220, 50, 50, alpha) : IM_COL32(40, 180, 70, alpha);
}

namespace {

CompareColumn ColumnOf(int user_id) { return static_cast<CompareColumn>(user_id); }

std::string Duration(int64_t ns) { return ns < 0 ? "-" : FormatDuration(ns); }

}  // namespace

void DrawComparePanel(ViewerState* s) {
  // Without a range every row shows, in order: no index list of all rows each frame.
  const bool ranged = s->range.has_value();
  std::vector<int> visible;
  if (ranged) visible = VisibleRowIndices(*s);
  ImGui::Text("%zu operations%s (A = %s, B = %s)", ranged ? visible.size() : s->rows.size(),
              ranged ? " in the range" : "", s->a ? s->a->label.c_str() : "-",
              s->b ? s->b->label.c_str() : "-");
  s->probes.first_delta_cell = {};
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("compare", 8, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("op_id", ImGuiTableColumnFlags_WidthStretch, 0.0f,
                          static_cast<ImGuiID>(CompareColumn::kOp));
  ImGui::TableSetupColumn("rank", 0, 0.0f, static_cast<ImGuiID>(CompareColumn::kRank));
  ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_NoSort, 0.0f, 100);
  ImGui::TableSetupColumn("A", 0, 0.0f, static_cast<ImGuiID>(CompareColumn::kA));
  ImGui::TableSetupColumn("B", 0, 0.0f, static_cast<ImGuiID>(CompareColumn::kB));
  ImGui::TableSetupColumn("delta", 0, 0.0f, static_cast<ImGuiID>(CompareColumn::kDelta));
  ImGui::TableSetupColumn("delta %", 0, 0.0f, static_cast<ImGuiID>(CompareColumn::kDeltaPct));
  ImGui::TableSetupColumn(
      "impact", ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending,
      0.0f, static_cast<ImGuiID>(CompareColumn::kImpact));
  ImGui::TableHeadersRow();
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsDirty) {
    if (specs->SpecsCount > 0) {
      const ImGuiTableColumnSortSpecs& spec = specs->Specs[0];
      const CompareColumn column = ColumnOf(static_cast<int>(spec.ColumnUserID));
      const bool descending = spec.SortDirection == ImGuiSortDirection_Descending;
      if (column != s->sort_column || descending != s->sort_descending) {
        SortRows(s, column, descending);
        if (ranged) visible = VisibleRowIndices(*s);  // the indices moved with the rows
      }
    }
    specs->SpecsDirty = false;
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(ranged ? visible.size() : s->rows.size()));
  while (clipper.Step()) {
    for (int n = clipper.DisplayStart; n < clipper.DisplayEnd; ++n) {
      const int index = ranged ? visible[n] : n;
      const CompareRow& r = s->rows[index];
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      ImGui::PushID(index);
      if (ImGui::Selectable(r.op_id.c_str(), s->selected_row == index,
                            ImGuiSelectableFlags_SpanAllColumns)) {
        SelectRow(s, s->selected_row == index ? -1 : index);
      }
      ImGui::PopID();
      ImGui::TableSetColumnIndex(1);
      ImGui::Text("%d", r.rank);
      ImGui::TableSetColumnIndex(2);
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(KindColor(r.kind)), "%s",
                         std::string(ItemKindName(r.kind)).c_str());
      ImGui::TableSetColumnIndex(3);
      ImGui::TextUnformatted(Duration(r.dur_a_ns).c_str());
      ImGui::TableSetColumnIndex(4);
      ImGui::TextUnformatted(Duration(r.dur_b_ns).c_str());
      ImGui::TableSetColumnIndex(5);
      if (r.in_a() && r.in_b()) {
        ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, DeltaColor(r.delta_pct()));
        if (n == clipper.DisplayStart && !s->probes.first_delta_cell.valid()) {
          const ImVec2 p = ImGui::GetCursorScreenPos();
          const float w = ImGui::GetContentRegionAvail().x;
          s->probes.first_delta_cell = {p.x, p.y, p.x + w, p.y + ImGui::GetTextLineHeight()};
          s->probes.first_delta_ns = r.delta_ns();
        }
        ImGui::TextUnformatted(FormatDuration(r.delta_ns()).c_str());
        ImGui::TableSetColumnIndex(6);
        ImGui::Text("%+.1f%%", r.delta_pct());
        ImGui::TableSetColumnIndex(7);
        ImGui::TextUnformatted(FormatDuration(r.impact_ns()).c_str());
      } else {
        ImGui::TextDisabled("only in %s", r.in_a() ? "A" : "B");
      }
    }
  }
  ImGui::EndTable();
}

}  // namespace shardscope::viewer
