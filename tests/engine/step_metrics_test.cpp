#include "sim/engine/step_metrics.h"

#include <gtest/gtest.h>

#include "core/timeline/op_accounting.h"
#include "sim/engine/engine.h"
#include "tests/engine/test_schedules.h"

namespace shardscope::sim {
namespace {

using testing::ScheduleMaker;

TEST(StepMetricsTest, ExposedCommunicationOnAHandMadeTimeline) {
  // compute [0,100); all-gather [0,160) gates the second compute [160,310);
  // reduce-scatter [310,430) after it.
  ScheduleMaker m;
  const int c0 = m.Compute("fwd/a/compute", 100);
  const int gap = m.Op("wait", Lane::kCompute, OpType::kWait, 0, {c0});
  m.AllGather("fwd/b/all_gather", 160);
  const int c1 = m.Compute("fwd/b/compute", 150, {gap, 2});
  m.ReduceScatter("bwd/b/reduce_scatter", 120, {c1});
  auto tl = RunEngine(m.schedule(), m.durations(), EngineOptions{});
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  ASSERT_EQ(tl->ops[c1].start_ns, 160);
  const StepAccount s = AccountRole(m.schedule(), tl.value(), 0);
  EXPECT_EQ(s.step_ns, 430);
  EXPECT_EQ(s.compute_ns, 250);  // [0,100) + [160,310)
  EXPECT_EQ(s.comm_ns, 160 + 120);
  EXPECT_EQ(s.exposed_comm_ns, 60 + 120);  // [100,160) + [310,430)
  EXPECT_EQ(s.overlapped_comm_ns, 100);    // [0,100)
  EXPECT_EQ(s.idle_ns, 0);
  EXPECT_EQ(s.exposed_by_kind_ns[static_cast<int>(WorkKind::kAllGather)], 60);
  EXPECT_EQ(s.exposed_by_kind_ns[static_cast<int>(WorkKind::kReduceScatter)], 120);
  EXPECT_NEAR(s.overlap_ratio(), 100.0 / 280.0, 1e-12);
  const auto units = ExposedAllGathers(m.schedule(), tl.value(), 0);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].exposed_ns, 60);
}

TEST(StepMetricsTest, TensorParallelCollectivesOnTheComputeLaneCountAsCommunication) {
  ScheduleMaker m;
  m.Compute("fwd/a/compute", 100);
  const int g = m.Group("tp", {0, 1});
  m.Op("fwd/a/tp_all_reduce", Lane::kCompute, OpType::kAllReduce, 40, {}, 0, g);
  auto tl = RunEngine(m.schedule(), m.durations(), EngineOptions{});
  ASSERT_TRUE(tl.ok());
  const StepAccount s = AccountRole(m.schedule(), tl.value(), 0);
  EXPECT_EQ(s.compute_ns, 100);
  EXPECT_EQ(s.exposed_comm_ns, 40);
  EXPECT_EQ(s.busy_by_kind_ns[static_cast<int>(WorkKind::kAllReduce)], 40);
}

TEST(StepMetricsTest, IdleIsWhatNeitherComputeNorCommunicationCovers) {
  ScheduleMaker m(2);
  const int far = m.Compute("other_role", 500, {}, 1);
  m.Compute("c", 100);
  m.Compute("late", 100, {far});  // role 0 waits for role 1: idle [100, 500)
  auto tl = RunEngine(m.schedule(), m.durations(), EngineOptions{});
  ASSERT_TRUE(tl.ok());
  const StepAccount s = AccountRole(m.schedule(), tl.value(), 0);
  EXPECT_EQ(s.step_ns, 600);
  EXPECT_EQ(s.idle_ns, 400);
  EXPECT_EQ(s.compute_ns + s.exposed_comm_ns + s.idle_ns, s.step_ns);
}

}  // namespace
}  // namespace shardscope::sim
