// FSDP2's copies on the compute stream, the sharded gradients' lifetime and the optimizer's
// transient, as step_builder.cpp models them (measured on an H200: bench/device/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/schedule/schedule_builder.h"
#include "core/schedule/schedule_check.h"
#include "core/schedule/unit_sizes.h"
#include "tests/schedule/test_model.h"

namespace shardscope::testing {
namespace {

const ScheduleOp* FindOp(const Schedule& s, const std::string& op_id) {
  for (const ScheduleOp& op : s.ops) {
    if (OpIdOf(s, op) == op_id) return &op;
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

int Index(const Schedule& s, const std::string& op_id) {
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (OpIdOf(s, s.ops[i]) == op_id) return static_cast<int>(i);
  }
  return -1;
}

// What `op` allocates at its start and frees at its end of category `c` (an allocation at
// its end or a free at its start fails the test).
struct StartEndBytes {
  int64_t allocated = 0, freed = 0;
};
StartEndBytes AllocatedAtStartFreedAtEnd(const Schedule& s, const ScheduleOp& op, MemCategory c) {
  StartEndBytes out;
  for (const MemoryEffect& m : EffectsOf(s, op)) {
    if (m.category != c) continue;
    if (m.bytes > 0) {
      EXPECT_EQ(m.when, MemoryEffect::When::kStart);
      out.allocated += m.bytes;
    } else {
      EXPECT_EQ(m.when, MemoryEffect::When::kEnd);
      out.freed -= m.bytes;
    }
  }
  return out;
}

// The op's single FSDP copy item (what the importer's measured copy-out / chunk_cat events
// are matched against, by op_id).
const FsdpCopyWork* SingleCopy(const ScheduleOp& op) {
  if (op.items.size() != 1 || !IsCopy(op.items.front())) return nullptr;
  return &Copy(op.items.front());
}

TEST(FsdpCopiesTest, CopyOutBeforeEachGatheredComputeAndReduceCopyInAfterTheLast) {
  const Built b = BuildAll(Case{});
  const Schedule& s = b.schedule;
  const UnitPlan* unit = FindUnit(b.plan, "model.layers.1");
  ASSERT_NE(unit, nullptr);
  const UnitSizes z = ComputeUnitSizes(*unit);
  // Forward: the copy-out of the all-gather output is its own compute-lane op, after the
  // all-gather and right before the unit's compute op.
  const int out_at = Index(s, "fwd/model.layers.1/copy_out");
  ASSERT_GE(out_at, 0);
  const ScheduleOp& out_op = s.ops[out_at];
  EXPECT_EQ(out_op.lane, Lane::kCompute);
  EXPECT_EQ(OpIdOf(s, s.ops[NextOnLane(s, out_at)]), "fwd/model.layers.1/compute");
  const int ag = Index(s, "fwd/model.layers.1/all_gather");
  const std::span<const int> out_deps = DepsOf(s, out_op);
  EXPECT_NE(std::find(out_deps.begin(), out_deps.end(), ag), out_deps.end());
  const FsdpCopyWork* out = SingleCopy(out_op);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->which, FsdpCopyWork::Which::kCopyOut);
  // What the copy moves, and nothing of what it costs: the gathered bf16 parameters.
  EXPECT_EQ(out->elements, z.shard_group * z.shard_numel);
  EXPECT_EQ(out->src_bytes, z.gathered_bytes);
  EXPECT_EQ(out->dst_bytes, z.gathered_bytes);
  EXPECT_EQ(out->src_bytes, out->elements * DTypeBytes(out->src_dtype));
  EXPECT_EQ(out->dst_dtype, out->src_dtype);
  EXPECT_EQ(out_op.items.front().cost.fwd_bytes, 0);
  EXPECT_EQ(s.modules.at(out_op.items.front().module), "fsdp_copy_out:model.layers.1");
  // The compute ops carry module work only.
  for (const ScheduleOp& op : s.ops) {
    const std::string op_id = OpIdOf(s, op);
    if (op_id.ends_with("/compute") || op_id.find("/compute:") != std::string::npos) {
      for (const ComputeItem& item : op.items) EXPECT_FALSE(IsCopy(item)) << op_id;
    }
  }
  // Backward (re-gathered after reshard): a copy-out before the unit's backward, the
  // reduce-scatter copy-in after it, which the reduce-scatter waits for.
  const int bwd_out = Index(s, "bwd/model.layers.1/copy_out");
  const int bwd = Index(s, "bwd/model.layers.1/compute");
  const int in_at = Index(s, "bwd/model.layers.1/reduce_copy_in");
  ASSERT_GE(bwd_out, 0);
  ASSERT_GE(in_at, 0);
  EXPECT_LT(bwd_out, bwd);
  EXPECT_LT(bwd, in_at);
  EXPECT_EQ(s.ops[in_at].lane, Lane::kCompute);
  const int rs = Index(s, "bwd/model.layers.1/reduce_scatter");
  ASSERT_GE(rs, 0);
  EXPECT_NE(std::find(DepsOf(s, s.ops[rs]).begin(), DepsOf(s, s.ops[rs]).end(), in_at),
            DepsOf(s, s.ops[rs]).end());
  const FsdpCopyWork* in = SingleCopy(s.ops[in_at]);
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->which, FsdpCopyWork::Which::kReduceCopyIn);
  EXPECT_EQ(in->elements, z.shard_group * z.grad_numel);
  EXPECT_EQ(in->src_bytes, z.grad_bytes);
  EXPECT_EQ(in->dst_bytes, z.reduce_in_bytes);
  EXPECT_EQ(in->src_bytes, in->elements * DTypeBytes(in->src_dtype));
  EXPECT_EQ(in->dst_bytes, in->elements * DTypeBytes(in->dst_dtype));
  EXPECT_EQ(s.modules.at(s.ops[in_at].items.front().module), "fsdp_reduce_copy_in:model.layers.1");
  // The all-gather still runs on its own lane: the copy-in there, not on the compute lane.
  const ScheduleOp* copy_in = FindOp(s, "fwd/model.layers.1/copy_in");
  ASSERT_NE(copy_in, nullptr);
  EXPECT_EQ(copy_in->lane, Lane::kAllGather);
  const Status valid = ValidateSchedule(s);
  EXPECT_TRUE(valid.ok()) << valid.message();
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
  for (const ScheduleOp& op : b.schedule.ops)
    EXPECT_NE(op.type, OpType::kAllGather) << OpIdOf(b.schedule, op);
  const int copy_out = Index(b.schedule, "fwd/model.layers.0/copy_out");
  ASSERT_GE(copy_out, 0);
  EXPECT_NE(SingleCopy(b.schedule.ops[copy_out]), nullptr);
  // Without peers there is no reduce-scatter, but chunk_cat still runs (S = 1).
  EXPECT_GE(Index(b.schedule, "bwd/model.layers.0/reduce_copy_in"), 0);
}

// Micro-steps without gradient sync: FSDP2's post_backward folds the gradients into the
// unsharded accumulator on the compute stream, one kernel per parameter, after the unit's last
// backward op (the first micro-step casts them into the reduce dtype, later ones add), and the
// reduction's copy-in adds the last micro-step's before it reads the sum.
TEST(FsdpCopiesTest, MicroStepsWithoutSyncFoldTheGradientsIntoTheAccumulator) {
  Case c = MixedPrecisionCase();
  c.fsdp.requires_grad_sync = false;
  c.options.grad_accum = 3;
  const Built b = BuildAll(c);
  const Schedule& s = b.schedule;
  const Status valid = ValidateSchedule(s);
  ASSERT_TRUE(valid.ok()) << valid.message();
  const UnitPlan* unit = FindUnit(b.plan, "model.layers.1");
  ASSERT_NE(unit, nullptr);
  const UnitSizes z = ComputeUnitSizes(*unit);
  const int64_t accum = z.shard_group * z.grad_numel * z.reduce_dtype_bytes;
  const int params = static_cast<int>(unit->params.size());
  for (int micro = 0; micro < 2; ++micro) {
    const std::string mb = "mb" + std::to_string(micro) + "/bwd/model.layers.1/";
    const int fold_at = Index(s, mb + "accumulate_grad");
    ASSERT_GE(fold_at, 0) << mb;
    const ScheduleOp& fold = s.ops[fold_at];
    EXPECT_EQ(fold.lane, Lane::kCompute);
    EXPECT_EQ(NameOf(s, fold), "fsdp::accumulate_grad");
    // Right after the unit's backward on the compute lane, which it waits for.
    const int bwd = Index(s, mb + "compute");
    EXPECT_EQ(NextOnLane(s, bwd), fold_at);
    const std::span<const int> deps = DepsOf(s, fold);
    EXPECT_NE(std::find(deps.begin(), deps.end(), bwd), deps.end());
    const FsdpCopyWork* w = SingleCopy(fold);
    ASSERT_NE(w, nullptr) << mb;
    EXPECT_EQ(w->which, FsdpCopyWork::Which::kAccumulate);
    EXPECT_EQ(w->kernels, params);
    EXPECT_EQ(w->src_dtype, DType::kBFloat16);
    EXPECT_EQ(w->dst_dtype, DType::kFloat32);
    EXPECT_EQ(w->dst_bytes, accum);
    // The first casts (reads the gradients), a later one adds (reads both).
    EXPECT_EQ(w->src_bytes, micro == 0 ? z.grad_bytes : z.grad_bytes + accum) << mb;
    // The accumulator comes with the first fold; the gradients go with every fold.
    const StartEndBytes grads = AllocatedAtStartFreedAtEnd(s, fold, MemCategory::kUnshardedGrads);
    EXPECT_EQ(grads.allocated, micro == 0 ? accum : 0) << mb;
    EXPECT_EQ(grads.freed, z.grad_bytes) << mb;
  }
  // The last micro-step folds inside its reduction's copy-in, which then reads the sum.
  EXPECT_LT(Index(s, "mb2/bwd/model.layers.1/accumulate_grad"), 0);
  const int in_at = Index(s, "mb2/bwd/model.layers.1/reduce_copy_in");
  ASSERT_GE(in_at, 0);
  const std::vector<ComputeItem>& items = s.ops[in_at].items;
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(Copy(items[0]).which, FsdpCopyWork::Which::kAccumulate);
  EXPECT_EQ(Copy(items[0]).src_bytes, z.grad_bytes + accum);
  EXPECT_EQ(Copy(items[1]).which, FsdpCopyWork::Which::kReduceCopyIn);
  EXPECT_EQ(Copy(items[1]).src_bytes, accum);
  EXPECT_EQ(Copy(items[1]).src_dtype, DType::kFloat32);
  EXPECT_EQ(Copy(items[1]).dst_bytes, z.reduce_in_bytes);
  // With the gradients in the reduce dtype already, the first fold casts nothing (autograd
  // keeps the gradient), a later one still adds.
  c.fsdp.mix_precision.reduce_dtype = DType::kBFloat16;
  const Built same = BuildAll(c);
  const int first = Index(same.schedule, "mb0/bwd/model.layers.1/accumulate_grad");
  const int second = Index(same.schedule, "mb1/bwd/model.layers.1/accumulate_grad");
  ASSERT_GE(first, 0);
  ASSERT_GE(second, 0);
  EXPECT_EQ(SingleCopy(same.schedule.ops[first])->src_bytes, 0);
  EXPECT_EQ(SingleCopy(same.schedule.ops[first])->kernels, 0);
  EXPECT_GT(SingleCopy(same.schedule.ops[second])->src_bytes, 0);
}

TEST(FsdpCopiesTest, OptimizerHoldsAdamsDenominatorOnlyWhileItRuns) {
  Case setup;
  const Built adam = BuildAll(setup);
  const ScheduleOp* opt = FindOp(adam.schedule, "step/optimizer");
  ASSERT_NE(opt, nullptr);
  const StartEndBytes temps =
      AllocatedAtStartFreedAtEnd(adam.schedule, *opt, MemCategory::kTemporaries);
  int64_t numel = 0;
  for (const UnitPlan& u : adam.plan.units) numel += ComputeUnitSizes(u).optimizer_numel;
  EXPECT_EQ(temps.allocated, 4 * numel);  // _foreach_sqrt: one fp32 tensor per parameter
  EXPECT_EQ(temps.freed, temps.allocated);
  setup.options.optimizer = "sgd";
  const Built sgd = BuildAll(setup);
  const ScheduleOp* sgd_opt = FindOp(sgd.schedule, "step/optimizer");
  ASSERT_NE(sgd_opt, nullptr);
  for (const MemoryEffect& m : EffectsOf(sgd.schedule, *sgd_opt))
    EXPECT_NE(m.category, MemCategory::kTemporaries);
}

}  // namespace
}  // namespace shardscope::testing
