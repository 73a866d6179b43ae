#include "core/schedule/schedule_check.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace shardscope {
namespace {

Schedule TwoOps() {
  Schedule s;
  s.roles.push_back(Role{});
  s.initial_memory.push_back({});
  s.initial_memory[0][static_cast<int>(MemCategory::kShardedParams)] = 32;
  s.groups.push_back(ProcessGroup{"g", {0, 1}, {"fsdp_shard"}});
  Buffer temp;
  temp.id = 0;
  temp.category = MemCategory::kTemporaries;
  temp.dtype = DType::kBFloat16;
  temp.numel = 50;
  temp.bytes = 100;
  temp.alloc_op = 0;
  temp.alloc_when = MemoryEffect::When::kStart;
  temp.free_op = 1;
  temp.free_when = MemoryEffect::When::kEnd;
  Buffer shard;  // persistent: live before and after the step
  shard.id = 1;
  shard.category = MemCategory::kShardedParams;
  shard.dtype = DType::kFloat32;
  shard.numel = 8;
  shard.bytes = 32;
  s.buffers = {temp, shard};
  ScheduleOp a;
  SetOpId(s, a, "a");
  AddEffect(s, a, {MemoryEffect::When::kStart, MemCategory::kTemporaries, 100, 0});
  ScheduleOp b;
  SetOpId(s, b, "b");
  b.type = OpType::kAllGather;
  b.name = AddWord(s, "ncclAllGather");
  b.group = 0;
  b.bytes = 64;
  b.collective.dtype = DType::kBFloat16;
  b.collective.count = 16;  // per rank: 2 ranks × 16 × 2 bytes = 64
  SetDeps(s, b, {0});
  AddEffect(s, b, {MemoryEffect::When::kEnd, MemCategory::kTemporaries, -100, 0});
  s.ops = {a, b};
  return s;
}

TEST(ScheduleCheckTest, AcceptsABalancedSchedule) {
  const Schedule s = TwoOps();
  EXPECT_TRUE(ValidateSchedule(s).ok());
  const StepTotals t = ComputeStepTotals(s, 0);
  EXPECT_DOUBLE_EQ(t.bus_bytes.at(OpType::kAllGather), 32.0);
  EXPECT_EQ(IssueOrderPeak(s, 0).total_bytes, 32 + 100);
}

TEST(ScheduleCheckTest, ReportsLeaksBadFreesForwardDepsAndNames) {
  Schedule leak = TwoOps();
  leak.ops[1].memory = {};
  Status st = ValidateSchedule(leak);
  EXPECT_NE(st.message().find("still live at the step's end"), std::string::npos);

  Schedule bad_free = TwoOps();
  MutableEffectsOf(bad_free, bad_free.ops[1])[0].bytes = -50;
  st = ValidateSchedule(bad_free);
  EXPECT_NE(st.message().find("schedule op 1 ('b'): free of buffer 0 disagrees with its table"),
            std::string::npos)
      << st.message();

  Schedule wrong_site = TwoOps();
  wrong_site.buffers[0].free_when = MemoryEffect::When::kStart;
  st = ValidateSchedule(wrong_site);
  EXPECT_NE(st.message().find("free of buffer 0 disagrees"), std::string::npos) << st.message();

  Schedule never = TwoOps();
  never.ops[0].memory = {};
  never.ops[1].memory = {};
  st = ValidateSchedule(never);
  EXPECT_NE(st.message().find("buffer 0: op 0 does not allocate it"), std::string::npos)
      << st.message();

  Schedule numel = TwoOps();
  numel.buffers[0].numel = 100;
  st = ValidateSchedule(numel);
  EXPECT_NE(st.message().find("100 bytes is not numel 100 × 2 bytes of bfloat16"),
            std::string::npos)
      << st.message();

  Schedule initial = TwoOps();
  initial.initial_memory[0][static_cast<int>(MemCategory::kShardedParams)] = 64;
  st = ValidateSchedule(initial);
  EXPECT_NE(st.message().find("persistent buffers do not sum to initial_memory"), std::string::npos)
      << st.message();

  Schedule count = TwoOps();
  count.ops[1].collective.count = 32;  // the nccl-tests size (64 bytes) instead of per rank
  st = ValidateSchedule(count);
  EXPECT_NE(st.message().find("collective count 32 of bfloat16 over 2 ranks does not give its 64"),
            std::string::npos)
      << st.message();

  // An op_id formed from parts, as a builder gives them (OpIdKey).
  Schedule phase = TwoOps();
  const int32_t unit = AddWord(phase, "model.layers.0");
  const int32_t compute = AddWord(phase, "compute");
  const int32_t slashed = AddWord(phase, "a/b");
  const auto words = static_cast<int32_t>(phase.words.size());
  phase.ops[0].id = OpIdKey{unit, compute, 0, 1};
  phase.ops[0].id_phase = OpPhase::kBackward;
  EXPECT_EQ(OpIdOf(phase, phase.ops[0]), "mb1/bwd/model.layers.0/compute");
  EXPECT_TRUE(ValidateSchedule(phase).ok());
  phase.ops[0].id.what = words;  // past the words
  st = ValidateSchedule(phase);
  EXPECT_NE(st.message().find(fmt::format("op_id parts (unit {}, what {}) are not words of the "
                                          "schedule's {}",
                                          unit, words, words)),
            std::string::npos)
      << st.message();
  phase.ops[0].id = OpIdKey{unit, compute, 0, 1};
  phase.ops[0].id_phase = OpPhase::kStep;  // a step-level op has no unit part
  st = ValidateSchedule(phase);
  EXPECT_NE(st.message().find("for a 'step' op"), std::string::npos) << st.message();
  phase.ops[0].id = OpIdKey{slashed, compute, 0, 1};  // a unit label with '/' leaves no op_id
  phase.ops[0].id_phase = OpPhase::kBackward;
  st = ValidateSchedule(phase);
  EXPECT_NE(st.message().find("op_id formed from its parts is not a 'bwd' op_id"),
            std::string::npos)
      << st.message();

  Schedule dead = TwoOps();
  dead.buffers[0].free_op = 0;  // freed before the collective that reads it
  AddEffect(dead, dead.ops[0], {MemoryEffect::When::kEnd, MemCategory::kTemporaries, -100, 0});
  dead.ops[1].memory = {};
  dead.ops[1].collective.input_buffer = 0;
  st = ValidateSchedule(dead);
  EXPECT_NE(st.message().find("buffer 0 is not live around it"), std::string::npos) << st.message();

  Schedule reduce = TwoOps();
  reduce.ops[1].collective.reduce = CollectiveReduce::kSum;
  st = ValidateSchedule(reduce);
  EXPECT_NE(st.message().find("reduce op 'sum' does not fit a all_gather"), std::string::npos)
      << st.message();

  Schedule fwd_dep = TwoOps();
  SetDeps(fwd_dep, fwd_dep.ops[0], {1});
  st = ValidateSchedule(fwd_dep);
  EXPECT_NE(st.message().find("dependency 1 is not an earlier op"), std::string::npos);

  Schedule name = TwoOps();
  name.ops[1].name = AddWord(name, "AllGather");
  st = ValidateSchedule(name);
  EXPECT_NE(st.message().find("must begin with nccl"), std::string::npos);

  Schedule dup = TwoOps();
  SetOpId(dup, dup.ops[1], "a");
  st = ValidateSchedule(dup);
  EXPECT_NE(st.message().find("op_id repeated"), std::string::npos);
}

}  // namespace
}  // namespace shardscope

