#include "sim/explore/sweep_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "core/config/scenario.h"
#include "core/util/count_text.h"
#include "sim/engine/simulator.h"

namespace shardscope::sim {
namespace {

std::string CostText(const VariantFigures& f) {
  return f.cost_per_mtok_usd ? fmt::format("{:.3f}", *f.cost_per_mtok_usd) : "-";
}

// `word` as one shell word: quoted when it holds anything but [A-Za-z0-9_./:=,+-@%].
std::string ShellWord(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_./:=,+-@%").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The value part of "path=value", as the variant applied it (a number, a string, ...).
nlohmann::json ValueOf(const std::string& set) {
  return OverrideValue(std::string_view(set).substr(set.find('=') + 1));
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// "tp=2 nodes=4": the variant's values, paths shortened.
std::string Label(const VariantResult& v) {
  std::string label;
  for (const std::string& s : v.sets) {
    if (!label.empty()) label += ' ';
    label += ShortSet(s);
  }
  return label;
}

nlohmann::json VariantJson(int rank, const VariantResult& v, const SweepReport& report) {
  nlohmann::json j;
  j["rank"] = rank;
  nlohmann::json sets = nlohmann::json::object();
  for (size_t k = 0; k < v.sets.size() && k < report.paths.size(); ++k)
    sets[report.paths[k]] = ValueOf(v.sets[k]);
  j["set"] = sets;
  j.update(VariantFiguresJson(v, report.margin_gib));
  return j;
}

}  // namespace

nlohmann::json VariantFiguresJson(const VariantResult& v, double margin_gib) {
  const VariantFigures& f = v.figures;
  nlohmann::json j;
  j["gpu"] = f.gpu;
  j["gpus"] = f.world_size;
  j["tokens_per_s_per_gpu"] = f.tokens_per_s_per_gpu;
  j["step_time_s"] = f.step_time_s;
  j["peak_memory_reserved_gib"] = f.peak_reserved_gib;
  j["headroom_gib"] = f.headroom_gib;
  j["exposed_comm_s"] = f.exposed_comm_s;
  j["mfu"] = f.mfu;
  j["usd_per_gpu_hour"] = f.usd_per_gpu_hour ? nlohmann::json(*f.usd_per_gpu_hour) : nullptr;
  j["cost_per_million_tokens_usd"] =
      f.cost_per_mtok_usd ? nlohmann::json(*f.cost_per_mtok_usd) : nullptr;
  j["s_per_million_tokens"] = f.s_per_mtok;
  j["pareto"] = v.pareto;
  j["thin"] = IsThin(v, margin_gib);
  return j;
}

std::string ShortSet(const std::string& set) {
  const size_t eq = set.find('=');
  const size_t dot = set.rfind('.', eq);
  return dot == std::string::npos ? set : set.substr(dot + 1);
}

std::string RankedTableHeader() {
  // Every figure's unit in its header: the table is read without the docs.
  return fmt::format("{:>4} {:1} {:>11} {:>9} {:>9} {:>9}  {:>9} {:>6} {:>8}  {}\n", "rank", "P",
                     "tok/s/GPU", "step s", "peak GiB", "free GiB", "exp.com s", "MFU", "$/Mtok",
                     "variant");
}

std::string RankedTableRow(int rank, const VariantResult& v, const std::string& label, bool thin) {
  const VariantFigures& f = v.figures;
  return fmt::format(
      "{:>4} {:1} {:>11.0f} {:>9.4f} {:>9.2f} {:>9.2f}{:1} {:>9.4f} {:>5.1f}% {:>8}  {}\n",
      rank > 0 ? std::to_string(rank) : std::string("-"), v.pareto ? "*" : "",
      f.tokens_per_s_per_gpu, f.step_time_s, f.peak_reserved_gib, f.headroom_gib, thin ? "!" : "",
      f.exposed_comm_s, 100.0 * f.mfu, CostText(f), label);
}

std::string FormatSweepTable(const SweepResult& r, const SweepReport& report) {
  const int64_t total = static_cast<int64_t>(r.variants.size());
  const int64_t thin = std::count_if(r.variants.begin(), r.variants.end(),
                                     [&](const auto& v) { return IsThin(v, report.margin_gib); });
  std::string out =
      fmt::format("Sweep of {}: {}; {} fit{}, {} do not fit in memory, {} invalid\n",
                  report.scenario, CountOf(total, "combination"), r.fitting,
                  thin > 0 ? fmt::format(" ({} with less than {:g} GiB of headroom, marked !)",
                                         thin, report.margin_gib)
                           : std::string(),
                  r.not_fitting, r.invalid);
  // Each reason with its first combination's error, so that a value no combination accepts
  // (parallelism.tp=abc) says what was expected.
  for (const auto& [reason, count] : r.invalid_by_reason) {
    const auto first = std::find_if(r.variants.begin(), r.variants.end(), [&](const auto& v) {
      return v.outcome == VariantOutcome::kInvalid && v.reason == reason;
    });
    out += fmt::format("  invalid ({}): {}", reason, count);
    if (first != r.variants.end()) {
      std::string sets;
      for (const std::string& set : first->sets) sets += (sets.empty() ? "" : " ") + ShortSet(set);
      out += fmt::format(", e.g. {}: {}", sets, first->message);
    }
    out += "\n";
  }
  if (r.ranking.empty()) return out + "No combination fits.\n";
  const int rows = report.top > 0 ? std::min<int>(report.top, r.ranking.size()) : r.ranking.size();
  out += fmt::format(
      "Top {} of {} by {} (P = on the Pareto front of cost against time per million tokens; "
      "prices: {})\n",
      rows, r.ranking.size(), ObjectiveName(report.objective), r.prices_source);
  out += RankedTableHeader();
  for (int k = 0; k < rows; ++k) {
    const VariantResult& v = r.variants[r.ranking[k]];
    out += RankedTableRow(k + 1, v, Label(v), IsThin(v, report.margin_gib));
  }
  // The first variant as a command: the table's short names are not --set paths.
  {
    // `simulate` without a scenario runs the built-in default, as the sweep did.
    std::string command = "shardscope simulate";
    if (report.scenario != kDefaultScenarioSource) command += " " + ShellWord(report.scenario);
    for (const std::string& s : report.base_sets) command += " --set " + ShellWord(s);
    for (const std::string& s : r.variants[r.ranking[0]].sets) command += " --set " + ShellWord(s);
    out += fmt::format("Rank 1 on its own: {}\n", command);
  }
  if (!r.pareto.empty()) {
    out += fmt::format("Pareto front ({}, fastest first):\n",
                       CountOf(static_cast<int64_t>(r.pareto.size()), "variant"));
    for (int i : r.pareto) {
      const VariantResult& v = r.variants[i];
      out += ParetoFrontLine(v, Label(v), report.margin_gib);
    }
  }
  return out;
}

std::string ParetoFrontLine(const VariantResult& v, const std::string& label, double margin_gib) {
  return fmt::format(
      "  {:>10.1f} s/Mtok  {:>8} $/Mtok  {}{}\n", v.figures.s_per_mtok, CostText(v.figures), label,
      IsThin(v, margin_gib) ? fmt::format("  (! {:.2f} GiB headroom)", v.figures.headroom_gib)
                            : "");
}

std::string SweepToCsv(const SweepResult& r, const SweepReport& report) {
  std::string out = "rank";
  for (const std::string& p : report.paths) out.append(",").append(CsvField(p));
  out +=
      ",gpu,gpus,tokens_per_s_per_gpu,step_time_s,peak_memory_reserved_gib,headroom_gib,"
      "exposed_comm_s,mfu,usd_per_gpu_hour,cost_per_million_tokens_usd,s_per_million_tokens,"
      "pareto,thin\n";
  for (size_t k = 0; k < r.ranking.size(); ++k) {
    const VariantResult& v = r.variants[r.ranking[k]];
    const VariantFigures& f = v.figures;
    out += std::to_string(k + 1);
    for (const std::string& s : v.sets) out.append(",").append(CsvField(s.substr(s.find('=') + 1)));
    out += fmt::format(",{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{:.6g},{},{}\n",
                       f.gpu, f.world_size, f.tokens_per_s_per_gpu, f.step_time_s,
                       f.peak_reserved_gib, f.headroom_gib, f.exposed_comm_s, f.mfu,
                       f.usd_per_gpu_hour ? fmt::format("{:.6g}", *f.usd_per_gpu_hour) : "",
                       f.cost_per_mtok_usd ? fmt::format("{:.6g}", *f.cost_per_mtok_usd) : "",
                       f.s_per_mtok, v.pareto ? "true" : "false",
                       IsThin(v, report.margin_gib) ? "true" : "false");
  }
  return out;
}

nlohmann::json SweepToJson(const SweepResult& r, const SweepReport& report) {
  nlohmann::json j;
  j["format"] = "shardscope-sweep/1";
  j["scenario"] = report.scenario;
  j["axes"] = report.paths;
  j["objective"] = ObjectiveName(report.objective);
  j["prices"] = r.prices_source;
  j["combinations"] = r.variants.size();
  j["fitting"] = r.fitting;
  j["not_fitting"] = r.not_fitting;
  j["invalid"] = r.invalid;
  j["invalid_by_reason"] = r.invalid_by_reason;
  j["margin_gib"] = report.margin_gib;
  nlohmann::json ranked = nlohmann::json::array();
  for (size_t k = 0; k < r.ranking.size(); ++k)
    ranked.push_back(VariantJson(static_cast<int>(k) + 1, r.variants[r.ranking[k]], report));
  j["variants"] = ranked;
  // The front as ranks into "variants", fastest first.
  std::vector<int> rank_of(r.variants.size(), 0);
  for (size_t k = 0; k < r.ranking.size(); ++k) rank_of[r.ranking[k]] = static_cast<int>(k) + 1;
  nlohmann::json front = nlohmann::json::array();
  for (int i : r.pareto) front.push_back(rank_of[i]);
  j["pareto_front"] = front;
  j["notes"] = report.notes;
  return j;
}

}  // namespace shardscope::sim
