// `shardscope sweep [SCENARIO] --vary path=v1,v2,… [--vary …] [--set …] [--objective O] [--top K]
// [--margin GIB] [--csv F] [--json F] [--prices F] [--threads N] [--progress]`: every combination
// of the axes simulated on all cores (sim/explore/sweep.h), invalid ones counted by reason, those
// that fit ranked, the Pareto front of cost against time marked. Formats: docs/sweep.md. Under
// mpirun the combinations are split over the ranks and rank 0 prints
// (tools/shardscope/sweep_ranks.h).
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/util/count_text.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/output_files.h"
#include "sim/explore/price_table.h"
#include "sim/explore/sweep.h"
#include "sim/explore/sweep_output.h"
#include "sim/explore/vary.h"
#include "tools/shardscope/command.h"
#include "tools/shardscope/progress_bar.h"
#include "tools/shardscope/scenario_files.h"
#include "tools/shardscope/sweep_ranks.h"

namespace shardscope::cli {
namespace {

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> varies;
  std::vector<std::string> sets;
  std::string objective = "throughput";
  int top = 20;
  double margin_gib = sim::kDefaultMarginGib;
  std::string csv;
  std::string json;
  std::string prices;
  int threads = 0;
  bool exact = false;
  bool progress = false;
};

Status RunSweepCommand(const SweepArgs& args) {
  // Under a launcher every rank reads the inputs, and their errors are agreed on: rank 0 says
  // what every rank found, once (sweep_ranks.h).
  SS_ASSIGN_OR_RETURN(std::unique_ptr<SweepRanks> ranks, SweepRanks::Start());
  std::vector<sim::VaryAxis> axes;
  int64_t count = 0;
  sim::Objective objective{};
  sim::SweepBase base;
  sim::PriceTable prices = sim::DefaultPriceTable();
  const Status read = [&]() -> Status {
    for (const std::string& v : args.varies) {
      SS_ASSIGN_OR_RETURN(sim::VaryAxis axis, sim::ParseVary(v));
      axes.push_back(std::move(axis));
    }
    SS_ASSIGN_OR_RETURN(count, sim::CombinationCount(axes));
    SS_ASSIGN_OR_RETURN(objective, sim::ParseObjective(args.objective));
    if (args.top < 0)
      return InvalidInput(fmt::format("--top {}: expected 0 (all) or more", args.top));
    // Outputs are checked before the work, and written together after it (all or none).
    std::vector<NamedPath> inputs = {{"scenario", args.scenario}, {"--prices", args.prices}};
    SS_RETURN_IF_ERROR(CheckOutputs({{"--csv", args.csv}, {"--json", args.json}}, inputs));
    if (args.scenario.empty()) {
      SS_ASSIGN_OR_RETURN(base, sim::DefaultSweepBase(args.sets));
    } else {
      SS_ASSIGN_OR_RETURN(base, sim::LoadSweepBase(args.scenario, args.sets));
    }
    // The model and calibration files the variants read are known once their values parse.
    std::vector<NamedPath> reads;
    SS_RETURN_IF_ERROR(sim::CheckAxisValues(base, axes, &reads));
    for (NamedPath& r : reads)
      inputs.push_back({"scenario's " + r.what + " (of a variant)", r.path});
    SS_RETURN_IF_ERROR(CheckDistinctFiles({{"--csv", args.csv}, {"--json", args.json}}, inputs));
    if (!args.prices.empty()) {
      SS_ASSIGN_OR_RETURN(prices, sim::LoadPriceTable(args.prices));
    }
    return Status::Ok();
  }();
  SS_RETURN_IF_ERROR(ranks->Agree(read));
  sim::SweepOptions options;
  options.threads = args.threads;
  options.exact = args.exact;
  options.objective = objective;
  options.prices = &prices;
  // Under a launcher only rank 0 reports (the others' share is gathered there).
  const bool root = ranks->rank() == 0;
  ProgressBar bar("sweep");
  if (root && (args.progress || StderrIsTty())) {
    options.progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
  }
  if (root) {
    // On stderr: --json /dev/stdout may be the output.
    if (args.scenario.empty())
      fmt::print(stderr, "sweep: no scenario given: varying {}\n", sim::kDefaultScenarioWhat);
    fmt::print(stderr, "sweep: {} of {}\n", CountOf(count, "combination"),
               CountOf(static_cast<int64_t>(axes.size()), "axis", "axes"));
  }
  bool print = true;
  Result<sim::SweepResult> result = ranks->Sweep(base, axes, options, &print);
  bar.Finish();
  if (!result.ok()) return result.status();
  if (!print) return Status::Ok();
  sim::SweepReport report;
  report.scenario = base.source;
  report.base_sets = args.sets;
  for (const sim::VaryAxis& a : axes) report.paths.push_back(a.path);
  report.objective = objective;
  report.top = args.top;
  report.margin_gib = args.margin_gib;
  // Values that parsed but never ran (the plan or the simulation refused each combination);
  // where nothing ran at all, the error below says so once.
  if (result->fitting + result->not_fitting > 0)
    report.notes = sim::ValuesNeverValid(*result, axes);
  for (std::string& n : sim::UnpricedNotes(result->variants, result->prices_source))
    report.notes.push_back(std::move(n));
  for (const std::string& n : prices.notes) report.notes.push_back(n);
  if (std::string n = sim::UnvalidatedNote(result->variants); !n.empty())
    report.notes.push_back(std::move(n));
  fmt::print("{}", sim::FormatSweepTable(*result, report));
  std::fflush(stdout);  // the notes after the table, not inside it on a terminal
  for (const std::string& note : report.notes) fmt::print(stderr, "sweep: note: {}\n", note);
  std::vector<std::pair<std::string, std::string>> files;
  if (!args.csv.empty()) files.emplace_back(args.csv, sim::SweepToCsv(*result, report));
  if (!args.json.empty()) {
    files.emplace_back(args.json, DumpJson(sim::SweepToJson(*result, report), 1) + "\n");
  }
  SS_RETURN_IF_ERROR(WriteFilesAtomic(files));
  if (!args.csv.empty()) fmt::print("CSV written to {}\n", args.csv);
  if (!args.json.empty()) fmt::print("JSON written to {}\n", args.json);
  // Nothing ran: the axes (or the base) are wrong, not the hardware's limits.
  if (result->fitting + result->not_fitting == 0 && !result->variants.empty()) {
    const sim::VariantResult& first = result->variants.front();
    return InvalidInput(fmt::format("every combination is invalid; the first ({}): {}",
                                    fmt::join(first.sets, " "), first.message));
  }
  return Status::Ok();
}

}  // namespace

void RegisterSweepCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* sub = app.add_subcommand(
      "sweep", "simulate every combination of --vary axes, rank those that fit, cost and Pareto");
  sub->add_option("scenario", args->scenario, kScenarioOrDefaultHelp);
  sub->add_option("--vary", args->varies,
                  "an axis: path=v1,v2,... or path=a..b, a..b:+k, a..b:xk (repeatable)")
      ->required()
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--set", args->sets, "override a base scenario field, path=value (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--objective", args->objective,
                  "rank by throughput (tokens/s/GPU, default), cost ($ per million tokens), "
                  "memory (peak reserved) or time (s per million tokens)");
  sub->add_option("--top", args->top, "rows of the ranked table (default 20; 0: all)")
      ->check(IntegerIn(0, std::numeric_limits<int>::max()));
  AddMarginOption(sub, &args->margin_gib,
                  "GiB of headroom under which a fitting variant is marked thin (!): peak "
                  "reserved is an estimate");
  sub->add_option("--csv", args->csv, "write every fitting variant, ranked, as CSV here")
      ->check(NonEmptyText());
  sub->add_option("--json", args->json, "write the sweep (shardscope-sweep/1 JSON) here")
      ->check(NonEmptyText());
  sub->add_option("--prices", args->prices,
                  "price table (shardscope-prices/1 JSON) instead of the built-in one")
      ->check(NonEmptyText());
  sub->add_option("--threads", args->threads, "worker threads (default 0: every core)")
      ->check(IntegerIn(0, sim::kMaxThreads));
  sub->add_flag("--exact", args->exact,
                "simulate every micro-batch (default: extrapolate long steps' steady state)");
  sub->add_flag(
      "--progress", args->progress,
      "report progress on stderr even when it is not a terminal (a line per tenth there)");
  registry.Add(sub, [args] { return RunSweepCommand(*args); });
}

}  // namespace shardscope::cli