namespace shardscope {
namespace {

// An op's lists are ranges of the schedule's: AddEffect moves a range that is not at the end of
// its list there before it grows, keeping what it held, and a range outside its list is an
// error of ValidateSchedule and of the engine's and the memory replay's checks, not a read.
TEST(ScheduleCheckTest, OpListsAreRangesOfTheScheduleAndOutOfRangeOnesAreErrors) {
  Schedule s = TwoOps();
  const MemoryEffect extra{MemoryEffect::When::kEnd, MemCategory::kActivations, 8, 1};
  AddEffect(s, s.ops[0], extra);  // ops[0]'s effect is not the list's last: moved first
  const std::span<const MemoryEffect> a = EffectsOf(s, s.ops[0]);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].bytes, 100);
  EXPECT_EQ(a[1].bytes, 8);
  EXPECT_EQ(EffectsOf(s, s.ops[1]).size(), 1u);
  EXPECT_EQ(EffectsOf(s, s.ops[1])[0].bytes, -100);
  AddDep(s, s.ops[1], 0);  // at the end already: grows in place
  EXPECT_EQ(std::vector<int>(DepsOf(s, s.ops[1]).begin(), DepsOf(s, s.ops[1]).end()),
            (std::vector<int>{0, 0}));

  for (const OpRange bad : {OpRange(0, 99), OpRange(-1, 1), OpRange(5, 0)}) {
    Schedule deps = TwoOps();
    deps.ops[1].deps = bad;
    const Status st = ValidateSchedule(deps);
    EXPECT_NE(st.message().find("are not ranges of the schedule's lists"), std::string::npos)
        << st.message();
    Schedule memory = TwoOps();
    memory.ops[0].memory = bad;
    EXPECT_NE(ValidateSchedule(memory).message().find("are not ranges of the schedule's lists"),
              std::string::npos);
  }
}

TEST(ScheduleContractTest, LanesCommunicatorsAndWhichOpsHoldThem) {
  ScheduleOp op;
  op.role = 2;
  op.lane = Lane::kReduceScatter;
  EXPECT_EQ(LaneKey(op), 2 * kNumLanes + 2);
  EXPECT_EQ(CommunicatorKey(op, 5), -1);  // no group
  op.group = 3;
  EXPECT_EQ(CommunicatorKey(op, 5), 2 * 5 + 3);
  for (OpType t :
       {OpType::kAllGather, OpType::kReduceScatter, OpType::kAllReduce, OpType::kAllToAll}) {
    EXPECT_TRUE(IsCollective(t));
    EXPECT_TRUE(SerializesOnCommunicator(t)) << OpTypeName(t);
  }
  for (OpType t : {OpType::kSend, OpType::kRecv}) {
    EXPECT_TRUE(IsCollective(t));
    EXPECT_FALSE(SerializesOnCommunicator(t)) << OpTypeName(t);
  }
  for (OpType t : {OpType::kCompute, OpType::kCopyIn, OpType::kWait, OpType::kCopyH2D}) {
    EXPECT_FALSE(IsCollective(t));
    EXPECT_FALSE(SerializesOnCommunicator(t)) << OpTypeName(t);
  }
  EXPECT_EQ(CollectiveReduceName(CollectiveReduce::kAvg), "avg");
}

}  // namespace
}  // namespace shardscope
