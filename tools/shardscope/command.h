// How subcommands plug into the `shardscope` program.
//
// Each subcommand lives in its own file (cmd_<name>.cpp) and exposes one function
//   void RegisterXCommand(CLI::App& app, CommandRegistry& registry);
// that adds a CLI11 subcommand with its options and registers the function to run when that
// subcommand was given. main() calls every Register*Command once, parses, runs the selected
// command and turns its Status into the exit code of formats.md §4.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

#include "core/util/status.h"

namespace shardscope::cli {

class CommandRegistry {
 public:
  // `run` is called after parsing when `sub` was the subcommand given.
  void Add(CLI::App* sub, std::function<Status()> run) {
    commands_.emplace_back(sub, std::move(run));
  }
  // Runs the parsed subcommand; InvalidInput when none was given.
  Status RunSelected() const {
    for (const auto& [sub, run] : commands_) {
      if (sub->parsed()) return run();
    }
    return InvalidInput("no subcommand given (see shardscope --help)");
  }

 private:
  std::vector<std::pair<CLI::App*, std::function<Status()>>> commands_;
};

// Subcommands (one file each).
void RegisterPlanCommand(CLI::App& app, CommandRegistry& registry);
void RegisterModelCommand(CLI::App& app, CommandRegistry& registry);
void RegisterSimulateCommand(CLI::App& app, CommandRegistry& registry);
void RegisterTraceCommands(CLI::App& app, CommandRegistry& registry);  // stats, diff, check-trace
void RegisterViewCommand(CLI::App& app, CommandRegistry& registry);    // the viewer (optional)
void RegisterRunCommand(CLI::App& app, CommandRegistry& registry);     // the real backend
void RegisterSweepCommand(CLI::App& app, CommandRegistry& registry);
void RegisterRecommendCommand(CLI::App& app, CommandRegistry& registry);
void RegisterCalibrateCommand(CLI::App& app, CommandRegistry& registry);

}  // namespace shardscope::cli
