// FSDP2's copies on the compute stream, the sharded gradients' lifetime and the optimizer's
// transient, as step_builder.cpp models them (measured on an H200: bench/device/README.md).
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "core/schedule/schedule_builder.h"
#include "core/schedule/schedule_check.h"
#include "core/schedule/unit_sizes.h"
#include "tests/schedule/test_model.h"

namespace shardscope::testing {
namespace {

const ScheduleOp* FindOp(const Schedule& s, const std::string& op_id) {
  for (const ScheduleOp& op : s.ops) {
    if (op.op_id == op_id) return &op;
  }
  return nullptr;
}

const UnitPlan* FindUnit(const Plan& plan, const std::string& fqn) {
  for (const UnitPlan& u : plan.units) {
    if (u.fqn == fqn) return &u;
  }
  return nullptr;
}

bool IsCopy(const ComputeItem& item) { return std::holds_alternative<FsdpCopyWork>(item.work); }
const FsdpCopyWork& Copy(const ComputeItem& item) { return std::get<FsdpCopyWork>(item.work); }

TEST(FsdpCopiesTest, CopyOutBeforeEachGatheredComputeAndReduceCopyInAfterTheLast) {
  const Built b = BuildAll(Case{});
  const UnitPlan* unit = FindUnit(b.plan, "model.layers.1");
  ASSERT_NE(unit, nullptr);
  const UnitSizes z = ComputeUnitSizes(*unit);
  // Forward: the unit's compute op starts with the copy-out of its all-gather output.
  const ScheduleOp* fwd = FindOp(b.schedule, "fwd/model.layers.1/compute");
  ASSERT_NE(fwd, nullptr);
  ASSERT_FALSE(fwd->items.empty());
  ASSERT_TRUE(IsCopy(fwd->items.front()));
  const FsdpCopyWork& out = Copy(fwd->items.front());
  EXPECT_EQ(out.which, FsdpCopyWork::Which::kCopyOut);
  // What the copy moves, and nothing of what it costs: the gathered bf16 parameters.
  EXPECT_EQ(out.elements, z.shard_group * z.shard_numel);
  EXPECT_EQ(out.src_bytes, z.gathered_bytes);
  EXPECT_EQ(out.dst_bytes, z.gathered_bytes);
  EXPECT_EQ(out.src_bytes, out.elements * DTypeBytes(out.src_dtype));
  EXPECT_EQ(out.dst_dtype, out.src_dtype);
  EXPECT_EQ(fwd->items.front().cost.fwd_bytes, 0);
  EXPECT_EQ(b.schedule.modules.at(fwd->items.front().module), "fsdp_copy_out:model.layers.1");
  // Backward (re-gathered after reshard): copy-out first, reduce-scatter copy-in last.
  const ScheduleOp* bwd = FindOp(b.schedule, "bwd/model.layers.1/compute");
  ASSERT_NE(bwd, nullptr);
  EXPECT_TRUE(IsCopy(bwd->items.front()));
  ASSERT_TRUE(IsCopy(bwd->items.back()));
  const FsdpCopyWork& in = Copy(bwd->items.back());
  EXPECT_EQ(in.which, FsdpCopyWork::Which::kReduceCopyIn);
  EXPECT_EQ(in.elements, z.shard_group * z.grad_numel);
  EXPECT_EQ(in.src_bytes, z.grad_bytes);
  EXPECT_EQ(in.dst_bytes, z.reduce_in_bytes);
  EXPECT_EQ(in.src_bytes, in.elements * DTypeBytes(in.src_dtype));
  EXPECT_EQ(in.dst_bytes, in.elements * DTypeBytes(in.dst_dtype));
  EXPECT_EQ(b.schedule.modules.at(bwd->items.back().module), "fsdp_reduce_copy_in:model.layers.1");
  // The all-gather still runs on its own lane: the copy-in there, not on the compute lane.
  const ScheduleOp* copy_in = FindOp(b.schedule, "fwd/model.layers.1/copy_in");
  ASSERT_NE(copy_in, nullptr);
  EXPECT_EQ(copy_in->lane, Lane::kAllGather);
}

TEST(FsdpCopiesTest, WithOneRankTheCastRunsOnTheComputeLaneAndCopiesOut) {
  Case one;
  one.world = 1;
  const Built b = BuildAll(one);
  const Status valid = ValidateSchedule(b.schedule);
  EXPECT_TRUE(valid.ok()) << valid.message();
  const ScheduleOp* copy_in = FindOp(b.schedule, "fwd/model.layers.0/copy_in");
  ASSERT_NE(copy_in, nullptr);
  EXPECT_EQ(copy_in->lane, Lane::kCompute);
  for (const ScheduleOp& op : b.schedule.ops) EXPECT_NE(op.type, OpType::kAllGather) << op.op_id;
  const ScheduleOp* fwd = FindOp(b.schedule, "fwd/model.layers.0/compute");
  ASSERT_NE(fwd, nullptr);
  EXPECT_TRUE(IsCopy(fwd->items.front()));
}

TEST(FsdpCopiesTest, OptimizerHoldsAdamsDenominatorOnlyWhileItRuns) {
  Case setup;
  const Built adam = BuildAll(setup);
  const ScheduleOp* opt = FindOp(adam.schedule, "step/optimizer");
  ASSERT_NE(opt, nullptr);
  int64_t allocated = 0, freed = 0, numel = 0;
  for (const MemoryEffect& m : opt->memory) {
    if (m.category != MemCategory::kTemporaries) continue;
    if (m.bytes > 0) {
      EXPECT_EQ(m.when, MemoryEffect::When::kStart);
      allocated += m.bytes;
    } else {
      EXPECT_EQ(m.when, MemoryEffect::When::kEnd);
      freed -= m.bytes;
    }
  }
  for (const UnitPlan& u : adam.plan.units) numel += ComputeUnitSizes(u).optimizer_numel;
  EXPECT_EQ(allocated, 4 * numel);  // _foreach_sqrt: one fp32 tensor per parameter
  EXPECT_EQ(freed, allocated);
  setup.options.optimizer = "sgd";
  const Built sgd = BuildAll(setup);
  const ScheduleOp* sgd_opt = FindOp(sgd.schedule, "step/optimizer");
  ASSERT_NE(sgd_opt, nullptr);
  for (const MemoryEffect& m : sgd_opt->memory) EXPECT_NE(m.category, MemCategory::kTemporaries);
}

}  // namespace
}  // namespace shardscope::testing
