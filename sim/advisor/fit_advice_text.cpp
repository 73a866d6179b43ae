// FitAdvice as the summary's "advice" object and as the block `simulate` prints.
#include <fmt/format.h>

#include "sim/advisor/fit_advisor.h"

namespace shardscope::sim {
namespace {

nlohmann::json CategoriesJson(const std::vector<CategoryGib>& cats) {
  nlohmann::json out = nlohmann::json::array();
  for (const CategoryGib& c : cats) out.push_back({{"category", c.category}, {"gib", c.gib}});
  return out;
}

std::string SetFlags(const std::vector<std::string>& sets) {
  std::string out;
  for (const std::string& s : sets) out += fmt::format("{}--set {}", out.empty() ? "" : " ", s);
  return out;
}

}  // namespace

std::string_view FitVerdictName(FitVerdict v) {
  switch (v) {
    case FitVerdict::kFits:
      return "fits";
    case FitVerdict::kThinMargin:
      return "thin_margin";
    case FitVerdict::kDoesNotFit:
      return "does_not_fit";
  }
  return "?";
}

nlohmann::json FitAdviceToJson(const FitAdvice& a) {
  using nlohmann::json;
  json cause = {{"persistent_exceeds_hbm", a.cause.persistent_exceeds},
                {"persistent_gib", a.cause.persistent_gib},
                {"persistent", CategoriesJson(a.cause.persistent)},
                {"dominant_at_peak", CategoriesJson(a.cause.dominant)},
                {"peak_op", a.cause.peak_op},
                {"peak_phase", a.cause.peak_phase},
                {"reserved_above_allocated_gib", a.cause.reserved_above_allocated_gib},
                {"allocator_decides", a.cause.allocator_decides},
                {"text", a.cause.text}};
  json suggestions = json::array();
  for (const FitSuggestion& s : a.suggestions) {
    suggestions.push_back({{"set", s.sets},
                           {"change", s.change},
                           {"peak_memory_reserved_gib", s.peak_reserved_gib},
                           {"peak_memory_allocated_gib", s.peak_allocated_gib},
                           {"headroom_gib", s.headroom_gib},
                           {"tokens_per_s_per_gpu", s.tokens_per_s_per_gpu},
                           {"step_time_s", s.step_time_s},
                           {"thin_margin", s.thin}});
  }
  return {{"verdict", FitVerdictName(a.verdict)},
          {"margin_gib", a.margin_gib},
          {"usable_gib", a.usable_gib},
          {"peak_memory_reserved_gib", a.peak_reserved_gib},
          {"over_gib", a.over_gib},
          {"cause", cause},
          {"suggestions", suggestions},
          {"variants_simulated", a.variants_simulated},
          {"variants_fitting", a.variants_fitting},
          {"variants_invalid", a.variants_invalid}};
}

std::string FormatFitAdvice(const FitAdvice& a) {
  std::string out;
  if (a.verdict == FitVerdict::kFits) {
    return fmt::format("Fit: {:.2f} GiB headroom (margin {:.2f} GiB)\n", -a.over_gib, a.margin_gib);
  }
  if (a.verdict == FitVerdict::kDoesNotFit) {
    out += fmt::format(
        "Fit advice: DOES NOT FIT by {:.2f} GiB (peak reserved {:.2f} GiB estimate vs {:.2f} "
        "GiB usable)\n",
        a.over_gib, a.peak_reserved_gib, a.usable_gib);
  } else {
    out += fmt::format(
        "Fit advice: THIN MARGIN, fits with only {:.2f} GiB headroom (peak reserved {:.2f} GiB "
        "estimate vs {:.2f} GiB usable; margin {:.2f} GiB, --margin)\n",
        -a.over_gib, a.peak_reserved_gib, a.usable_gib, a.margin_gib);
  }
  out += fmt::format("  cause: {}\n", a.cause.text);
  if (a.suggestions.empty()) {
    out += fmt::format("  no variant tried fits{}\n",
                       a.verdict == FitVerdict::kThinMargin ? " with the margin" : "");
  } else {
    out += fmt::format(
        "  nearest changes that fit{} (each re-simulated; fastest first; now {:.0f} "
        "tokens/s/GPU):\n",
        a.verdict == FitVerdict::kThinMargin ? " with the margin" : "", a.tokens_per_s_per_gpu);
    for (size_t i = 0; i < a.suggestions.size(); ++i) {
      const FitSuggestion& s = a.suggestions[i];
      out += fmt::format("  {}. {:8.0f} tokens/s/GPU  peak {:.2f} GiB, {:.2f} GiB headroom{}  {}\n",
                         i + 1, s.tokens_per_s_per_gpu, s.peak_reserved_gib, s.headroom_gib,
                         s.thin ? " (under the margin)" : "", s.change);
      out += fmt::format("       {}\n", SetFlags(s.sets));
    }
  }
  out += fmt::format(
      "  ({} variants simulated, {} fit{})\n", a.variants_simulated, a.variants_fitting,
      a.variants_invalid > 0 ? fmt::format(", {} not valid for this job", a.variants_invalid) : "");
  return out;
}

}  // namespace shardscope::sim
