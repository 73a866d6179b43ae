#include "core/trace/accounting.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace shardscope {
namespace {

constexpr int Idx(WorkKind k) { return static_cast<int>(k); }

TEST(RankAccounting, HandMadeStep) {
  // compute [0,100) [160,310); TP all-reduce on the compute stream [100,130); all-gather
  // [0,160); reduce-scatter [310,430); h2d [430,450) alone; host work [450,500).
  const std::vector<WorkSpan> work = {
      {0, 100, WorkKind::kCompute},         {160, 310, WorkKind::kCompute},
      {100, 130, WorkKind::kAllReduce},     {0, 160, WorkKind::kAllGather},
      {310, 430, WorkKind::kReduceScatter}, {430, 450, WorkKind::kH2D},
      {450, 500, WorkKind::kHost},
  };
  const StepAccount a = RankAccounting(work).Window(0, 500);
  EXPECT_EQ(a.step_ns, 500);
  EXPECT_EQ(a.compute_ns, 250);
  EXPECT_EQ(a.host_ns, 50);
  EXPECT_EQ(a.comm_ns, 160 + 120);         // the all-reduce lies inside the all-gather
  EXPECT_EQ(a.exposed_comm_ns, 60 + 120);  // [100,160) + [310,430)
  EXPECT_EQ(a.overlapped_comm_ns, 100);
  EXPECT_EQ(a.exposed_copy_ns, 20);
  EXPECT_EQ(a.busy_ns, 450);  // host work leaves the GPU idle
  EXPECT_EQ(a.idle_ns, 50);
  EXPECT_EQ(a.compute_ns + a.exposed_comm_ns + a.exposed_copy_ns + a.idle_ns, a.step_ns);
  EXPECT_EQ(a.busy_by_kind_ns[Idx(WorkKind::kAllReduce)], 30);
  EXPECT_EQ(a.exposed_by_kind_ns[Idx(WorkKind::kAllReduce)], 30);
  EXPECT_EQ(a.exposed_by_kind_ns[Idx(WorkKind::kAllGather)], 60);
  EXPECT_EQ(a.exposed_by_kind_ns[Idx(WorkKind::kReduceScatter)], 120);
  EXPECT_EQ(a.exposed_by_kind_ns[Idx(WorkKind::kH2D)], 20);
  EXPECT_EQ(a.exposed_by_kind_ns[Idx(WorkKind::kCompute)], 0);
  EXPECT_NEAR(a.overlap_ratio(), 100.0 / 280.0, 1e-12);
}

TEST(RankAccounting, WindowsCutWorkAtTheirEdges) {
  const std::vector<WorkSpan> work = {{0, 600, WorkKind::kCompute},
                                      {500, 1200, WorkKind::kAllGather}};
  const RankAccounting acc(work);
  const StepAccount s0 = acc.Window(0, 1000), s1 = acc.Window(1000, 1500);
  EXPECT_EQ(s0.compute_ns, 600);
  EXPECT_EQ(s0.comm_ns, 500);
  EXPECT_EQ(s0.exposed_comm_ns, 400);
  EXPECT_EQ(s1.comm_ns, 200);
  EXPECT_EQ(s1.idle_ns, 300);
}

TEST(RankAccounting, IdentityHoldsOnRandomWork) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<WorkSpan> work;
    for (int k = 0; k < 12; ++k) {
      const int64_t s = rng() % 1000;
      work.push_back(
          {s, s + static_cast<int64_t>(rng() % 200), static_cast<WorkKind>(rng() % kNumWorkKinds)});
    }
    const StepAccount a = RankAccounting(work).Window(0, 1300);
    ASSERT_EQ(a.compute_ns + a.exposed_comm_ns + a.exposed_copy_ns + a.idle_ns, a.step_ns);
    ASSERT_EQ(a.exposed_comm_ns + a.overlapped_comm_ns, a.comm_ns);
    for (int k = 0; k < kNumWorkKinds; ++k) {
      ASSERT_LE(a.exposed_by_kind_ns[k], a.busy_by_kind_ns[k]);
      if (IsCommunication(static_cast<WorkKind>(k))) {
        ASSERT_LE(a.exposed_by_kind_ns[k], a.exposed_comm_ns);
      }
    }
  }
}

}  // namespace
}  // namespace shardscope
