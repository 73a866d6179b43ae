// `run --check` on one rank (tests/backend/scenarios, no peers: no reduce-scatter, the local
// chunk_cat cast is the reduction), for the optimizer's update of the shards, of replicate
// params and of CPU-offloaded units, and for every step of a multi-step run; and that a step
// which moved differently from the reference is caught.
#include "backend/check/step_check.h"

#include <gtest/gtest.h>

#include <string>

#include "exec_test_util.h"

namespace shardscope::backend {
namespace {

using testing::LoadJob;
using testing::RunJob;

// Runs `scenario` for `steps` steps under the checker (whose hyper-parameters are `checked`,
// the executor's `run`) and returns Verify's status; `report` what it verified.
// `tamper` (may be null) sees each op before the checker does.
Status CheckRun(const std::string& scenario, int steps, CheckReport* report, ExecOptions run = {},
                ExecOptions checked = {}, int rank = 0, ExecObserver* tamper = nullptr) {
  auto job = LoadJob(scenario, rank);
  StepChecker checker(job->schedule, job->plan, checked);
  // Forwards to the checker, after the tampering observer.
  struct Chain final : ExecObserver {
    ExecObserver* first;
    StepChecker* checker;
    Status AfterOp(int op, const ExecContext& ctx) override {
      if (first != nullptr) SS_RETURN_IF_ERROR(first->AfterOp(op, ctx));
      return checker->AfterOp(op, ctx);
    }
    Status AfterRun(const ExecContext& ctx) override { return checker->AfterRun(ctx); }
  } chain;
  chain.first = tamper;
  chain.checker = &checker;
  run.steps = steps;
  run.observer = &chain;
  const StepRun r = RunJob(*job, run);
  EXPECT_TRUE(r.failure.ok()) << r.failure.message();
  return checker.Verify(report);
}

TEST(StepCheckTest, OneRankOptimizerStepIsVerified) {
  CheckReport report;
  const Status st = CheckRun("one_rank.json", 1, &report);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(report.steps, 1);
  EXPECT_GT(report.optimizer_tensors, 10);
  EXPECT_EQ(report.mismatches, 0);
}

TEST(StepCheckTest, OneRankAccumulationWithoutSyncIsVerified) {
  CheckReport report;
  const Status st = CheckRun("one_rank_accum.json", 2, &report);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(report.steps, 2);
}

TEST(StepCheckTest, EveryStepIsVerified) {
  CheckReport one, three;
  ASSERT_TRUE(CheckRun("one_rank.json", 1, &one).ok());
  const Status st = CheckRun("one_rank.json", 3, &three);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(three.steps, 3);
  EXPECT_EQ(three.optimizer_tensors, 3 * one.optimizer_tensors);
  EXPECT_EQ(three.elements, 3 * one.elements);
}

TEST(StepCheckTest, ReplicateParamsUpdateIsVerified) {
  CheckReport sharded, report;
  ASSERT_TRUE(CheckRun("one_rank.json", 2, &sharded).ok());
  const Status st = CheckRun("one_rank_replicate.json", 2, &report);
  EXPECT_TRUE(st.ok()) << st.message();
  // The same parameters, the norm and the lm head whole: every element is still compared.
  EXPECT_EQ(report.optimizer_tensors, sharded.optimizer_tensors);
  EXPECT_EQ(report.elements, sharded.elements);
  // The replicate params are stepped: a checker expecting another learning rate sees every
  // updated element differ, theirs included (each element is compared four times: the
  // parameter, its gradient and its two moments, which the learning rate does not change).
  ExecOptions other;
  other.lr = 2e-3f;
  CheckReport wrong;
  ASSERT_EQ(CheckRun("one_rank_replicate.json", 1, &wrong, {}, other).code(),
            ErrorCode::kCheckFailed);
  EXPECT_EQ(4 * wrong.mismatches, wrong.elements);
}

TEST(StepCheckTest, OffloadedUnitsUpdateIsVerified) {
  CheckReport report;
  const Status st = CheckRun("one_rank_offload.json", 2, &report);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_GT(report.optimizer_tensors, 10);
  ExecOptions other;
  other.lr = 2e-3f;
  CheckReport wrong;
  EXPECT_FALSE(CheckRun("one_rank_offload.json", 1, &wrong, {}, other).ok());
  EXPECT_GT(wrong.mismatches, 1000);
}

TEST(StepCheckTest, LaterStepsThatDifferAreCaughtToo) {
  // An executor stepping with another learning rate: every step's update differs, and each
  // step's elements count (not only the first step's).
  ExecOptions run;
  run.lr = 2e-3f;
  CheckReport one, three;
  EXPECT_EQ(CheckRun("one_rank.json", 1, &one, run).code(), ErrorCode::kCheckFailed);
  EXPECT_EQ(CheckRun("one_rank.json", 3, &three, run).code(), ErrorCode::kCheckFailed);
  EXPECT_GT(one.mismatches, 1000);
  EXPECT_GE(three.mismatches, 3 * one.mismatches - 3 * one.mismatches / 100);
}

TEST(StepCheckTest, PipelineChunkRootIsVerified) {
  // Stage 0 of two: layers.0 and the chunk's own root (the embedding), by their chunk label.
  CheckReport report;
  const Status st = CheckRun("two_stages.json", 2, &report);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(report.optimizer_tensors, 2 * 10);  // 9 of layers.0, the embedding, per step
}

TEST(StepCheckTest, PipelineLastStageRootAccumulatesItsMicroBatches) {
  // Stage 1 of two, two micro-batches: the chunk root (final norm, lm head) frees each
  // micro-batch's gradients on its nested unit's last backward op; their sum is what it
  // reduces and steps (each micro-batch has its own gradient values).
  CheckReport report;
  const Status st = CheckRun("two_stages.json", 2, &report, {}, {}, /*rank=*/1);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(report.optimizer_tensors, 2 * 11);  // 9 of layers.1, the norm, the head, per step
}

TEST(StepCheckTest, ReplicateParamsAccumulateOverMicroStepsWithoutSync) {
  CheckReport report;
  const Status st = CheckRun("one_rank_accum_replicate.json", 2, &report);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(report.steps, 2);
}

TEST(StepCheckTest, AccumulationWithSyncAddsEachMicroStepsReduction) {
  CheckReport report;
  const Status st = CheckRun("one_rank_accum_sync.json", 2, &report);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(report.steps, 2);
}

// FSDP2 adds each micro-step's reduction to the gradients the first one left, on the host
// for an offloaded unit (`grad._local_tensor += new_sharded_grad` after the D2H copy) and for
// the replicate params too: keeping only the last micro-step's fails the gradient compared.
TEST(StepCheckTest, AccumulationWithSyncAddsEachReductionToOffloadedHostGradients) {
  CheckReport report;
  const Status st = CheckRun("one_rank_accum_sync_offload.json", 2, &report);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(report.steps, 2);
  EXPECT_GT(report.optimizer_tensors, 0);
}

TEST(StepCheckTest, AccumulationWithSyncAddsEachReductionToReplicateParamsGradients) {
  CheckReport report;
  const Status st = CheckRun("one_rank_accum_sync_replicate.json", 2, &report);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(report.steps, 2);
}

// Scales every landed sharded gradient by `factor` just before the optimizer step (at the
// wait for the reductions): a wrong gradient scaling factor, as a missing 1/N would be.
class ScaleGradients final : public ExecObserver {
 public:
  explicit ScaleGradients(float factor) : factor_(factor) {}
  Status AfterOp(int op, const ExecContext& ctx) override {
    const ScheduleOp& o = ctx.schedule->ops[op];
    if (o.type != OpType::kWait || OpIdOf(*ctx.schedule, o) != "step/wait_reductions")
      return Status::Ok();
    for (const Buffer& b : ctx.schedule->buffers) {
      const DeviceBuffer& live = ctx.buffer(b.id);
      if (b.category != MemCategory::kShardedGrads || b.host || live.data == nullptr) continue;
      const int64_t n = live.bytes / DTypeBytes(b.dtype);
      SS_RETURN_IF_ERROR(
          ctx.device->Cast(o.lane, CastArgs{n, b.dtype, b.dtype, live.data, live.data, factor_}));
    }
    return Status::Ok();
  }
  Status AfterRun(const ExecContext&) override { return Status::Ok(); }

 private:
  float factor_;
};

TEST(StepCheckTest, WrongGradientScalingFactorIsCaught) {
  // AdamW's update is m / (sqrt(v) + eps): with eps 1e-8 it hardly depends on the gradient's
  // scale, so the gradient the step read and its moments are what must differ.
  for (float factor : {2.0f, 1.001f}) {
    ScaleGradients tamper(factor);
    CheckReport report;
    const Status st = CheckRun("one_rank.json", 1, &report, {}, {}, 0, &tamper);
    ASSERT_EQ(st.code(), ErrorCode::kCheckFailed) << "factor " << factor;
    EXPECT_GT(report.mismatches, 1000) << "factor " << factor;
    ASSERT_FALSE(report.first_mismatches.empty());
    EXPECT_NE(st.message().find("gradient of parameter"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("exp_avg of parameter"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace shardscope::backend
