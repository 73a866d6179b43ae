// `shardscope stats`, `diff` and `check-trace`: formatting only; the analysis lives in core/trace.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "core/trace/trace_check.h"
#include "core/trace/trace_diff.h"
#include "core/trace/trace_io.h"
#include "core/trace/trace_stats.h"
#include "core/util/count_text.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/output_files.h"
#include "core/util/terminal_text.h"
#include "core/util/units.h"
#include "tools/shardscope/command.h"

namespace shardscope::cli {
namespace {

std::string Ms(int64_t ns) { return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6); }
// Binary units scaled to the value, so a CPU toy run and a 70B model both read well.
std::string GiB(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  const double mag = b < 0 ? -b : b;
  if (mag >= kGiB) return fmt::format("{:.3f} GiB", b / kGiB);
  if (mag >= kMiB) return fmt::format("{:.3f} MiB", b / kMiB);
  if (mag >= kKiB) return fmt::format("{:.3f} KiB", b / kKiB);
  return fmt::format("{} B", bytes);
}

// What the reader found wrong but read past (an empty op_id; for a PyTorch profiler trace,
// what check-trace's Kineto rules refuse, such as a pid of 1.5, which its importer reads past):
// check-trace refuses such a trace, so stats and diff say on stderr that their figures rest on
// it rather than give them as if it were sound. `text`: the trace's text, for the Kineto rules.
void WarnProblems(const Trace& t, std::string_view text) {
  int64_t count = static_cast<int64_t>(t.import.problems.size());
  std::string first = count > 0 ? t.import.problems.front() : std::string();
  if (t.import.source == "kineto") {
    const Result<KinetoCheck> check = CheckKinetoTrace(text, t.import.path);
    if (check.ok() && check->problem_count > 0) {
      if (first.empty() && !check->problems.empty()) first = check->problems.front();
      count += check->problem_count;
    }
  }
  if (count == 0) return;
  fmt::print(stderr,
             "shardscope: warning: {}: {} the figures below read past (`shardscope check-trace {}` "
             "lists them); the first: {}\n",
             t.import.path, CountOf(count, "format problem"), t.import.path, TerminalSafe(first));
}

void PrintImport(const Trace& t) {
  const ImportReport& r = t.import;
  fmt::print("{} ({} trace, {}): {} events read, {} work events, {} counter samples, {} markers\n",
             r.path, r.source, t.metadata.kind, r.events_read, r.work_events, r.counter_samples,
             r.markers);
  if (r.source == "kineto") {
    fmt::print("  FSDP labels used: {}; events not imported: {}\n", r.unit_labels,
               r.unknown_events);
  } else if (r.unknown_events > 0) {
    // Skipped, so every figure below leaves them out: say so rather than drop them silently.
    fmt::print("  events of a kind the format does not define, skipped: {}\n", r.unknown_events);
  }
  if (r.source == "kineto" || r.unknown_events > 0) {
    for (const auto& [name, count] : r.unknown_by_name) fmt::print("    {:>7}  {}\n", count, name);
  }
}

Status RunStats(const std::string& path, const std::string& json_path, int top) {
  SS_RETURN_IF_ERROR(CheckOutputs({{"--json", json_path}}, {{"trace", path}}));
  SS_ASSIGN_OR_RETURN(Trace trace, ReadTrace(path));
  const TraceStats s = ComputeStats(trace, top);
  if (trace.import.source == "kineto") {
    // ReadTrace maps the file; the Kineto rules read its text again (Kineto traces only).
    SS_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
    WarnProblems(trace, text);
  } else {
    WarnProblems(trace, {});
  }
  PrintImport(trace);
  fmt::print(
      "\nsteps (busy = any GPU work; collectives are communication on any lane; exposed comm = "
      "communication while compute is idle)\n");
  fmt::print("{:>4} {:>4} {:>12} {:>12} {:>12} {:>12} {:>12} {:>8}\n", "rank", "step", "step",
             "busy", "idle", "compute", "exposed", "overlap");
  for (const StepStats& st : s.steps) {
    fmt::print("{:>4} {:>4} {:>12} {:>12} {:>12} {:>12} {:>12} {:>7.1f}%\n", st.rank, st.step,
               Ms(st.step_ns), Ms(st.busy_ns), Ms(st.idle_ns), Ms(st.compute_ns),
               Ms(st.exposed_comm_ns), 100 * st.overlap_ratio);
    if (st.host_ns > 0) fmt::print("{:>22} {}\n", "host (GPU idle)", Ms(st.host_ns));
    for (const auto& [kind, ns] : st.exposed_by_kind_ns) {
      fmt::print("{:>22} exposed {} of {} busy\n", kind, Ms(ns), Ms(st.busy_by_kind_ns.at(kind)));
    }
    if (!st.exposed_by_purpose_ns.empty()) fmt::print("{:>22}\n", "by purpose:");
    for (const auto& [purpose, ns] : st.exposed_by_purpose_ns) {
      fmt::print("{:>22} exposed {} of {} busy\n", purpose, Ms(ns),
                 Ms(st.busy_by_purpose_ns.at(purpose)));
    }
    if (!st.exposed_ops.empty()) fmt::print("{:>22}\n", "most exposed:");
    for (const StepStats::ExposedOp& o : st.exposed_ops) {
      fmt::print("{:>22} exposed of {} {:<20} {}\n", Ms(o.exposed_ns), Ms(o.dur_ns), o.purpose,
                 o.op_id.empty() ? o.name : o.op_id);
    }
  }
  if (!s.collectives.empty()) {
    fmt::print("\ncollectives\n{:<16} {:>8} {:>14} {:>12} {:>12}\n", "kind", "count", "bytes",
               "time", "busbw GB/s");
    for (const CollectiveStats& c : s.collectives) {
      fmt::print("{:<16} {:>8} {:>14} {:>12} {:>12.2f}\n", c.kind, c.count, c.bytes, Ms(c.time_ns),
                 c.busbw_gbps);
    }
  }
  if (!s.top_ops.empty()) {
    fmt::print("\ntop operations by time\n");
    for (const TopOp& o : s.top_ops) {
      fmt::print("  {:>12}  rank {} {:<14} {} [{}]\n", Ms(o.dur_ns), o.rank, TraceLaneName(o.lane),
                 o.name, o.op_id);
    }
  }
  for (const MemoryPeak& m : s.memory) {
    fmt::print("\nmemory peak, rank {} ({}): {} at {} µs\n", m.rank, m.key, GiB(m.peak_bytes),
               FormatNsAsUs(m.time_ns));
    for (const std::string& r : m.running) fmt::print("  running: {}\n", r);
    fmt::print("  {:<24} {:>14} {:>14}\n", "series", "at the peak", "step maximum");
    for (const auto& [k, v] : m.at_peak_bytes) {
      const auto max = m.max_bytes.find(k);
      fmt::print("  {:<24} {:>14} {:>14}\n", k, GiB(v),
                 max == m.max_bytes.end() ? "" : GiB(max->second));
    }
    if (!m.by_phase.empty()) fmt::print("  peak by phase (of the compute event last started):\n");
    for (const char* phase : {"forward", "backward", "optimizer"}) {
      const auto it = m.by_phase.find(phase);
      if (it == m.by_phase.end()) continue;
      fmt::print("    {:<22} {} at {} µs\n", phase, GiB(it->second.peak_bytes),
                 FormatNsAsUs(it->second.time_ns));
    }
  }
  if (!json_path.empty()) {
    nlohmann::json j = StatsToJson(s);
    j["trace"] = path;
    SS_RETURN_IF_ERROR(WriteFileAtomic(json_path, DumpJson(j, 2) + "\n"));
  }
  return Status::Ok();
}

// A trace when the text has traceEvents; otherwise a summary JSON object.
bool LooksLikeTrace(const std::string& text) {
  return text.find("\"traceEvents\"") != std::string::npos;
}

// Converted in double, never through int64: a summary may hold 1e300 s, which is printed as it
// is rather than wrapped (issue 15).
std::string FormatValue(double v, const std::string& unit) {
  auto figure = [](double x, const char* u) {
    return std::isfinite(x) && std::fabs(x) < 1e12 ? fmt::format("{:.3f} {}", x, u)
                                                   : fmt::format("{:.6g} {}", x, u);
  };
  if (unit == "ns") return figure(v / 1e6, "ms");
  const double bytes = unit == "GiB" ? v * kGiB : v;
  if (unit == "bytes" || unit == "GiB") {
    return std::isfinite(bytes) && std::fabs(bytes) < 9e18
               ? GiB(static_cast<int64_t>(std::llround(bytes)))
               : figure(bytes / kGiB, "GiB");
  }
  if (unit == "s") return figure(v * 1e3, "ms");
  return fmt::format("{:.6g} {}", v, unit);
}

// "+5.50%", or "new" for a figure that was 0 in A.
std::string FormatRelative(const MetricDelta& m) {
  const std::optional<double> rel = m.relative();
  if (!rel) return "new";
  const double pct = 100 * *rel;
  return std::isfinite(pct) && std::fabs(pct) < 1e9 ? fmt::format("{:+.2f}%", pct)
                                                    : fmt::format("{:+.3g}%", pct);
}

Status RunDiff(const std::string& path_a, const std::string& path_b, const std::string& tol_spec,
               const std::string& json_path) {
  SS_ASSIGN_OR_RETURN(Tolerances tol, ParseTolerances(tol_spec));
  SS_RETURN_IF_ERROR(
      CheckOutputs({{"--json", json_path}}, {{"input A", path_a}, {"input B", path_b}}));
  SS_ASSIGN_OR_RETURN(std::string text_a, ReadFile(path_a));
  SS_ASSIGN_OR_RETURN(std::string text_b, ReadFile(path_b));
  // An empty file is neither kind: said so, not called a summary by default.
  for (const std::string* path : {&path_a, &path_b}) {
    const std::string& text = path == &path_a ? text_a : text_b;
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      return InvalidInput(*path + ": empty (expected a trace or a summary JSON)");
    }
  }
  const bool trace_a = LooksLikeTrace(text_a), trace_b = LooksLikeTrace(text_b);
  if (trace_a != trace_b) {
    // The file without traceEvents is a summary only if it reads as one: not JSON, or JSON of
    // neither kind, is said as such.
    const std::string& other_path = trace_a ? path_b : path_a;
    SS_ASSIGN_OR_RETURN(const nlohmann::json other,
                        ParseJsonInput(trace_a ? text_b : text_a, other_path));
    SS_RETURN_IF_ERROR(CheckSummaryDocument(other, other_path));
    return InvalidInput(
        fmt::format("{} is a {} but {} is a {}: diff compares two traces or two summaries", path_a,
                    trace_a ? "trace" : "summary", path_b, trace_b ? "trace" : "summary"));
  }
  DiffReport report;
  if (trace_a) {
    SS_ASSIGN_OR_RETURN(Trace a, ParseTrace(text_a, path_a));
    WarnProblems(a, text_a);
    text_a.clear();
    text_a.shrink_to_fit();
    SS_ASSIGN_OR_RETURN(Trace b, ParseTrace(text_b, path_b));
    WarnProblems(b, text_b);
    SS_ASSIGN_OR_RETURN(report, DiffTraces(a, b, tol));
  } else {
    SS_ASSIGN_OR_RETURN(const nlohmann::json ja, ParseJsonInput(text_a, path_a));
    SS_ASSIGN_OR_RETURN(const nlohmann::json jb, ParseJsonInput(text_b, path_b));
    SS_ASSIGN_OR_RETURN(report, DiffSummaries(ja, jb, tol, path_a, path_b));
  }
  fmt::print("diff {} → {}\n", path_a, path_b);
  if (trace_a) {
    fmt::print("ops: {} vs {}, {} matched, {} beyond the op tolerance\n", report.ops_a,
               report.ops_b, report.ops_matched, report.ops_over);
  }
  auto list = [](const char* what, const std::vector<std::string>& items, int64_t count) {
    if (count == 0) return;
    fmt::print("{} ({}):\n", what, count);
    for (size_t i = 0; i < items.size() && i < 20; ++i) fmt::print("  {}\n", items[i]);
    if (count > 20) fmt::print("  … {} more (see --json)\n", count - 20);
  };
  for (const std::string& n : report.notes) fmt::print("note: {}\n", n);
  list("removed (in A only)", report.removed, report.removed_count);
  list("added (in B only)", report.added, report.added_count);
  list("reordered within a lane", report.reordered, report.reordered_count);
  fmt::print("metrics (beyond tolerance first, then by impact):\n");
  size_t shown = 0;
  for (const MetricDelta& m : report.metrics) {
    if (shown++ >= 25) break;
    fmt::print("  {} {:<48} {:>14} → {:<14} {:>8}  tol {}\n", m.over ? "✗" : " ", m.metric,
               FormatValue(m.a, m.unit), FormatValue(m.b, m.unit), FormatRelative(m),
               m.tolerance.empty() ? "off" : m.tolerance);
  }
  if (!report.fit_change.empty()) {
    fmt::print("{} memory: {}\n", report.fit_lost ? "✗" : " ", report.fit_change);
  }
  for (const std::string& f : report.failed_runs) fmt::print("✗ {}\n", f);
  fmt::print("{}\n", report.within_tolerance ? "within tolerance" : "BEYOND tolerance");
  if (!json_path.empty()) {
    nlohmann::json j = DiffToJson(report);
    j["a"] = path_a;
    j["b"] = path_b;
    SS_RETURN_IF_ERROR(WriteFileAtomic(json_path, DumpJson(j, 2) + "\n"));
  }
  if (!report.within_tolerance)
    return CheckFailed(fmt::format("{} and {} differ beyond tolerance", path_a, path_b));
  return Status::Ok();
}

