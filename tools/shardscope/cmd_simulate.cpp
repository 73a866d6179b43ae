// `shardscope simulate [SCENARIO] [--trace FILE] [--summary FILE] [--set path=value ...]
// [--require-fit] [--margin GIB] [--exact]`: predicts one training step (formats.md §2 summary, §3
// trace); when the job does not fit or fits with less headroom than the margin, prints the fit
// advisor's answer (sim/advisor/fit_advisor.h) and adds it to the summary as "advice".
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "core/trace/trace_io.h"
#include "core/util/count_text.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/output_files.h"
#include "sim/advisor/fit_advisor.h"
#include "sim/advisor/fit_cause.h"
#include "sim/engine/simulator.h"
#include "tools/shardscope/command.h"
#include "tools/shardscope/scenario_files.h"

#ifndef SHARDSCOPE_VERSION
#define SHARDSCOPE_VERSION "dev"
#endif

namespace shardscope::cli {
namespace {

struct SimulateArgs {
  std::string scenario;
  std::string trace;
  std::string summary;
  std::vector<std::string> sets;
  bool require_fit = false;
  bool exact = false;
  double margin_gib = sim::kDefaultMarginGib;
};

std::string Bar(double fraction, int width) {
  const int n = std::clamp(static_cast<int>(fraction * width + 0.5), 0, width);
  return std::string(n, '#') + std::string(width - n, '.');
}

// The verdict's reason in a few words: what to cut (the advice below says it in full), not
// the allocation that happened to cross the line.
std::string ShortCause(const sim::FitCause& cause) {
  if (cause.persistent_exceeds) {
    return fmt::format("persistent state alone, {:.2f} GiB, is over the {:.2f} GiB usable",
                       cause.persistent_gib, cause.usable_gib);
  }
  std::string what;
  for (const sim::CategoryGib& c : cause.dominant) {
    what += fmt::format("{}{} {:.2f} GiB", what.empty() ? "" : ", ", c.category, c.gib);
  }
  return fmt::format("peak in the {}: {}", cause.peak_phase, what.empty() ? "?" : what);
}

// Exposure a user asks about ("why did a deeper prefetch change nothing?"): the collectives
// behind it by op_id, once it is more than 1% of the step.
void PrintExposedCollectives(const sim::Summary& s) {
  if (s.exposed_collectives.empty() || s.exposed_comm_s * 100 <= s.step_time_s) return;
  fmt::print("Exposed communication {:.1f} ms, most exposed collectives:\n",
             s.exposed_comm_s * 1e3);
  for (const sim::Summary::ExposedCollective& e : s.exposed_collectives) {
    fmt::print("  {:8.3f} ms of {:8.3f} ms  {:<20} {}{}\n", e.exposed_s * 1e3, e.duration_s * 1e3,
               e.purpose, e.op_id, e.edge_exposed_s * 2 > e.exposed_s ? "  (step edge)" : "");
  }
  if (s.edge_exposed_comm_s * 2 > s.exposed_comm_s) {
    fmt::print(
        "  {:.1f} of the {:.1f} ms lie at the step's edges: the first all-gathers (before the "
        "forward reaches its second unit) and the last reduce-scatters (after the backward leaves "
        "its second-to-last unit) have no compute to hide under, so no prefetch depth changes "
        "them\n",
        s.edge_exposed_comm_s * 1e3, s.exposed_comm_s * 1e3);
  }
}

void PrintSummary(const sim::Simulation& sim) {
  const sim::Summary& s = sim.summary;
  const Role& role = sim.schedule.roles[sim.reported_role];
  fmt::print("Predicted step: {} GPUs ({} × {} {}), role '{}' (rank {}, stands for {} ranks)\n",
             s.world_size, CountOf(sim.nodes, "node"), s.world_size / std::max(sim.nodes, 1),
             sim.gpu_name, role.name, role.rank, role.ranks_like);
  fmt::print("  step time          {:10.4f} s\n", s.step_time_s);
  fmt::print("  tokens/s/GPU       {:10.0f}   ({} tokens per step)\n", s.tokens_per_s_per_gpu,
             s.tokens_per_step);
  fmt::print(
      "  TFLOP/s per GPU    {:>10}   MFU {:.1f}% (6N + 12*layers*hidden*seq model FLOPs, N "
      "without the embedding, over {:.3g} TFLOP/s dense bf16 peak)\n",
      // Three significant digits below 10 (the CPU ranks' host-cpu entry: 0.00134, not 0.0).
      s.tflops_per_gpu < 10 ? fmt::format("{:.3g}", s.tflops_per_gpu)
                            : fmt::format("{:.1f}", s.tflops_per_gpu),
      100.0 * s.mfu, s.peak_tflops);
  fmt::print("  compute            {:10.4f} s", s.compute_s);
  std::string by_kind;
  for (const auto& [k, v] : s.compute_by_kind_s) {
    by_kind += fmt::format("{}{} {:.4f} s", by_kind.empty() ? "" : ", ", k, v);
  }
  fmt::print("{}\n", by_kind.empty() ? "" : "   (" + by_kind + ", before overlap slowdown)");
  if (s.host_compute_s > 0) {
    fmt::print("  host compute       {:10.4f} s   (offloaded optimizer step on the CPU)\n",
               s.host_compute_s);
  }
  fmt::print("  exposed comm       {:10.4f} s", s.exposed_comm_s);
  std::string kinds;
  for (const auto& [k, v] : s.exposed_comm_by_kind_s)
    kinds += fmt::format("{}{} {:.4f} s", kinds.empty() ? "" : ", ", k, v);
  fmt::print("{}\n", kinds.empty() ? "" : "   (" + kinds + ")");
  fmt::print("  communication busy ");
  std::string busy;
  for (const auto& [k, v] : s.comm_s)
    busy += fmt::format("{}{} {:.4f} s", busy.empty() ? "" : ", ", k, v);
  fmt::print("{}\n", busy.empty() ? "none" : busy);
  if (!s.comm_by_purpose_s.empty()) {
    fmt::print("  by purpose         (exposed of busy)\n");
    for (const auto& [purpose, busy_s] : s.comm_by_purpose_s) {
      fmt::print("    {:<20} {:9.4f} s of {:.4f} s\n", purpose,
                 s.exposed_comm_by_purpose_s.at(purpose), busy_s);
    }
  }
  fmt::print("  overlap ratio      {:10.1f}%   idle {:.4f} s\n", 100.0 * s.overlap_ratio, s.idle_s);
  if (s.overlap_stretch_s > 0) {
    fmt::print(
        "  overlap stretch    {:10.4f} s   (compute slowed by the SMs and HBM bandwidth "
        "communication takes)\n",
        s.overlap_stretch_s);
  }
  fmt::print(
      "Memory{} (allocated = the step's memory model; reserved = caching-allocator estimate)\n",
      sim.schedule.roles.size() > 1 && !s.peak_memory_role.empty()
          ? fmt::format(" of role '{}', the highest allocated peak; peak reserved is the highest "
                        "over every role",
                        s.peak_memory_role)
          : "");
  fmt::print("  peak allocated     {:10.2f} GiB at {:.4f} s ({})\n", s.peak_memory_allocated_gib,
             s.peak_memory_time_s, s.peak_memory_op);
  fmt::print(
      "  peak reserved      {:10.2f} GiB (estimate); usable {:.2f} of {:.2f} GiB HBM -> {}\n",
      s.peak_memory_reserved_gib, s.usable_gib, s.hbm_gib,
      s.fits ? "fits" : "DOES NOT FIT (" + ShortCause(sim::AnalyzeFit(sim)) + ")");
  fmt::print("  allocated peak by phase:\n");
  for (int p = 0; p < kNumStepPhases; ++p) {
    const sim::Summary::PhasePeakFigures& f = s.phase_peaks[p];
    fmt::print("    {:<17} {:8.2f} GiB  {}\n", StepPhaseName(static_cast<StepPhase>(p)),
               f.allocated_gib, f.op.empty() ? "(no allocation)" : f.op);
  }
  fmt::print("  at the allocated peak, by category (and the category's own step maximum):\n");
  const double total = std::max(s.peak_memory_allocated_gib, 1e-9);
  for (int c = 0; c < kNumMemCategories; ++c) {
    const double g = s.memory_at_peak_gib[c];
    fmt::print("    {:<17} {:8.2f} GiB  {}  max {:.2f} GiB\n",
               MemCategoryName(static_cast<MemCategory>(c)), g, Bar(g / total, 40),
               s.memory_max_by_category_gib[c]);
  }
  if (s.host_memory_gib > 0) {
    fmt::print("  pinned host memory {:10.2f} GiB (offload; not part of HBM)\n", s.host_memory_gib);
  }
  PrintExposedCollectives(s);
  if (!s.warnings.empty()) {
    fmt::print("Warnings:\n");
    for (const std::string& w : s.warnings) fmt::print("  - {}\n", w);
  }
  if (!sim.schedule.notes.empty()) {
    fmt::print("Modelled:\n");
    for (const std::string& n : sim.schedule.notes) fmt::print("  - {}\n", n);
  }
}

Status RunSimulate(const SimulateArgs& args) {
  SS_ASSIGN_OR_RETURN(Scenario scenario,
                      LoadScenarioOrDefault(args.scenario, args.sets, "running"));
  // Outputs are checked before the work, and written together after it (all or none).
  SS_RETURN_IF_ERROR(CheckOutputs({{"--summary", args.summary}, {"--trace", args.trace}},
                                  ScenarioFiles(scenario, args.scenario)));
  sim::SimulateOptions options;
  options.keep_memory_samples = !args.trace.empty();
  // A trace is always drawn from the whole step.
  options.exact = args.exact || !args.trace.empty();
  SS_ASSIGN_OR_RETURN(sim::Simulation sim, sim::SimulateScenario(scenario, options));
  if (sim.steady_state && sim::JudgeFit(sim.summary, args.margin_gib) != sim::FitVerdict::kFits) {
    // The fit advisor reads the step's memory op by op: give it the whole step.
    options.exact = true;
    SS_ASSIGN_OR_RETURN(sim, sim::SimulateScenario(scenario, options));
  }
  PrintSummary(sim);
  nlohmann::json summary_json = sim::SummaryToJson(sim.summary);
  if (sim::JudgeFit(sim.summary, args.margin_gib) != sim::FitVerdict::kFits) {
    sim::FitAdviceOptions advice_options;
    advice_options.margin_gib = args.margin_gib;
    SS_ASSIGN_OR_RETURN(sim::FitAdvice advice, sim::AdviseFit(scenario, sim, advice_options));
    fmt::print("{}", sim::FormatFitAdvice(advice));
    summary_json["advice"] = sim::FitAdviceToJson(advice);
  }
  std::vector<std::pair<std::string, std::string>> files;
  if (!args.summary.empty()) files.emplace_back(args.summary, DumpJson(summary_json, 2) + "\n");
  size_t trace_events = 0;
  if (!args.trace.empty()) {
    const Trace trace = sim::SimulationTrace(sim, std::string("shardscope ") + SHARDSCOPE_VERSION);
    trace_events = trace.events.size();
    files.emplace_back(args.trace, SerializeTrace(trace));
  }
  SS_RETURN_IF_ERROR(WriteFilesAtomic(files));
  if (!args.summary.empty()) fmt::print("Summary written to {}\n", args.summary);
  if (!args.trace.empty()) {
    fmt::print("Trace written to {} ({} events)\n", args.trace, trace_events);
  }
  if (args.require_fit && !sim.summary.fits) {
    return CheckFailed(
        fmt::format("the job does not fit: peak reserved {:.2f} GiB > {:.2f} GiB usable",
                    sim.summary.peak_memory_reserved_gib, sim.summary.usable_gib));
  }
  return Status::Ok();
}

}  // namespace

void RegisterSimulateCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sub =
      app.add_subcommand("simulate", "predict one training step (time, throughput, memory)");
  sub->add_option("scenario", args->scenario, kScenarioOrDefaultHelp);
  sub->add_option("--trace", args->trace, "write the predicted trace (Chrome trace JSON) here")
      ->check(NonEmptyText());
  sub->add_option("--summary", args->summary, "write the summary JSON here")->check(NonEmptyText());
  // One value per --set, so `--set a=1 job.json` keeps job.json as the scenario.
  sub->add_option("--set", args->sets, "override a scenario field: path=value (repeatable)")
      ->allow_extra_args(false);
  sub->add_flag("--require-fit", args->require_fit, "exit 1 when the job does not fit in memory");
  sub->add_flag("--exact", args->exact,
                "simulate every micro-batch (default: extrapolate long steps' steady state)");
  AddMarginOption(sub, &args->margin_gib,
                  "GiB of headroom under which a job that fits still gets fit advice");
  registry.Add(sub, [args] { return RunSimulate(*args); });
}

}  // namespace shardscope::cli
