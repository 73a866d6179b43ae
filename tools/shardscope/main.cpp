// The `shardscope` program: parses the command line, runs one subcommand, and is the only
// place that turns a Status into an exit code (0 ok, 1 check failed, 2 bad input, 3 runtime).
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "core/util/limits.h"
#include "core/util/terminal_text.h"
#include "tools/shardscope/command.h"

#ifndef SHARDSCOPE_VERSION
#define SHARDSCOPE_VERSION "dev"
#endif

int main(int argc, char** argv) {
  using namespace shardscope;
  CLI::App app{"shardscope: plan, predict and verify FSDP2 training steps", "shardscope"};
  app.set_version_flag("--version", std::string("shardscope ") + SHARDSCOPE_VERSION);
  app.require_subcommand(1);
  cli::CommandRegistry registry;
  // REGISTER: one line per subcommand, in the order `--help` lists them.
  cli::RegisterPlanCommand(app, registry);
  cli::RegisterModelCommand(app, registry);
  cli::RegisterSimulateCommand(app, registry);
  cli::RegisterTraceCommands(app, registry);
  cli::RegisterViewCommand(app, registry);
  cli::RegisterRunCommand(app, registry);
  cli::RegisterSweepCommand(app, registry);
  cli::RegisterRecommendCommand(app, registry);
  cli::RegisterCalibrateCommand(app, registry);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every other parse error is a usage error (exit 2), printed
    // as every other error is, so a script can match one prefix.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    // CLI11 says only "Could not convert: --top = 1e9": say what kind of value it was not.
    const bool conversion = dynamic_cast<const CLI::ConversionError*>(&e) != nullptr;
    fmt::print(stderr, "shardscope: error: {}{} (see --help)\n", TerminalSafe(e.what()),
               conversion ? ": not a value of the option's type (INT: a whole number in range, "
                            "FLOAT: a number)"
                          : "");
    return static_cast<int>(ErrorCode::kInvalidInput);
  }

  try {
    Status status = CheckLimitVariables();
    if (status.ok()) status = registry.RunSelected();
    // What the command printed lost on its way out (stdout on a full disk, /dev/full): a report
    // the user never gets is no success (`stats t.json > /dev/full` exited 0).
    if (status.ok() && (std::fflush(stdout) != 0 || std::ferror(stdout) != 0)) {
      status = RuntimeError(
          fmt::format("writing the output to standard output failed ({})", std::strerror(errno)));
    }
    if (!status.ok() && !status.said_elsewhere()) {
      // What the command printed comes before the error, also when stdout is a pipe.
      std::fflush(stdout);
      fmt::print(stderr, "shardscope: error: {}\n", TerminalSafe(status.message()));
      // The trail is for whoever fixes the program: shown for runtime failures, and for every
      // error under SHARDSCOPE_ERROR_TRACE=1, never mixed into the message itself.
      if ((status.code() == ErrorCode::kRuntime || ErrorTraceRequested()) &&
          !status.trail().empty()) {
        fmt::print(stderr, "shardscope: error trail: {}\n", status.TrailText());
      }
      std::fflush(stderr);
    }
    return status.exit_code();
  } catch (const std::exception& e) {
    // A bug, not a user mistake: report it plainly rather than abort with a trace.
    std::fflush(stdout);
    fmt::print(stderr, "shardscope: internal error: {}\n", TerminalSafe(e.what()));
    return static_cast<int>(ErrorCode::kRuntime);
  }
}
