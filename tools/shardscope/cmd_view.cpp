// `shardscope view TRACE [TRACE2] [--scenario FILE] [--screenshot out.png [--frames N]
// [--size WxH]] [--overlay] [--select-top]`: the ImGui viewer (viewer/app.h). Built only with
// the viewer's packages; otherwise the command says how to get it and exits 3.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "core/util/output_files.h"
#include "tools/shardscope/command.h"
#include "tools/shardscope/scenario_files.h"
#ifdef SHARDSCOPE_HAVE_VIEWER
#include "viewer/app.h"
#endif

namespace shardscope::cli {
namespace {

struct ViewArgs {
  std::vector<std::string> traces;
  std::string scenario;
  std::string screenshot;
  int frames = 3;
  std::string size = "1600x1000";
  bool overlay = false;
  bool select_top = false;
  // Whether --screenshot / --frames were given at all (an empty --screenshot is not "none").
  const CLI::Option* screenshot_option = nullptr;
  const CLI::Option* frames_option = nullptr;
};

// 300 frames render in about 0.5 s: ten thousand is a minute, more is a mistake.
constexpr int kMaxFrames = 10000;

Status ParseSize(const std::string& text, int* w, int* h) {
  const size_t x = text.find('x');
  try {
    if (x != std::string::npos) {
      size_t used_w = 0, used_h = 0;
      *w = std::stoi(text.substr(0, x), &used_w);
      *h = std::stoi(text.substr(x + 1), &used_h);
      if (used_w == x && used_h == text.size() - x - 1 && *w >= 200 && *h >= 200 && *w <= 8192 &&
          *h <= 8192) {
        return Status::Ok();
      }
    }
  } catch (const std::exception&) {
  }
  return InvalidInput(
      fmt::format("--size: expected WxH with 200..8192 each (e.g. 1600x1000), got '{}'", text));
}

Status RunView(const ViewArgs& args) {
  int w = 0, h = 0;
  SS_RETURN_IF_ERROR(ParseSize(args.size, &w, &h));
  const bool headless = args.screenshot_option != nullptr && args.screenshot_option->count() > 0;
  if (headless && args.screenshot.empty()) {
    return InvalidInput("--screenshot: expected a non-empty value (the PNG to write)");
  }
  if (args.frames_option != nullptr && args.frames_option->count() > 0 && !headless) {
    return InvalidInput(
        "--frames: only with --screenshot (the interactive viewer runs until closed)");
  }
  if (args.frames < 1 || args.frames > kMaxFrames) {
    return InvalidInput(fmt::format("--frames: expected 1 to {}, got {}", kMaxFrames, args.frames));
  }
  if (headless) {
    // The PNG must replace none of the files the viewer reads: the traces, the scenario and
    // the model or calibration file it names. Checked before any rendering.
    std::vector<NamedPath> inputs;
    for (size_t i = 0; i < args.traces.size(); ++i) {
      inputs.push_back({i == 0 ? "trace A" : "trace B", args.traces[i]});
    }
    if (!args.scenario.empty()) {
      SS_ASSIGN_OR_RETURN(Scenario sc, LoadScenario(args.scenario));
      for (NamedPath& f : ScenarioFiles(sc, args.scenario, "--scenario")) inputs.push_back(f);
    }
    SS_RETURN_IF_ERROR(CheckOutputs({{"--screenshot", args.screenshot}}, inputs));
  }
#ifdef SHARDSCOPE_HAVE_VIEWER
  viewer::ViewerOptions options;
  options.traces = args.traces;
  options.scenario = args.scenario;
  options.screenshot = args.screenshot;
  options.frames = args.frames;
  options.width = w;
  options.height = h;
  options.overlay = args.overlay;
  options.select_top = args.select_top;
  SS_RETURN_IF_ERROR(viewer::RunViewer(options));
  if (!args.screenshot.empty())
    fmt::print("Screenshot written to {} ({}x{})\n", args.screenshot, w, h);
  return Status::Ok();
#else
  return RuntimeError(
      "view: this shardscope was built without the viewer. Install its packages with `bash "
      "scripts/setup.sh --viewer`, then reconfigure with `cmake -B build "
      "-DSHARDSCOPE_BUILD_VIEWER=ON` and rebuild");
#endif
}

}  // namespace

void RegisterViewCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<ViewArgs>();
  CLI::App* sub = app.add_subcommand(
      "view",
      "open a predicted and a measured trace in the viewer (timeline, memory, comparison, tuning)");
  sub->add_option(
         "traces", args->traces,
         "one or two traces (ours or PyTorch profiler; .json or .json.gz): A predicted, B measured")
      ->expected(0, 2);
  sub->add_option("--scenario", args->scenario,
                  "scenario to tune: its prediction is A (give at most one measured trace)");
  args->screenshot_option = sub->add_option("--screenshot", args->screenshot,
                                            "headless: render and write this PNG, then exit");
  args->frames_option = sub->add_option(
      "--frames", args->frames, "headless: frames rendered before the screenshot (default 3)");
  sub->add_option("--size", args->size, "window size WxH (default 1600x1000)");
  sub->add_flag("--overlay", args->overlay, "overlay the two traces in one row per lane");
  sub->add_flag("--select-top", args->select_top, "select the comparison table's first row");
  registry.Add(sub, [args] { return RunView(*args); });
}

}  // namespace shardscope::cli
