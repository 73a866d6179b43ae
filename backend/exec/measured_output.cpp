#include "backend/exec/measured_output.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "core/timeline/make_trace.h"
#include "core/timeline/op_accounting.h"
#include "core/util/units.h"

namespace shardscope::backend {
namespace {

// A send issued in one point-to-point group with the receive after it on its lane ends, as
// measured, when the group does (after that receive has started: Runner::FinishOp), so the two
// overlap on the lane, which a trace may not hold (trace.md; check-trace and calibrate refused
// every measured pipeline trace). In the trace the send ends where the receive starts, where
// its lane moved on; the summary keeps the measured end, and the lane's communication time,
// the union of the two, is the same either way.
Timeline TraceTimeline(const Schedule& s, Timeline t) {
  std::map<std::pair<int, int>, std::vector<int>> lanes;  // (role, lane) → timed ops
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (t.ops[i].start_ns < 0) continue;
    lanes[{s.ops[i].role, static_cast<int>(s.ops[i].lane)}].push_back(static_cast<int>(i));
  }
  for (auto& [lane, ops] : lanes) {
    std::stable_sort(ops.begin(), ops.end(),
                     [&](int a, int b) { return t.ops[a].start_ns < t.ops[b].start_ns; });
    for (size_t k = 0; k + 1 < ops.size(); ++k) {
      OpTiming& send = t.ops[ops[k]];
      const OpTiming& recv = t.ops[ops[k + 1]];
      if (s.ops[ops[k]].type == OpType::kSend && s.ops[ops[k + 1]].type == OpType::kRecv &&
          send.end_ns > recv.start_ns) {
        send.end_ns = std::max(send.start_ns, recv.start_ns);
      }
    }
  }
  return t;
}

}  // namespace

Result<MeasuredOutput> MakeMeasuredOutput(const Schedule& schedule, const StepRun& run,
                                          const MeasuredContext& ctx) {
  if (ctx.pricing == nullptr) return InvalidInput("measured output: no scenario pricing");
  // The measured step as a Simulation: the summary the simulator makes of its own timeline.
  sim::Simulation m;
  m.schedule = schedule;
  SS_ASSIGN_OR_RETURN(m.prices,
                      sim::PriceSchedule(m.schedule, *ctx.pricing->cost, ctx.gpus_per_node));
  m.timeline = run.timeline;
  m.memory = {run.memory};
  m.role_metrics = {AccountRole(m.schedule, m.timeline, 0)};
  m.gpu_name = ctx.device.name;
  MeasuredOutput out;
  out.summary = sim::SummarizeStep(m, ctx.pricing->ctx);
  nlohmann::json& j = out.summary_json;
  j = sim::SummaryToJson(out.summary);
  j["kind"] = "measured";
  j["rank"] = ctx.rank;
  j["steps"] = run.steps_run;
  nlohmann::json each = nlohmann::json::array();
  for (int64_t ns : run.step_ns_each) each.push_back(static_cast<double>(ns) / 1e9);
  j["step_times_s"] = std::move(each);
  j["steady_step_time_s"] = static_cast<double>(SteadyStepNs(run)) / 1e9;
  j["issue_us_per_op"] = static_cast<double>(run.issue_ns_per_op) / 1e3;
  j["kernel_workspace_gib"] = ToGiB(run.workspace_bytes);
  j["device"] = ctx.device.name;
  if (!run.failure.ok()) j["failure"] = run.failure.message();

  TraceInfo info;
  info.kind = "measured";
  info.tool_version = ctx.tool_version;
  info.scenario = ctx.scenario;
  info.summary = j;
  info.device = {
      {"name", ctx.device.name},           {"kind", std::string(DeviceKindName(ctx.device.kind))},
      {"index", ctx.device.index},         {"memory_bytes", ctx.device.memory_bytes},
      {"sm_count", ctx.device.sm_count},   {"scenario_gpu", ctx.scenario_gpu},
      {"world_size", ctx.world_size},      {"rank", ctx.rank},
      {"communicators", ctx.communicators}};
  for (const auto& [k, v] : ctx.versions) info.library_versions[k] = v;
  info.extra["steps"] = run.steps_run;
  info.extra["kernel_workspace_bytes"] = run.workspace_bytes;
  if (!ctx.run_id.empty()) info.extra["run_id"] = ctx.run_id;
  out.trace = MakeTrace(m.schedule, TraceTimeline(m.schedule, m.timeline), m.memory, info);
  return out;
}

int64_t SteadyStepNs(const StepRun& run) {
  if (run.step_ns_each.empty()) return run.timeline.step_ns;
  std::vector<int64_t> later(run.step_ns_each.begin() + (run.step_ns_each.size() > 1 ? 1 : 0),
                             run.step_ns_each.end());
  // The median: of an even count, the mean of the two middle steps (the upper one alone read
  // 0.0658 s where the median of 0.0658, 0.0629, 0.0666 and 0.0423 is 0.0644).
  const size_t mid = later.size() / 2;
  std::nth_element(later.begin(), later.begin() + mid, later.end());
  if (later.size() % 2 == 1) return later[mid];
  const int64_t below = *std::max_element(later.begin(), later.begin() + mid);
  return below + (later[mid] - below) / 2;
}

}  // namespace shardscope::backend