// A PyTorch profiler trace: what its format promises, then whether it imports.
Status RunCheckKineto(const std::string& path, const std::string& text) {
  SS_ASSIGN_OR_RETURN(KinetoCheck check, CheckKinetoTrace(text, path));
  if (check.problem_count > 0) {
    for (const std::string& p : check.problems) fmt::print(stderr, "{}\n", TerminalSafe(p));
    if (check.problem_count > static_cast<int64_t>(check.problems.size())) {
      fmt::print(stderr, "… {} more\n", check.problem_count - check.problems.size());
    }
    return InvalidInput(fmt::format("{}: PyTorch profiler (Kineto) trace with {} (listed above)",
                                    path, CountOf(check.problem_count, "problem")));
  }
  ReadTraceOptions options;
  options.format = TraceFormat::kKineto;
  SS_ASSIGN_OR_RETURN(Trace trace, ParseTrace(text, path, options));
  std::string phases;
  for (const auto& [ph, n] : check.events_by_ph) {
    phases += fmt::format("{}{} {}", phases.empty() ? "" : ", ", ph, n);
  }
  const std::string rank =
      check.rank >= 0 ? fmt::format("rank {}{}, ", check.rank,
                                    check.world_size > 0 ? fmt::format(" of {}", check.world_size)
                                                         : std::string())
                      : std::string();
  fmt::print(
      "{}: valid PyTorch profiler (Kineto) trace ({}{} events: {}); imports as {} work events, {} "
      "counter samples, {} markers ({} FSDP labels used)\n",
      path, rank, check.events, phases, trace.events.size(), trace.counters.size(),
      trace.markers.size(), trace.import.unit_labels);
  return Status::Ok();
}

