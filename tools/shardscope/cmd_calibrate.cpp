// `shardscope calibrate INPUT... --out FILE [--folds K] [--timing-floor-us US] [--json REPORT]`:
// fits the cost model's free figures to measured traces and run tables
// (sim/calibrate/calibrate.h), prints each figure with its uncertainty and the cross-validated
// error before and after, and writes the calibration file scenarios name in
// `cluster.cost_model`. Several GPU types: one file each, FILE's name with the GPU before its
// extension (cal.json → cal.h100-sxm.json). A fit that predicts held-out observations worse
// than the defaults is exit 1, its file not written.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/util/file_io.h"
#include "core/util/output_files.h"
#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/calibration_inputs.h"
#include "sim/cost/calibration.h"
#include "tools/shardscope/command.h"

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
  fmt::print("Calibration for {}: {} input{}, {} observations\n", g.gpu, g.samples,
             g.samples == 1 ? "" : "s", g.observations);
  fmt::print("  {:<48} {:>12} {:>12} {:>12}\n", "figure", "default", "fitted", "± 1 sd");
  std::string kept;
  for (const calibrate::FittedFigure& f : g.figures) {
    if (!f.identified) {
      kept += (kept.empty() ? "" : ", ") + f.key;
      continue;
    }
    fmt::print("  {:<48} {:>12.5g} {:>12.5g} {:>12.3g}\n", f.key, f.default_value, f.value, f.sd);
  }
  if (!kept.empty()) fmt::print("  not informed by the inputs, kept at the default: {}\n", kept);
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

nlohmann::json ReportJson(const calibrate::CalibrateReport& r,
                          const std::vector<std::string>& files) {
  auto stats = [](const calibrate::ErrorStats& s) {
    return nlohmann::json{{"count", s.count}, {"median", s.median}, {"p90", s.p90}};
  };
  nlohmann::json j = {{"gpus", nlohmann::json::array()}, {"notes", r.notes}};
  for (size_t i = 0; i < r.gpus.size(); ++i) {
    const calibrate::GpuCalibration& g = r.gpus[i];
    nlohmann::json figs = nlohmann::json::array();
    for (const calibrate::FittedFigure& f : g.figures) {
      figs.push_back({{"key", f.key},
                      {"default", f.default_value},
                      {"value", f.value},
                      {"sd", f.sd},
                      {"identified", f.identified}});
    }
    j["gpus"].push_back({{"gpu", g.gpu},
                         {"inputs", g.samples},
                         {"observations", g.observations},
                         {"timing_floor_us", g.timing_floor_ns / 1e3},
                         {"figures", figs},
                         {"fit_before", stats(g.fit_before)},
                         {"fit_after", stats(g.fit_after)},
                         {"folds", g.folds},
                         {"cv_before", stats(g.cv_before)},
                         {"cv_after", stats(g.cv_after)},
                         {"worse", g.worse},
                         {"file", files[i].empty() ? nlohmann::json() : nlohmann::json(files[i])}});
  }
  return j;
}

Status RunCalibrate(const CalibrateArgs& args) {
  SS_ASSIGN_OR_RETURN(calibrate::CalibrationInputs inputs,
                      calibrate::LoadCalibrationInputs(args.inputs));
  calibrate::CalibrateOptions options;
  options.folds = args.folds;
  if (args.timing_floor_us >= 0) options.timing_floor_ns = args.timing_floor_us * 1e3;
  SS_ASSIGN_OR_RETURN(calibrate::CalibrateReport report, calibrate::Calibrate(inputs, options));
  for (const std::string& note : report.notes) fmt::print("note: {}\n", note);
  const bool several = report.gpus.size() > 1;
  std::vector<std::string> files(report.gpus.size());
  std::string worse;
  for (size_t i = 0; i < report.gpus.size(); ++i) {
    const calibrate::GpuCalibration& g = report.gpus[i];
    PrintGpu(g);
    if (g.worse) {
      fmt::print(
          "  the fitted figures predict held-out observations worse than the catalog defaults "
          "({:.2f}% -> {:.2f}% median): calibration not written\n",
          100 * g.cv_before.median, 100 * g.cv_after.median);
      worse += (worse.empty() ? "" : ", ") + g.gpu;
      continue;
    }
    files[i] = OutPathFor(args.out, g.gpu, several);
    SS_RETURN_IF_ERROR(WriteFileAtomic(files[i], CalibrationToJson(g.calibration)));
    fmt::print("Calibration written to {} (name it in cluster.cost_model)\n", files[i]);
  }
  if (!args.json.empty()) {
    SS_RETURN_IF_ERROR(WriteFileAtomic(args.json, ReportJson(report, files).dump(2) + "\n"));
    fmt::print("Report written to {}\n", args.json);
  }
  if (!worse.empty()) {
    return CheckFailed(fmt::format(
        "calibrate: {}: the held-out error got worse with the fitted figures; more or more "
        "varied measurements are needed",
        worse));
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
  sub->add_option("--json", args->json, "write the report (figures, errors) as JSON here");
  registry.Add(sub, [args] { return RunCalibrate(*args); });
}

}  // namespace shardscope::cli
