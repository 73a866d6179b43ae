// How subcommands plug into the `shardscope` program.
//
// Each subcommand lives in its own file (cmd_<name>.cpp) and exposes one function
//   void RegisterXCommand(CLI::App& app, CommandRegistry& registry);
// that adds a CLI11 subcommand with its options and registers the function to run when that
// subcommand was given. main() calls every Register*Command once, parses, runs the selected
// command and turns its Status into the exit code of formats.md §4.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
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

// Number checks for flags whose message says what was expected: CLI11's own NonNegativeNumber
// and PositiveNumber print their bound as a 300-digit DBL_MAX.
inline CLI::Validator NumberAbove(double bound, bool inclusive) {
  return CLI::Validator(
      [bound, inclusive](std::string& text) -> std::string {
        const std::string expected =
            fmt::format("expected a number {} {:g}", inclusive ? ">=" : ">", bound);
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v)) {
          return expected + ", got '" + text + "'";
        }
        if (inclusive ? v < bound : v <= bound) return fmt::format("{}, got {}", expected, text);
        return {};
      },
      fmt::format("NUMBER{}{:g}", inclusive ? ">=" : ">", bound));
}
inline CLI::Validator NonNegative() { return NumberAbove(0, true); }
// `--margin GIB` (simulate, sweep, recommend): GiB of headroom, >= 0; `what` says what the
// margin does in that command, the help adds the default, which is `*margin_gib` as given
// (sim::kDefaultMarginGib).
inline CLI::Option* AddMarginOption(CLI::App* sub, double* margin_gib, std::string_view what) {
  return sub
      ->add_option("--margin", *margin_gib, fmt::format("{} (default {:g})", what, *margin_gib))
      ->check(NonNegative());
}
// A finite number in (lo, hi]: a bound past it would overflow what the flag converts to
// (--timeout 1e300 as nanoseconds, --memory-limit 1e30 GiB as bytes).
inline CLI::Validator NumberIn(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v) || v <= lo || v > hi) {
          return fmt::format("expected a number > {:g} and <= {:g}, got '{}'", lo, hi, text);
        }
        return {};
      },
      fmt::format("NUMBER in ({:g}, {:g}]", lo, hi));
}

// An integer flag within [lo, hi], checked on the text as typed: CLI11 alone takes '' as 0 and
// clamps 99999999999999999999 to the type's largest value, and a message then quotes a number
// nobody typed.
inline CLI::Validator IntegerIn(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        int64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc() || ptr != end || v < lo || v > hi) {
          return fmt::format("expected an integer from {} to {}, got '{}'", lo, hi, text);
        }
        return {};
      },
      fmt::format("INT in [{}, {}]", lo, hi));
}

// A flag naming a file or folder: given empty ('--csv ""'), it would be skipped silently.
inline CLI::Validator NonEmptyText() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? std::string("expected a non-empty value, got ''") : std::string();
      },
      "TEXT");
}
inline CLI::Validator Positive() { return NumberAbove(0, false); }

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
