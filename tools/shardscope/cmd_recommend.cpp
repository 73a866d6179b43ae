// `shardscope recommend --model M --global-batch-tokens T [--seq-len S] [--gpu a,b]
// [--max-gpus N] [--budget-per-hour X] [--objective O] [--top K] [--scenarios DIR]
// [--cost-model FILE]... [--threads N] [--progress]`: searches GPU types, counts, meshes,
// micro-batching, checkpointing, prefetch and resharding (sim/explore/recommend.h) and prints the
// best plans, what bounds each, and the scenario file that reproduces it.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/util/ascii_case.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/output_files.h"
#include "sim/explore/price_table.h"
#include "sim/explore/recommend.h"
#include "sim/explore/sweep_output.h"
#include "tools/shardscope/command.h"
#include "tools/shardscope/progress_bar.h"

namespace shardscope::cli {
namespace {

struct RecommendArgs {
  std::string model;
  int64_t global_batch_tokens = 0;
  int64_t seq_len = 8192;
  std::vector<std::string> gpus = {"h100-sxm"};
  int max_gpus = 1024;
  double budget_per_hour = 0;
  bool budget_given = false;
  double margin_gib = sim::kDefaultMarginGib;
  std::string objective = "time";
  int top = 5;
  std::string scenarios;
  std::string json;
  std::string prices;
  std::vector<std::string> cost_models;
  std::vector<std::string> sets;
  int threads = 0;
  bool exact = false;
  bool progress = false;
};

// The plan's one-line label: its flags, less those at 1 (no such parallelism, no
// accumulation) and the ones every plan carries.
std::string Label(const std::vector<std::string>& sets) {
  std::string out;
  for (const std::string& s : sets) {
    const std::string short_set = sim::ShortSet(s);
    const bool at_one = short_set.size() > 2 && short_set.substr(short_set.size() - 2) == "=1" &&
                        short_set != "tp=1" && short_set != "local_batch=1" &&
                        short_set.rfind("nodes=", 0) != 0;
    const bool every_plan = s.rfind("cluster.gpus_per_node=", 0) == 0 ||
                            s.rfind("cluster.cost_model=", 0) == 0 ||
                            s == "parallelism.edp_shard=-1";
    if (at_one || every_plan) continue;
    if (!out.empty()) out += ' ';
    out += short_set;
  }
  return out;
}

// Where --scenarios writes plan k (from 1).
std::string PlanPath(const std::string& folder, int k) {
  return (std::filesystem::path(folder) / fmt::format("plan_{}.json", k)).string();
}

Status RunRecommend(const RecommendArgs& args) {
  sim::RecommendOptions o;
  o.model = args.model;
  o.global_batch_tokens = args.global_batch_tokens;
  o.seq_len = args.seq_len;
  // Split here, not by CLI11, whose split drops an empty item ("a,,b") that Recommend refuses.
  o.gpus.clear();
  for (const std::string& list : args.gpus) {
    for (size_t start = 0;;) {
      const size_t comma = list.find(',', start);
      o.gpus.push_back(list.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  o.max_gpus = args.max_gpus;
  o.cost_models = args.cost_models;
  o.sets = args.sets;
  if (args.budget_given) o.budget_per_hour = args.budget_per_hour;
  o.margin_gib = args.margin_gib;
  SS_ASSIGN_OR_RETURN(o.objective, sim::ParseObjective(args.objective));
  o.top = args.top;
  o.threads = args.threads;
  o.exact = args.exact;
  sim::PriceTable prices = sim::DefaultPriceTable();
  if (!args.prices.empty()) {
    SS_ASSIGN_OR_RETURN(prices, sim::LoadPriceTable(args.prices));
  }
  o.prices = &prices;
  // The folder is made before the search, so a path that cannot be one fails at once; the
  // plans' files are written together once all are known.
  if (!args.scenarios.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.scenarios, ec);
    if (ec || !std::filesystem::is_directory(args.scenarios)) {
      return InvalidInput(fmt::format("--scenarios {}: cannot create the folder ({})",
                                      args.scenarios,
                                      ec ? ec.message() : std::string("a file is in the way")));
    }
    SS_RETURN_IF_ERROR(CheckOutputPath("--scenarios", PlanPath(args.scenarios, 1)));
  }
  if (!args.json.empty()) {
    SS_RETURN_IF_ERROR(CheckOutputPath("--json", args.json));
    std::vector<NamedPath> inputs = {{"--model", args.model}, {"--prices", args.prices}};
    for (const std::string& c : args.cost_models) inputs.push_back({"--cost-model", c});
    SS_RETURN_IF_ERROR(CheckDistinctFiles({{"--json", args.json}}, inputs));
  }
  ProgressBar bar("recommend");
  if (args.progress || StderrIsTty()) {
    o.progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
  }
  Result<sim::Recommendation> rec_or = sim::Recommend(o);
  bar.Finish();
  if (!rec_or.ok()) return rec_or.status();
  const sim::Recommendation& rec = *rec_or;
  fmt::print(
      "Searched {} plans of {} for {} tokens per step (seq {}{}): {} pruned by memory, {} by "
      "budget, {} by their throughput bound; {} simulated{}, {} fit with {:g} GiB of headroom or "
      "more (--margin), {} fit with less, {} invalid\n",
      rec.generated, args.model, args.global_batch_tokens, args.seq_len,
      args.sets.empty() ? std::string()
                        : fmt::format("; every plan with {}", fmt::join(args.sets, " ")),
      rec.pruned_memory, rec.pruned_budget, rec.pruned_bound, rec.simulated,
      rec.refined > 0 ? fmt::format(" ({} of them plans that could reach the best, again with "
                                    "other FSDP settings: deeper prefetch, no resharding after "
                                    "forward, where not pinned)",
                                    rec.refined)
                      : std::string(),
      rec.fitting, args.margin_gib, rec.thin, rec.invalid);
  for (const std::string& n : rec.notes) fmt::print("  note: {}\n", n);
  if (rec.plans.empty()) {
    const bool margin = args.margin_gib > 0;
    // Said for what stopped the plans: a budget that prices every one out is not a margin's
    // or a GPU count's doing.
    if (rec.fitting == 0 && rec.thin == 0 && rec.pruned_budget > 0 && rec.simulated == 0) {
      return CheckFailed(fmt::format(
          "no plan within --budget-per-hour {:g}: {} of the {} plans cost more per hour, {} "
          "need more memory than the GPUs have, {} are invalid; raise --budget-per-hour",
          args.budget_per_hour, rec.pruned_budget, rec.generated, rec.pruned_memory, rec.invalid));
    }
    // Every plan stopped by the state alone: no margin or budget brings one back.
    if (rec.simulated == 0 && rec.pruned_memory > 0 && rec.pruned_budget == 0) {
      return CheckFailed(fmt::format(
          "no plan fits: in each of the {} plans the weights, gradients and AdamW's two moments "
          "alone (four times the parameters' bytes, sharded over every GPU of the plan) need "
          "more than a GPU's memory{}; raise --max-gpus (more GPUs to shard over) or add a "
          "--gpu with more memory",
          rec.pruned_memory, margin ? " less the --margin" : ""));
    }
    return CheckFailed(
        fmt::format("no plan fits{}: {}raise --max-gpus or --budget-per-hour, or add a --gpu",
                    margin ? fmt::format(" with {:g} GiB of headroom ({} fit with less)",
                                         args.margin_gib, rec.thin)
                           : std::string(),
                    margin ? "lower --margin, " : ""));
  }
  fmt::print(
      "Best {} by {} (P = on the Pareto front of cost against time per million tokens among "
      "the plans that fit; prices: {}):\n",
      rec.plans.size(), args.objective, prices.source);
  fmt::print("{}", sim::RankedTableHeader());
  for (size_t k = 0; k < rec.plans.size(); ++k) {
    fmt::print("{}", sim::RankedTableRow(static_cast<int>(k) + 1, rec.plans[k].result,
                                         Label(rec.plans[k].result.sets)));
  }
  // Which GPU: each one's best, also those too slow or dear for the top K.
  if (!rec.best_per_gpu.empty()) {
    fmt::print("\nBest plan per GPU by {}:\n", args.objective);
    fmt::print("{}", sim::RankedTableHeader());
    bool unranked = false;
    for (const sim::RecommendedPlan& p : rec.best_per_gpu) {
      const int rank = sim::PlanRank(rec, p);
      unranked = unranked || rank == 0;
      fmt::print("{}", sim::RankedTableRow(rank, p.result, Label(p.result.sets)));
    }
    for (const std::string& gpu : rec.gpus_without_plan) fmt::print("  {}: no plan fits\n", gpu);
    if (unranked) fmt::print("  (rank -: not among the best {} above)\n", rec.plans.size());
  }
  if (!rec.pareto_front.empty()) {
    fmt::print(
        "\nPareto front of cost against time per million tokens ({} of the plans that fit, "
        "fastest first; rank: among the best {} above):\n",
        rec.pareto_front.size(), rec.plans.size());
    for (const sim::RecommendedPlan& p : rec.pareto_front) {
      const int rank = sim::PlanRank(rec, p);
      const std::string label =
          Label(p.result.sets) + (rank > 0 ? fmt::format("  (rank {})", rank) : "");
      fmt::print("{}", sim::ParetoFrontLine(p.result, label, args.margin_gib));
    }
  }
  std::vector<std::pair<std::string, std::string>> files;
  // Each plan, then each GPU's best that is not one of them, with its scenario (and the file
  // --scenarios writes it to: plan_<k>.json, plan_<gpu>.json).
  struct Shown {
    std::string title, path;
    const sim::RecommendedPlan* plan;
  };
  std::vector<Shown> shown;
  const std::filesystem::path folder(args.scenarios);
  for (size_t k = 0; k < rec.plans.size(); ++k) {
    shown.push_back({fmt::format("Plan {}", k + 1),
                     PlanPath(args.scenarios, static_cast<int>(k) + 1), &rec.plans[k]});
  }
  for (const sim::RecommendedPlan& p : rec.best_per_gpu) {
    if (sim::PlanRank(rec, p) > 0) continue;
    const std::string& gpu = p.result.figures.gpu;
    shown.push_back(
        {fmt::format("Best on {}", gpu), (folder / ("plan_" + gpu + ".json")).string(), &p});
  }
  for (const auto& [title, path, plan] : shown) {
    const sim::RecommendedPlan& p = *plan;
    const sim::VariantFigures& f = p.result.figures;
    fmt::print("\n{}: {} × {}{}, bound by {} ({}); {:.1f} s per million tokens{}\n", title,
               f.world_size, f.gpu,
               p.scenario["cluster"].contains("cost_model") ? " (calibrated)" : "", p.bound,
               p.bound_detail, f.s_per_mtok,
               f.usd_per_gpu_hour
                   ? fmt::format(", {:.2f} $/h for the cluster", *f.usd_per_gpu_hour * f.world_size)
                   : std::string());
    const std::string text = DumpJson(p.scenario, 2) + "\n";
    if (!args.scenarios.empty()) {
      files.emplace_back(path, text);
      fmt::print("  scenario: {} (shardscope simulate {})\n", path, path);
    } else {
      fmt::print("{}", text);
    }
  }
  const size_t plan_files = files.size();
  // No plan file may replace a file the search read (a model file or a price table kept in
  // the folder): checked on the names the plans took, before any is written.
  std::vector<NamedPath> outputs;
  for (const auto& [path, text] : files) outputs.push_back({"--scenarios", path});
  std::vector<NamedPath> inputs = {{"--model", args.model}, {"--prices", args.prices}};
  for (const std::string& c : args.cost_models) inputs.push_back({"--cost-model", c});
  if (!args.json.empty()) {
    files.emplace_back(args.json, DumpJson(sim::RecommendationToJson(rec, o), 1) + "\n");
    outputs.push_back({"--json", args.json});
  }
  SS_RETURN_IF_ERROR(CheckDistinctFiles(outputs, inputs));
  SS_RETURN_IF_ERROR(WriteFilesAtomic(files));
  if (plan_files > 0) fmt::print("{} scenario files written to {}\n", plan_files, args.scenarios);
  if (!args.json.empty()) fmt::print("recommendation written to {}\n", args.json);
  // A folder reused keeps an earlier run's plan files this run did not write (later ranks,
  // other GPUs' bests): say which, rather than delete what may be the user's.
  if (!args.scenarios.empty()) {
    std::set<std::string> written;
    for (size_t i = 0; i < plan_files; ++i) {
      written.insert(std::filesystem::path(files[i].first).filename().string());
    }
    std::vector<std::string> stale;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(args.scenarios, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("plan_") && name.ends_with(".json") && !written.contains(name)) {
        stale.push_back(name);
      }
    }
    // plan_2 before plan_10, then the GPUs' by name.
    std::sort(stale.begin(), stale.end(), [](const std::string& a, const std::string& b) {
      return std::pair(a.size(), a) < std::pair(b.size(), b);
    });
    if (!stale.empty()) {
      fmt::print("  note: {} also holds {} from an earlier run (not this run's plans)\n",
                 args.scenarios, fmt::join(stale, ", "));
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterRecommendCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<RecommendArgs>();
  CLI::App* sub = app.add_subcommand(
      "recommend", "search GPUs, meshes, batching and checkpointing for the best training plans");
  sub->add_option("--model", args->model, "built-in model name, HF config.json or module tree")
      ->required();
  sub->add_option("--global-batch-tokens", args->global_batch_tokens,
                  "tokens per optimizer step (a multiple of --seq-len)")
      ->required()
      ->check(IntegerIn(1, std::numeric_limits<int64_t>::max()));
  sub->add_option("--seq-len", args->seq_len, "tokens per sequence (default 8192)")
      ->check(IntegerIn(1, std::numeric_limits<int64_t>::max()));
  sub->add_option("--gpu", args->gpus, "catalog GPU names, comma-separated (default h100-sxm)");
  sub->add_option("--max-gpus", args->max_gpus, "most GPUs a plan may use (default 1024)")
      ->check(IntegerIn(1, std::numeric_limits<int>::max()));
  sub->add_option("--budget-per-hour", args->budget_per_hour,
                  "most the cluster may cost per hour, in the price table's currency")
      ->check(Positive())
      ->each([args](const std::string&) { args->budget_given = true; });
  AddMarginOption(sub, &args->margin_gib,
                  "GiB of headroom under the usable HBM a plan must leave, as peak reserved is "
                  "an estimate");
  sub->add_option("--objective", args->objective,
                  "rank by time (s per million tokens, default), cost, throughput or memory");
  sub->add_option("--top", args->top, "plans shown (default 5)")
      ->check(IntegerIn(1, std::numeric_limits<int>::max()));
  sub->add_option("--scenarios", args->scenarios,
                  "write each plan's scenario to DIR/plan_<k>.json instead of printing it")
      ->check(NonEmptyText());
  sub->add_option("--prices", args->prices,
                  "price table (shardscope-prices/1 JSON) instead of the built-in one")
      ->check(NonEmptyText());
  sub->add_option("--json", args->json,
                  "write the plans, each GPU's best and the search's counts "
                  "(shardscope-recommend/1)")
      ->check(NonEmptyText());
  sub->add_option("--cost-model", args->cost_models,
                  "a calibration file (calibrate --out) for the GPU it was fitted on "
                  "(repeatable, one per GPU): that GPU's plans are searched and simulated with it")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(NonEmptyText());
  sub->add_option("--set", args->sets,
                  "a setting every plan keeps, path=value as simulate takes it (repeatable): the "
                  "optimizer, precision, expandable segments, ...; on a searched axis (nodes, a "
                  "mesh degree, checkpointing, prefetch, reshard) it pins the search to it")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(NonEmptyText());
  sub->add_option("--threads", args->threads, "worker threads (default 0: every core)")
      ->check(IntegerIn(0, sim::kMaxThreads));
  sub->add_flag("--exact", args->exact,
                "simulate every micro-batch (default: extrapolate long steps' steady state)");
  sub->add_flag(
      "--progress", args->progress,
      "report progress on stderr even when it is not a terminal (a line per tenth there)");
  registry.Add(sub, [args] { return RunRecommend(*args); });
}

}  // namespace shardscope::cli
