// FSDP2's copies on the compute stream, the sharded gradients' lifetime and the optimizer's
// transient, as step_builder.cpp models them (measured on an H200: bench/device/README.md).
#include <gtest/gtest.h>

#include <string>

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

// Bytes of all FSDP copies an op carries.
int64_t CopyBytes(const ScheduleOp& op) {
  int64_t bytes = 0;
  for (const ComputeItem& item : op.items) {
    if (item.fsdp_copy) bytes += item.cost.fwd_bytes;
  }
  return bytes;
}

TEST(FsdpCopiesTest, CopyOutBeforeEachGatheredComputeAndReduceCopyInAfterTheLast) {
  const Built b = BuildAll(Case{});
  const UnitPlan* unit = FindUnit(b.plan, "model.layers.1");
  ASSERT_NE(unit, nullptr);
  const UnitSizes z = ComputeUnitSizes(*unit);
  // Forward: the unit's compute op starts with the copy-out of its all-gather output.
  const ScheduleOp* fwd = FindOp(b.schedule, "fwd/model.layers.1/compute");
  ASSERT_NE(fwd, nullptr);
  ASSERT_FALSE(fwd->items.empty());
  EXPECT_TRUE(fwd->items.front().fsdp_copy);
  EXPECT_EQ(fwd->items.front().cost.fwd_bytes, 2 * z.gathered_bytes);
  EXPECT_EQ(b.schedule.modules.at(fwd->items.front().module), "fsdp_copy_out:model.layers.1");
  // Backward (re-gathered after reshard): copy-out first, reduce-scatter copy-in last.
  const ScheduleOp* bwd = FindOp(b.schedule, "bwd/model.layers.1/compute");
  ASSERT_NE(bwd, nullptr);
  EXPECT_TRUE(bwd->items.front().fsdp_copy);
  EXPECT_TRUE(bwd->items.back().fsdp_copy);
  EXPECT_EQ(bwd->items.back().cost.fwd_bytes, z.grad_bytes + z.reduce_in_bytes);
  EXPECT_EQ(b.schedule.modules.at(bwd->items.back().module), "fsdp_reduce_copy_in:model.layers.1");
  EXPECT_EQ(CopyBytes(*bwd), 2 * z.gathered_bytes + z.grad_bytes + z.reduce_in_bytes);
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
  EXPECT_TRUE(fwd->items.front().fsdp_copy);
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
