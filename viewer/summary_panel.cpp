// The summary: step time, exposed communication, overlap, peak allocated and reserved of both
// traces (over the selected range when there is one) and B's error relative to A.
#include <fmt/core.h>

#include <string>

#include "viewer/format.h"
#include "viewer/panels.h"

namespace shardscope::viewer {
namespace {

enum class Unit { kNs, kBytes, kRatio };

void Line(const char* name, double a, double b, bool has_a, bool has_b, Unit unit) {
  auto text = [unit](double v) {
    switch (unit) {
      case Unit::kNs:
        return FormatDuration(static_cast<int64_t>(v));
      case Unit::kBytes:
        return FormatBytes(static_cast<int64_t>(v));
      case Unit::kRatio:
        return FormatPercent(v, false);
    }
    return std::string();
  };
  ImGui::TableNextRow();
  ImGui::TableSetColumnIndex(0);
  ImGui::TextUnformatted(name);
  ImGui::TableSetColumnIndex(1);
  ImGui::TextUnformatted(has_a ? text(a).c_str() : "-");
  ImGui::TableSetColumnIndex(2);
  ImGui::TextUnformatted(has_b ? text(b).c_str() : "-");
  ImGui::TableSetColumnIndex(3);
  if (!has_a || !has_b) {
    ImGui::TextDisabled("-");
  } else if (unit == Unit::kRatio) {
    ImGui::Text("%+.1f pt", 100.0 * (b - a));
  } else if (const std::optional<double> e = RelativeError(a, b)) {
    ImGui::TextUnformatted(FormatPercent(*e).c_str());
  } else {
    ImGui::TextDisabled("n/a");  // A is 0, B is not
  }
}

}  // namespace

void DrawSummaryPanel(ViewerState* s) {
  const SummaryFigures& a = s->summary[0];
  const SummaryFigures& b = s->summary[1];
  const bool ha = s->a != nullptr, hb = s->b != nullptr;
  if (s->range) {
    ImGui::Text("range %s .. %s", FormatDuration(s->range->lo_ns).c_str(),
                FormatDuration(s->range->hi_ns).c_str());
  } else {
    ImGui::TextUnformatted("whole step (drag on the timeline to limit)");
  }
  if (!ImGui::BeginTable("summary", 4, ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_RowBg))
    return;
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed,
                          ImGui::CalcTextSize("peak allocated").x);
  ImGui::TableSetupColumn(ha ? s->a->trace.metadata.kind.c_str() : "A");
  ImGui::TableSetupColumn(hb ? s->b->trace.metadata.kind.c_str() : "B");
  ImGui::TableSetupColumn("error");
  ImGui::TableHeadersRow();
  Line("step time", a.step_ns, b.step_ns, ha, hb, Unit::kNs);
  Line("exposed comm", a.exposed_comm_ns, b.exposed_comm_ns, ha, hb, Unit::kNs);
  Line("overlap", a.overlap_ratio, b.overlap_ratio, ha, hb, Unit::kRatio);
  Line("peak allocated", a.peak_allocated_bytes, b.peak_allocated_bytes, ha && a.has_memory,
       hb && b.has_memory, Unit::kBytes);
  Line("peak reserved", a.peak_reserved_bytes, b.peak_reserved_bytes, ha && a.has_memory,
       hb && b.has_memory, Unit::kBytes);
  ImGui::EndTable();
}

}  // namespace shardscope::viewer