Status RunCheck(const std::string& path) {
  SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  SS_ASSIGN_OR_RETURN(TraceFormat format, DetectTraceFormat(text, path));
  if (format == TraceFormat::kKineto) return RunCheckKineto(path, text);
  ReadTraceOptions options;
  options.format = TraceFormat::kShardscope;
  SS_ASSIGN_OR_RETURN(Trace trace, ParseTrace(text, path, options));
  std::vector<std::string> problems = CheckTrace(trace);
  // Our format defines its events' kinds (formats.md §3): any other phase is a writer's mistake
  // that every reader would skip.
  // (Metadata events of other names, such as Chrome's process_sort_index, are Chrome's own
  // and fine to skip.)
  for (const auto& [name, count] : trace.import.unknown_by_name) {
    if (!name.starts_with("ph=")) continue;
    const auto first = trace.import.first_unknown_index.find(name);
    problems.push_back(fmt::format(
        "{}: {} of a kind the format does not define ({}){}", path, CountOf(count, "event"), name,
        first == trace.import.first_unknown_index.end()
            ? std::string()
            : fmt::format(", the first traceEvents[{}]", first->second)));
  }
  if (problems.empty()) {
    fmt::print("{}: valid {} (ranks {}, {} work events, {} counter samples, {} markers)\n", path,
               trace.metadata.format, trace.Ranks().size(), trace.events.size(),
               trace.counters.size(), trace.markers.size());
    return Status::Ok();
  }
  // The first ones say what is wrong; millions of lines (a trace whose every event overlaps
  // the next) say nothing more.
  constexpr size_t kShown = 100;
  for (size_t i = 0; i < problems.size() && i < kShown; ++i) {
    fmt::print(stderr, "{}\n", TerminalSafe(problems[i]));
  }
  if (problems.size() > kShown) fmt::print(stderr, "… {} more\n", problems.size() - kShown);
  return InvalidInput(fmt::format("{}: {} ({} above)", path,
                                  CountOf(static_cast<int64_t>(problems.size()), "problem"),
                                  problems.size() > kShown ? "the first 100 listed" : "listed"));
}

}  // namespace

