// MakeTrace from a hand-made schedule and timeline, as a backend would call it with a measured
// timeline: no simulator involved.
#include "core/timeline/make_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/timeline/op_accounting.h"
#include "core/trace/trace_io.h"
#include "core/trace/trace_stats.h"

namespace shardscope {
namespace {

struct Step {
  Schedule schedule;
  Timeline timeline;
};

// One role (rank 3): compute [0,100), a TP all-reduce on the compute lane [100,150) over 4
// ranks, an all-gather [0,80) over 8, a zero-length wait at 150, host work [150,250).
Step MeasuredStep() {
  Step s;
  s.schedule.roles.push_back(Role{"dense", 3, 8});
  s.schedule.groups.push_back(ProcessGroup{"tp", {0, 1, 2, 3}, {"tp"}});
  s.schedule.groups.push_back(ProcessGroup{"fsdp", {0, 1, 2, 3, 4, 5, 6, 7}, {"fsdp_shard"}});
  auto add = [&](Lane lane, OpType type, const char* id, const char* name, int group, int64_t bytes,
                 int64_t start, int64_t end) {
    ScheduleOp op;
    op.lane = lane;
    op.type = type;
    SetOpId(s.schedule, op, id);
    op.name = AddWord(s.schedule, name);
    op.group = group;
    op.bytes = bytes;
    s.schedule.ops.push_back(op);
    s.timeline.ops.push_back({start, end});
    return &s.schedule.ops.back();
  };
  ComputeItem item;
  item.cost.fwd_flops = 5e9;
  add(Lane::kCompute, OpType::kCompute, "fwd/a/compute", "fwd a", -1, 0, 0, 100)->items = {item};
  add(Lane::kCompute, OpType::kAllReduce, "fwd/a/tp_all_reduce", "ncclAllReduce", 0, 4000, 100,
      150);
  add(Lane::kAllGather, OpType::kAllGather, "fwd/a/all_gather", "ncclAllGather", 1, 8000, 0, 80);
  add(Lane::kCompute, OpType::kWait, "bwd/wait", "wait", -1, 0, 150, 150);
  add(Lane::kCompute, OpType::kOptimizer, "step/optimizer", "optimizer", -1, 0, 150, 250)->on_host =
      true;
  s.timeline.role_end_ns = {250};
  s.timeline.step_ns = 250;
  return s;
}

TEST(MakeTrace, MeasuredStepKeepsTheCallersKindAndFigures) {
  const Step s = MeasuredStep();
  TraceInfo info;
  info.kind = "measured";
  info.tool_version = "backend test";
  info.extra["note"] = "x";
  const Trace t = MakeTrace(s.schedule, s.timeline, {}, info);
  EXPECT_EQ(t.metadata.kind, "measured");
  EXPECT_EQ(t.metadata.extra["note"], "x");
  EXPECT_EQ(t.metadata.extra["roles"][0]["rank"], 3);
  ASSERT_EQ(t.events.size(), 4u);  // the zero-length wait is no event
  EXPECT_EQ(t.events[0].rank, 3);
  EXPECT_EQ(t.events[0].flops, 5e9);
  const WorkEvent& ar = t.events[1];
  EXPECT_EQ(ar.lane, kLaneCompute);
  EXPECT_EQ(ar.group_size, 4);
  EXPECT_DOUBLE_EQ(ar.busbw_gbps, 4000.0 / 50.0 * 1.5);  // bytes / ns × 2(n−1)/n
  EXPECT_DOUBLE_EQ(t.events[2].busbw_gbps, 8000.0 / 80.0 * 0.875);
  EXPECT_EQ(t.ExtraArgs(t.events[3].extra_args)["on_host"], true);
  EXPECT_TRUE(t.counters.empty());
  ASSERT_EQ(t.markers.size(), 1u);  // step_begin; no memory, so no peak marker
}

TEST(MakeTrace, StatsOfTheTraceEqualTheTimelinesAccounting) {
  const Step s = MeasuredStep();
  const StepAccount a = AccountRole(s.schedule, s.timeline, 0);
  EXPECT_EQ(a.compute_ns, 100);
  EXPECT_EQ(a.comm_ns, 130);
  EXPECT_EQ(a.exposed_comm_ns, 50);  // the TP all-reduce: compute is idle while it runs
  EXPECT_EQ(a.host_ns, 100);
  EXPECT_EQ(a.idle_ns, 100);
  const TraceStats st = ComputeStats(MakeTrace(s.schedule, s.timeline, {}, TraceInfo{}));
  ASSERT_EQ(st.steps.size(), 1u);
  EXPECT_EQ(st.steps[0].step_ns, a.step_ns);
  EXPECT_EQ(st.steps[0].compute_ns, a.compute_ns);
  EXPECT_EQ(st.steps[0].comm_ns, a.comm_ns);
  EXPECT_EQ(st.steps[0].exposed_comm_ns, a.exposed_comm_ns);
  EXPECT_EQ(st.steps[0].host_ns, a.host_ns);
  EXPECT_EQ(st.steps[0].idle_ns, a.idle_ns);
}

TEST(MakeTrace, MemorySeriesBecomeCountersAndMarkers) {
  const Step s = MeasuredStep();
  RoleMemory mem;
  MemorySample sample;
  sample.time_ns = 10;
  sample.category_bytes[static_cast<int>(MemCategory::kActivations)] = 64;
  sample.allocated_bytes = 64;
  sample.reserved_bytes = 128;
  mem.samples = {sample};
  mem.peak_allocated_bytes = 64;
  mem.peak_allocated_time_ns = 10;
  mem.peak_allocated_op = 0;
  mem.oom = true;
  mem.oom_op = -1;
  const std::vector<RoleMemory> memory = {mem};
  const Trace t = MakeTrace(s.schedule, s.timeline, memory, TraceInfo{});
  EXPECT_EQ(t.counters.size(), static_cast<size_t>(kNumMemCategories) + 2);
  ASSERT_EQ(t.markers.size(), 3u);  // step_begin, peak_memory, oom
  EXPECT_EQ(t.Str(t.markers[1].name), "peak_memory");
  EXPECT_EQ(t.ExtraArgs(t.markers[1].extra_args)["op_id"], "fwd/a/compute");
  EXPECT_EQ(t.ExtraArgs(t.markers[2].extra_args)["op_id"], "(initial state)");
}

TEST(MakeTrace, ComputeSlicesNameTheirUnitAndOnlyUsedLanesAreDeclared) {
  Step s = MeasuredStep();
  s.schedule.ops[0].name = AddWord(s.schedule, "forward");
  s.schedule.ops[0].unit = AddWord(s.schedule, "model.layers.3");
  SetOpId(s.schedule, s.schedule.ops[0], "fwd/model.layers.3/compute");
  ScheduleOp bwd = s.schedule.ops[0];
  bwd.name = AddWord(s.schedule, "backward");
  bwd.unit = -1;
  SetOpId(s.schedule, bwd, "bwd/root/compute");
  s.schedule.ops.push_back(bwd);
  s.timeline.ops.push_back({250, 300});
  const Trace t = MakeTrace(s.schedule, s.timeline, {}, TraceInfo{});
  std::vector<std::string> names;
  for (const WorkEvent& e : t.events) names.emplace_back(t.Str(e.name));
  EXPECT_EQ(names.front(), "fwd model.layers.3");
  EXPECT_EQ(names.back(), "bwd root");
  EXPECT_NE(std::find(names.begin(), names.end(), "ncclAllGather"), names.end());
  // Lanes 1 (compute) and 2 (all-gather) have work; the written trace declares only those.
  const std::string text = SerializeTrace(t);
  size_t declared = 0;
  for (size_t at = text.find("thread_name"); at != std::string::npos;
       at = text.find("thread_name", at + 1))
    ++declared;
  EXPECT_EQ(declared, 2u);
  EXPECT_EQ(text.find("\"reduce_scatter\""), std::string::npos);
}

}  // namespace
}  // namespace shardscope
