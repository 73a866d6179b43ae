#include "core/trace/trace_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "core/trace/trace_io.h"

namespace shardscope {

std::vector<std::string> CheckTrace(const Trace& trace) {
  std::vector<std::string> problems = trace.import.problems;
  const std::string& src = trace.import.path.empty() ? std::string("trace") : trace.import.path;

  // Lanes never overlap: consecutive events of one (rank, lane) in start order.
  for (size_t i = 1; i < trace.events.size(); ++i) {
    const WorkEvent& p = trace.events[i - 1];
    const WorkEvent& e = trace.events[i];
    if (p.rank != e.rank || p.lane != e.lane) continue;
    if (e.start_ns < p.end_ns()) {
      problems.push_back(fmt::format(
          "{}: rank {} lane {} ({}): \"{}\" [{}] at {} µs starts before \"{}\" [{}] ends at {} µs "
          "(events must not overlap within a lane)",
          src, e.rank, e.lane, TraceLaneName(e.lane), trace.Str(e.name), trace.Str(e.op_id),
          FormatNsAsUs(e.start_ns), trace.Str(p.name), trace.Str(p.op_id),
          FormatNsAsUs(p.end_ns())));
    }
  }

  // op_ids unique per rank and step.
  StrId step_begin = kEmptyStr;
  const bool has_steps = trace.strings.Find("step_begin", &step_begin);
  std::map<int, std::vector<int64_t>> begins;
  for (const Marker& m : trace.markers) {
    if (has_steps && m.name == step_begin) begins[m.rank].push_back(m.time_ns);
  }
  for (auto& [rank, b] : begins) std::sort(b.begin(), b.end());
  struct Seen {
    int64_t start_ns;
    int lane;
  };
  std::map<std::tuple<int, int64_t, StrId>, Seen> first;
  for (const WorkEvent& e : trace.events) {
    int64_t step = 0;
    if (auto it = begins.find(e.rank); it != begins.end()) {
      step =
          std::upper_bound(it->second.begin(), it->second.end(), e.start_ns) - it->second.begin();
      // Before the rank's first step_begin an event belongs to no step: stats and diff would
      // leave its time out without a word.
      if (step == 0) {
        problems.push_back(fmt::format(
            "{}: rank {} lane {} ({}): \"{}\" [{}] starts at {} µs, before the rank's first "
            "step_begin at {} µs (work events belong to a step)",
            src, e.rank, e.lane, TraceLaneName(e.lane), trace.Str(e.name), trace.Str(e.op_id),
            FormatNsAsUs(e.start_ns), FormatNsAsUs(it->second.front())));
      }
    }
    if (e.op_id == kEmptyStr) continue;
    auto [pos, inserted] = first.try_emplace({e.rank, step, e.op_id}, Seen{e.start_ns, e.lane});
    if (!inserted) {
      problems.push_back(fmt::format(
          "{}: rank {}: op_id \"{}\" appears again at {} µs on lane {} (first at {} µs on lane "
          "{}); "
          "op_ids must be unique per rank and step",
          src, e.rank, trace.Str(e.op_id), FormatNsAsUs(e.start_ns), TraceLaneName(e.lane),
          FormatNsAsUs(pos->second.start_ns), TraceLaneName(pos->second.lane)));
    }
  }
  return problems;
}

}  // namespace shardscope