void RegisterTraceCommands(CLI::App& app, CommandRegistry& registry) {
  struct Options {
    std::string trace, json, a, b, tol, check;
    int top = 10;
  };
  auto o = std::make_shared<Options>();

  CLI::App* stats =
      app.add_subcommand("stats", "time accounting, collectives and memory peak of a trace");
  stats->add_option("TRACE", o->trace, "trace file (ours or PyTorch profiler; .gz accepted)")
      ->required();
  stats->add_option("--json", o->json, "write the statistics as JSON")->check(NonEmptyText());
  stats->add_option("--top", o->top, "how many of the longest operations to list")
      ->check(NonNegative());
  registry.Add(stats, [o] { return RunStats(o->trace, o->json, o->top); });

  CLI::App* diff = app.add_subcommand("diff", "compare two traces or two summaries");
  diff->add_option("A", o->a, "baseline trace or summary")->required();
  diff->add_option("B", o->b, "trace or summary to compare")->required();
  diff->add_option("--tol", o->tol,
                   "tolerances, e.g. step_time=+2%,peak_memory=+1GiB,op=off. " + ToleranceHelp())
      ->check(NonEmptyText());
  diff->add_option("--json", o->json, "write the report as JSON")->check(NonEmptyText());
  registry.Add(diff, [o] { return RunDiff(o->a, o->b, o->tol, o->json); });

  CLI::App* check =
      app.add_subcommand("check-trace",
                         "validate a trace: ours against the shardscope format, a PyTorch profiler "
                         "(Kineto) trace against that format");
  check->add_option("FILE", o->check, "trace file (.gz accepted)")->required();
  registry.Add(check, [o] { return RunCheck(o->check); });
}

}  // namespace shardscope::cli
