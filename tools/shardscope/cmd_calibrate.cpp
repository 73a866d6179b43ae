// `shardscope calibrate INPUT... --out FILE [--folds K] [--timing-floor-us US] [--json REPORT]`:
// fits the cost model's free figures to measured traces and run tables
// (sim/calibrate/calibrate.h), prints each figure with its uncertainty and the cross-validated
// error before and after, and writes the calibration file scenarios name in
// `cluster.cost_model`. Several GPU types: one file each, FILE's name with the GPU before its
// extension (cal.json → cal.h100-sxm.json). Output paths are checked before the inputs are
// read, and every file is written at the end, all or none. A GPU whose fit predicts held-out
// observations worse than the defaults, or does not lower the error on its own inputs, is
// exit 1 and its file is not written; the other GPUs' files are, and both the output and the
// --json report say which were written and which not.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/util/count_text.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/output_files.h"
#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/calibration_inputs.h"
#include "sim/cost/calibration.h"
#include "tools/shardscope/command.h"
#include "tools/shardscope/scenario_files.h"

namespace shardscope::cli {
namespace {

struct CalibrateArgs {
  std::vector<std::string> inputs;
  std::string out;
  std::string json;
  int folds = 5;
  double timing_floor_us = -1;  // < 0: each device's catalog timing_jitter_us
};

std::string OutPathFor(const std::string& out, const std::string& gpu, bool several) {
  if (!several) return out;
  const std::filesystem::path p(out);
  return (p.parent_path() / (p.stem().string() + "." + gpu + p.extension().string())).string();
}

std::string Pct(const calibrate::ErrorStats& s, double calibrate::ErrorStats::*field) {
  return s.count == 0 ? std::string("-") : fmt::format("{:.2f}%", 100 * (s.*field));
}

void PrintGpu(const calibrate::GpuCalibration& g) {
  fmt::print("Calibration for {}: {}, {} observations\n", g.gpu, CountOf(g.samples, "input"),
             g.observations);
  fmt::print("  {:<48} {:>12} {:>12} {:>12}\n", "figure", "default", "fitted", "± 1 sd");
  std::string kept, pinned;
  for (const calibrate::FittedFigure& f : g.figures) {
    if (!f.identified) {
      kept += (kept.empty() ? "" : ", ") + f.key;
      continue;
    }
    fmt::print("  {:<48} {:>12.5g} {:>12.5g} {:>12.3g}{}\n", f.key, f.default_value, f.value, f.sd,
               f.at_bound.empty() ? ""
               : f.value_at_bound ? "  (at its " + f.at_bound + " bound)"
                                  : "  (pulled to its " + f.at_bound + " bound)");
    if (!f.at_bound.empty()) pinned += (pinned.empty() ? "" : ", ") + f.key;
  }
  if (!kept.empty()) fmt::print("  not informed by the inputs, kept at the default: {}\n", kept);
  if (!pinned.empty()) {
    fmt::print(
        "  warning: the inputs pull {} to a bound, past any plausible value: the file holds the "
        "bound, or where the catalog's prior stopped {}, not a measurement (inputs of another "
        "job, GPU or load than the scenario says?)\n",
        pinned, pinned.find(',') == std::string::npos ? "it" : "them");
  }
  fmt::print("  residuals weighed at a {:.3g}% spread{}\n", 100 * g.residual_spread,
             g.spread_from_misfit ? ": the scatter they show, more than the one assumed, so the "
                                    "catalog's figures count for more"
                                  : "");
  if (g.timing_floor_ns > 0) {
    fmt::print("  operations shorter than the timing floor, {:g} µs, fitted by absolute error\n",
               g.timing_floor_ns / 1e3);
  }
  fmt::print("  {:<48} {:>12} {:>12}\n", "|predicted / measured - 1|", "median", "p90");
  using S = calibrate::ErrorStats;
  fmt::print("  {:<48} {:>12} {:>12}\n", "all observations, catalog defaults",
             Pct(g.fit_before, &S::median), Pct(g.fit_before, &S::p90));
  fmt::print("  {:<48} {:>12} {:>12}\n", "all observations, fitted", Pct(g.fit_after, &S::median),
             Pct(g.fit_after, &S::p90));
  if (g.folds >= 2) {
    fmt::print("  {:<48} {:>12} {:>12}\n",
               fmt::format("{}-fold held-out, catalog defaults", g.folds),
               Pct(g.cv_before, &S::median), Pct(g.cv_before, &S::p90));
    fmt::print("  {:<48} {:>12} {:>12}\n", fmt::format("{}-fold held-out, fitted", g.folds),
               Pct(g.cv_after, &S::median), Pct(g.cv_after, &S::p90));
  } else {
    fmt::print("  held-out error: too few observation groups to cross-validate\n");
  }
}

// `files[i]`: what GPU i's calibration was written to, or "" with `why_not[i]` saying why not.
nlohmann::json ReportJson(const calibrate::CalibrateReport& r,
                          const std::vector<std::string>& files,
                          const std::vector<std::string>& why_not) {
  auto stats = [](const calibrate::ErrorStats& s) {
    return nlohmann::json{{"count", s.count}, {"median", s.median}, {"p90", s.p90}};
  };
  // No observation held out (fewer than two folds): no error, which 0 would read as none.
  auto held_out = [&stats](const calibrate::GpuCalibration& g, const calibrate::ErrorStats& s) {
    return g.folds >= 2 && s.count > 0 ? stats(s) : nlohmann::json();
  };
  nlohmann::json j = {{"gpus", nlohmann::json::array()}, {"notes", r.notes}};
  for (size_t i = 0; i < r.gpus.size(); ++i) {
    const calibrate::GpuCalibration& g = r.gpus[i];
    nlohmann::json figs = nlohmann::json::array();
    for (const calibrate::FittedFigure& f : g.figures) {
      figs.push_back(
          {{"key", f.key},
           {"default", f.default_value},
           {"value", f.value},
           {"sd", f.sd},
           {"identified", f.identified},
           {"at_bound", f.at_bound.empty() ? nlohmann::json() : nlohmann::json(f.at_bound)},
           {"value_at_bound", f.value_at_bound}});
    }
    j["gpus"].push_back({{"gpu", g.gpu},
                         {"inputs", g.samples},
                         {"observations", g.observations},
                         {"timing_floor_us", g.timing_floor_ns / 1e3},
                         {"residual_spread", g.residual_spread},
                         {"spread_from_misfit", g.spread_from_misfit},
                         {"figures", figs},
                         {"fit_before", stats(g.fit_before)},
                         {"fit_after", stats(g.fit_after)},
                         {"folds", g.folds},
                         {"cv_before", held_out(g, g.cv_before)},
                         {"cv_after", held_out(g, g.cv_after)},
                         {"worse", g.worse},
                         {"not_improved", g.not_improved},
                         {"written", !files[i].empty()},
                         {"file", files[i].empty() ? nlohmann::json() : nlohmann::json(files[i])},
                         {"not_written_because",
                          why_not[i].empty() ? nlohmann::json() : nlohmann::json(why_not[i])}});
  }
  return j;
}

// Why GPU `g`'s calibration must not be written ("" when it may be).
std::string WhyNotWritten(const calibrate::GpuCalibration& g) {
  std::string why;
  if (g.not_improved) {
    why = fmt::format(
        "the fit does not lower the error on its own inputs ({:.2f}% -> {:.2f}% median)",
        100 * g.fit_before.median, 100 * g.fit_after.median);
  }
  if (g.worse) {
    why += fmt::format(
        "{}the fitted figures predict held-out observations worse than the catalog defaults "
        "({:.2f}% -> {:.2f}% median)",
        why.empty() ? "" : "; ", 100 * g.cv_before.median, 100 * g.cv_after.median);
  }
  return why;
}

Status RunCalibrate(const CalibrateArgs& args, bool json_given) {
  // Output paths first: a typo in --out must not cost the whole fit.
  SS_RETURN_IF_ERROR(CheckOutputPath("--out", args.out));
  if (json_given) SS_RETURN_IF_ERROR(CheckOutputPath("--json", args.json));
  std::vector<NamedPath> inputs_named;
  for (const std::string& in : args.inputs) inputs_named.push_back({"input", in});
  std::vector<NamedPath> outputs = {{"--out", args.out}, {"--json", args.json}};
  SS_RETURN_IF_ERROR(CheckDistinctFiles(outputs, inputs_named));

  SS_ASSIGN_OR_RETURN(calibrate::CalibrationInputs inputs,
                      calibrate::LoadCalibrationInputs(args.inputs));
  // Before the fit: the per-GPU names of every GPU the inputs name (the fit writes a subset),
  // and the files the inputs' scenarios read, which an output must not replace.
  std::set<std::string> gpus;
  auto add_scenario = [&](const Scenario& sc, const std::string& file, const std::string& named) {
    gpus.insert(sc.cluster.gpu);
    for (NamedPath& f : ScenarioFiles(sc, file, named)) inputs_named.push_back(std::move(f));
  };
  for (const calibrate::TraceInput& t : inputs.traces) {
    add_scenario(t.scenario, "", t.scenario.source);
  }
  for (const calibrate::RunInput& r : inputs.runs) {
    add_scenario(r.scenario, r.scenario_file, r.source + " scenario");
  }
  if (gpus.size() > 1) {
    for (const std::string& gpu : gpus) {
      const std::string path = OutPathFor(args.out, gpu, true);
      SS_RETURN_IF_ERROR(CheckOutputPath(fmt::format("--out ({})", gpu), path));
      outputs.push_back({fmt::format("--out ({})", gpu), path});
    }
  }
  SS_RETURN_IF_ERROR(CheckDistinctFiles(outputs, inputs_named));

  calibrate::CalibrateOptions options;
  options.folds = args.folds;
  if (args.timing_floor_us >= 0) options.timing_floor_ns = args.timing_floor_us * 1e3;
  SS_ASSIGN_OR_RETURN(calibrate::CalibrateReport report, calibrate::Calibrate(inputs, options));
  for (const std::string& note : report.notes) fmt::print("note: {}\n", note);
  const bool several = report.gpus.size() > 1;
  std::vector<std::string> files(report.gpus.size()), why_not(report.gpus.size());
  std::vector<std::pair<std::string, std::string>> writes;
  std::string failed, kept, written;
  for (size_t i = 0; i < report.gpus.size(); ++i) {
    const calibrate::GpuCalibration& g = report.gpus[i];
    PrintGpu(g);
    const std::string path = OutPathFor(args.out, g.gpu, several);
    why_not[i] = WhyNotWritten(g);
    if (!why_not[i].empty()) {
      fmt::print("  {}: calibration not written\n", why_not[i]);
      failed += (failed.empty() ? "" : ", ") + g.gpu;
      kept += (kept.empty() ? "" : ", ") + path;
      continue;
    }
    files[i] = path;
    writes.emplace_back(path, CalibrationToJson(g.calibration));
    written += (written.empty() ? "" : ", ") + path;
  }
  if (json_given)
    writes.emplace_back(args.json, DumpJson(ReportJson(report, files, why_not), 2) + "\n");
  // Each GPU's fit passes or fails on its own (docs/calibration.md), so the ones that passed
  // are written even when another failed; all of them and the report land together or not at
  // all, and the summary below says which.
  SS_RETURN_IF_ERROR(WriteFilesAtomic(writes));
  for (const std::string& f : files) {
    if (!f.empty()) fmt::print("Calibration written to {} (name it in cluster.cost_model)\n", f);
  }
  if (json_given) fmt::print("Report written to {}\n", args.json);
  if (!failed.empty()) {
    return CheckFailed(fmt::format(
        "calibrate: {}: the fitted figures do not predict the measurements better than the "
        "catalog defaults; more or more varied measurements are needed. Not written: {} (left as "
        "it was){}",
        failed, kept, written.empty() ? std::string() : "; written: " + written));
  }
  return Status::Ok();
}

}  // namespace

void RegisterCalibrateCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* sub = app.add_subcommand(
      "calibrate", "fit the cost model's figures to measured traces and run tables");
  sub->add_option("inputs", args->inputs,
                  "measured traces (shardscope run, simulate) and run tables (shardscope-runs/1 "
                  "JSON or CSV)")
      ->required();
  sub->add_option("--out", args->out,
                  "calibration file to write (one per GPU type: FILE with the GPU before the "
                  "extension)")
      ->required();
  sub->add_option("--folds", args->folds, "cross-validation folds (default 5)")
      ->check(CLI::Range(2, 100));
  sub->add_option("--timing-floor-us", args->timing_floor_us,
                  "operations' absolute timing jitter, for every device: shorter operations "
                  "are fitted by absolute, not relative, error (default: the catalog's "
                  "timing_jitter_us of each device; 0 on GPUs)")
      ->check(NonNegative());
  CLI::Option* json = sub->add_option("--json", args->json,
                                      "write the report (figures, errors, files written) as JSON "
                                      "here");
  // `--json ''` is a mistake to report, not the option left out.
  registry.Add(sub, [args, json] { return RunCalibrate(*args, json->count() > 0); });
}

}  // namespace shardscope::cli
