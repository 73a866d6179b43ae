#include "core/schedule/schedule_check.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

Schedule TwoOps() {
  Schedule s;
  s.roles.push_back(Role{});
  s.initial_memory.push_back({});
  s.groups.push_back(ProcessGroup{"g", {0, 1}});
  ScheduleOp a;
  a.op_id = "a";
  a.memory.push_back({MemoryEffect::When::kStart, MemCategory::kTemporaries, 100, 7});
  ScheduleOp b;
  b.op_id = "b";
  b.type = OpType::kAllGather;
  b.name = "ncclAllGather";
  b.group = 0;
  b.bytes = 64;
  b.deps = {0};
  b.memory.push_back({MemoryEffect::When::kEnd, MemCategory::kTemporaries, -100, 7});
  s.ops = {a, b};
  return s;
}

TEST(ScheduleCheckTest, AcceptsABalancedSchedule) {
  const Schedule s = TwoOps();
  EXPECT_TRUE(ValidateSchedule(s).ok());
  const StepTotals t = ComputeStepTotals(s, 0);
  EXPECT_DOUBLE_EQ(t.bus_bytes.at(OpType::kAllGather), 32.0);
  EXPECT_EQ(IssueOrderPeak(s, 0).total_bytes, 100);
}

TEST(ScheduleCheckTest, ReportsLeaksBadFreesForwardDepsAndNames) {
  Schedule leak = TwoOps();
  leak.ops[1].memory.clear();
  Status st = ValidateSchedule(leak);
  EXPECT_NE(st.message().find("still live at the step's end"), std::string::npos);

  Schedule bad_free = TwoOps();
  bad_free.ops[1].memory[0].bytes = -50;
  st = ValidateSchedule(bad_free);
  EXPECT_NE(st.message().find("schedule op 1 ('b'): frees buffer 7"), std::string::npos);

  Schedule fwd_dep = TwoOps();
  fwd_dep.ops[0].deps = {1};
  st = ValidateSchedule(fwd_dep);
  EXPECT_NE(st.message().find("dependency 1 is not an earlier op"), std::string::npos);

  Schedule name = TwoOps();
  name.ops[1].name = "AllGather";
  st = ValidateSchedule(name);
  EXPECT_NE(st.message().find("must begin with nccl"), std::string::npos);

  Schedule dup = TwoOps();
  dup.ops[1].op_id = "a";
  st = ValidateSchedule(dup);
  EXPECT_NE(st.message().find("op_id repeated"), std::string::npos);
}

}  // namespace
}  // namespace shardscope
