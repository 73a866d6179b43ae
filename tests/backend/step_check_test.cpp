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
Status CheckRun(const std::string& scenario, int steps, CheckReport* report, ExecOptions run = {},
                ExecOptions checked = {}) {
  auto job = LoadJob(scenario, 0);
  StepChecker checker(job->schedule, job->plan, checked);
  run.steps = steps;
  run.observer = &checker;
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
  // element differ, theirs included.
  ExecOptions other;
  other.lr = 2e-3f;
  CheckReport wrong;
  ASSERT_EQ(CheckRun("one_rank_replicate.json", 1, &wrong, {}, other).code(),
            ErrorCode::kCheckFailed);
  EXPECT_EQ(wrong.mismatches, wrong.elements);
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

}  // namespace
}  // namespace shardscope::backend
