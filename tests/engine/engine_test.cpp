#include "sim/engine/engine.h"

#include <gtest/gtest.h>

#include <random>

#include "sim/engine/memory_tracker.h"
#include "tests/engine/test_schedules.h"

namespace shardscope::sim {
namespace {

using testing::ScheduleMaker;

Timeline MustRun(ScheduleMaker& m, double slowdown = 1.0) {
  auto r = RunEngine(m.schedule(), m.durations(), EngineOptions{slowdown});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : Timeline{};
}

TEST(EngineTest, LanesRunConcurrentlyAndInOrder) {
  ScheduleMaker m;
  const int ag0 = m.AllGather("fwd/a/all_gather", 100);
  const int c0 = m.Compute("fwd/a/compute", 300, {ag0});
  const int ag1 = m.AllGather("fwd/b/all_gather", 200);  // prefetch: runs beside c0
  const int c1 = m.Compute("fwd/b/compute", 300, {ag1});
  const Timeline tl = MustRun(m);
  EXPECT_EQ(tl.ops[ag0].start_ns, 0);
  EXPECT_EQ(tl.ops[ag0].end_ns, 100);
  EXPECT_EQ(tl.ops[c0].start_ns, 100);
  EXPECT_EQ(tl.ops[ag1].start_ns, 100);  // lane free after ag0, no deps
  EXPECT_EQ(tl.ops[ag1].end_ns, 300);
  EXPECT_EQ(tl.ops[c1].start_ns, 400);  // lane busy until c0 ends at 400
  EXPECT_EQ(tl.step_ns, 700);
  EXPECT_EQ(tl.log.size(), 8u);
}

TEST(EngineTest, LaneKeepsIssueOrderEvenWhenALaterOpIsReady) {
  ScheduleMaker m;
  const int slow = m.Compute("slow_dep", 1000);
  const int ag0 = m.AllGather("ag0", 10, {slow});  // head of the all_gather lane waits
  const int ag1 = m.AllGather("ag1", 10);          // ready at 0 but behind ag0
  const Timeline tl = MustRun(m);
  EXPECT_EQ(tl.ops[ag0].start_ns, 1000);
  EXPECT_EQ(tl.ops[ag1].start_ns, 1010);
}

TEST(EngineTest, GroupKeepsIssueOrderAcrossLanes) {
  ScheduleMaker m;
  const int g = m.Group("fsdp_shard", {0, 1});
  const int blocker = m.Compute("blocker", 500);
  const int ag = m.AllGather("ag", 100, {blocker}, 0, g);
  const int rs = m.ReduceScatter("rs", 100, {}, 0, g);  // same group, issued after ag
  const Timeline tl = MustRun(m);
  EXPECT_EQ(tl.ops[ag].start_ns, 500);
  // One communicator runs one collective at a time (NCCL serializes them): rs waits for ag to
  // end, though it sits on another lane and was ready at 0.
  EXPECT_EQ(tl.ops[rs].start_ns, 600);
  EXPECT_EQ(tl.step_ns, 700);
}

TEST(EngineTest, CollectivesOfDifferentGroupsRunSideBySide) {
  ScheduleMaker m;
  const int shard = m.Group("fsdp_shard", {0, 1});
  const int replicate = m.Group("fsdp_replicate", {0, 2});
  const int rs = m.ReduceScatter("rs", 300, {}, 0, shard);
  const int ar = m.Op("ar", Lane::kAllReduce, OpType::kAllReduce, 300, {}, 0, replicate);
  const Timeline tl = MustRun(m);
  EXPECT_EQ(tl.ops[rs].start_ns, 0);
  EXPECT_EQ(tl.ops[ar].start_ns, 0);
  EXPECT_EQ(tl.step_ns, 300);
}

TEST(EngineTest, PipelineTransfersOfOneGroupMayOverlap) {
  ScheduleMaker m;
  const int pp = m.Group("pp", {0, 1});
  const int send = m.Op("send", Lane::kP2P, OpType::kSend, 100, {}, 0, pp);
  const int recv = m.Op("recv", Lane::kAllReduce, OpType::kRecv, 100, {}, 0, pp);
  const Timeline tl = MustRun(m);
  EXPECT_EQ(tl.ops[send].start_ns, 0);
  EXPECT_EQ(tl.ops[recv].start_ns, 0);  // order kept, not serialized
}

TEST(EngineTest, RolesAreIndependentExceptThroughDeps) {
  ScheduleMaker m(2);
  const int send = m.Op("send", Lane::kP2P, OpType::kSend, 50, {}, 0);
  const int c0 = m.Compute("c0", 100, {}, 1);
  const int recv = m.Op("recv", Lane::kP2P, OpType::kRecv, 50, {send}, 1);
  const int c1 = m.Compute("c1", 100, {recv}, 1);
  const Timeline tl = MustRun(m);
  EXPECT_EQ(tl.ops[c0].start_ns, 0);
  EXPECT_EQ(tl.ops[recv].start_ns, 50);
  EXPECT_EQ(tl.ops[c1].start_ns, 100);  // after c0 (lane) and recv (dep) both end at 100
  EXPECT_EQ(tl.role_end_ns[0], 50);
  EXPECT_EQ(tl.role_end_ns[1], 200);
  EXPECT_EQ(tl.step_ns, 200);
}

TEST(EngineTest, OverlapSlowdownStretchesOnlyTheOverlappedPart) {
  ScheduleMaker m;
  const int c = m.Compute("c", 1000);
  const int ag = m.AllGather("ag", 400);  // overlaps the first 400 ns of c
  const Timeline tl = MustRun(m, 1.25);
  EXPECT_EQ(tl.ops[ag].end_ns, 400);
  // 400 ns at rate 1/1.25 do 320 ns of work; the remaining 680 ns run at full speed.
  EXPECT_EQ(tl.ops[c].end_ns, 1080);
  EXPECT_EQ(tl.stretched_ns, 80);
  // Without the slowdown the same schedule takes the plain duration.
  EXPECT_EQ(MustRun(m, 1.0).ops[c].end_ns, 1000);
}

TEST(EngineTest, ComputeFullyInsideCommIsFullyStretched) {
  ScheduleMaker m;
  const int ag = m.AllGather("ag", 10000);
  const int c = m.Compute("c", 1000);
  const Timeline tl = MustRun(m, 1.1);
  EXPECT_EQ(tl.ops[ag].end_ns, 10000);
  EXPECT_EQ(tl.ops[c].end_ns, 1100);
}

// Contention: GEMM-like work loses the SMs the collectives' blocks hold, memory-bound work the
// HBM bandwidth they move; launch gaps lose neither.
struct Contention {
  explicit Contention(size_t ops) : sm(ops, 0), hbm(ops, 0), comm_hbm(ops, 0), blocks(ops, 0) {}
  std::vector<float> sm, hbm, comm_hbm;
  std::vector<int> blocks;
  OverlapContention Figures(int sm_count, double hbm_gbps) const {
    return {sm_count, hbm_gbps, sm, hbm, blocks, comm_hbm};
  }
};

Timeline MustRunContended(ScheduleMaker& m, const OverlapContention& c) {
  EngineOptions options;
  options.contention = &c;
  auto r = RunEngine(m.schedule(), m.durations(), options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : Timeline{};
}

TEST(EngineTest, ContentionStretchesEachPartByTheResourceCommunicationTakes) {
  ScheduleMaker m;
  const int ag = m.AllGather("ag", 100000);
  const int gemm = m.Compute("gemm", 1000);
  const int norm = m.Compute("norm", 1000);
  const int mixed = m.Compute("mixed", 1000);
  Contention k(4);
  k.blocks[ag] = 32;
  k.comm_hbm[ag] = 500;  // GB/s
  k.sm[gemm] = 1.0f;
  k.hbm[norm] = 1.0f;
  k.sm[mixed] = 0.5f;
  k.hbm[mixed] = 0.25f;  // the last quarter is launch gaps
  const OverlapContention c = k.Figures(132, 2000);
  const Timeline tl = MustRunContended(m, c);
  // 132 / (132 - 32) = 1.32; 1 / (1 - 500 / 2000) = 4/3.
  EXPECT_EQ(tl.ops[gemm].duration_ns(), 1320);
  EXPECT_EQ(tl.ops[norm].duration_ns(), 1334);   // 1333.3, rounded up
  EXPECT_EQ(tl.ops[mixed].duration_ns(), 1244);  // 1 + 0.5·0.32 + 0.25·(1/3) = 1.2433
  EXPECT_EQ(tl.stretched_ns, 320 + 334 + 244);
  // No contention figures for an op: it is not slowed.
  k.sm[gemm] = 0;
  const OverlapContention none = k.Figures(132, 2000);
  EXPECT_EQ(MustRunContended(m, none).ops[gemm].duration_ns(), 1000);
}

TEST(EngineTest, ContentionAddsUpAcrossCollectivesAndIsCapped) {
  ScheduleMaker m;
  const int tp = m.Group("tp", {0, 1});
  const int shard = m.Group("shard", {0, 2});
  const int ag = m.AllGather("ag", 100000, {}, 0, shard);
  const int ar = m.Op("ar", Lane::kAllReduce, OpType::kAllReduce, 100000, {}, 0, tp);
  const int gemm = m.Compute("gemm", 1000);
  Contention k(3);
  k.sm[gemm] = 1.0f;
  k.blocks[ag] = 20;
  k.blocks[ar] = 24;
  OverlapContention c = k.Figures(132, 0);
  EXPECT_EQ(MustRunContended(m, c).ops[gemm].duration_ns(), 1500);  // 132 / 88
  // Blocks beyond half the GPU do not slow it further (the scheduler shares SMs, it does not
  // starve compute).
  k.blocks[ar] = 100;
  c = k.Figures(132, 0);
  EXPECT_EQ(MustRunContended(m, c).ops[gemm].duration_ns(), 2000);
}

TEST(EngineTest, ContentionReratesWhenACollectiveEnds) {
  ScheduleMaker m;
  const int gemm = m.Compute("gemm", 1000);
  const int ag = m.AllGather("ag", 264);  // overlaps the start of the GEMM
  Contention k(2);
  k.sm[gemm] = 1.0f;
  k.blocks[ag] = 33;  // 132 / 99 = 4/3
  const OverlapContention c = k.Figures(132, 0);
  const Timeline tl = MustRunContended(m, c);
  // 264 ns at 3/4 speed do 198 ns of work; the other 802 ns run at full speed.
  EXPECT_EQ(tl.ops[gemm].end_ns, 264 + 802);
}

TEST(EngineTest, RejectsContentionFiguresOfTheWrongLength) {
  ScheduleMaker m;
  m.Compute("c", 10);
  m.AllGather("ag", 10);
  const std::vector<float> one = {1.0f};
  OverlapContention c;
  c.sm_count = 132;
  c.sm_share = one;
  EngineOptions options;
  options.contention = &c;
  const auto r = RunEngine(m.schedule(), m.durations(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("one per op"), std::string::npos) << r.status().message();
}

TEST(EngineTest, HostCopiesDoNotSlowCompute) {
  ScheduleMaker m;
  m.Op("h2d", Lane::kH2D, OpType::kCopyH2D, 5000);
  const int c = m.Compute("c", 1000);
  EXPECT_EQ(MustRun(m, 1.5).ops[c].end_ns, 1000);
}

// The offloaded optimizer step runs on the CPU: NCCL kernels on the GPU do not slow it.
TEST(EngineTest, HostWorkIsNotStretchedByCommunication) {
  ScheduleMaker m;
  const int ag = m.AllGather("ag", 10000);
  const int c = m.Op("step/optimizer", Lane::kCompute, OpType::kOptimizer, 1000);
  m.schedule().ops[c].on_host = true;
  const Timeline tl = MustRun(m, 1.5);
  EXPECT_EQ(tl.ops[ag].end_ns, 10000);
  EXPECT_EQ(tl.ops[c].end_ns, 1000);
  EXPECT_EQ(tl.stretched_ns, 0);
  m.schedule().ops[c].on_host = false;  // the same op on the GPU is stretched
  EXPECT_EQ(MustRun(m, 1.5).ops[c].end_ns, 1500);
}

TEST(EngineTest, ZeroDurationWaitJoinsLanes) {
  ScheduleMaker m;
  const int rs = m.ReduceScatter("rs", 300);
  const int c = m.Compute("c", 100);
  const int wait = m.Op("wait", Lane::kCompute, OpType::kWait, 0, {rs});
  const int opt = m.Op("step/optimizer", Lane::kCompute, OpType::kOptimizer, 50, {wait});
  const Timeline tl = MustRun(m);
  EXPECT_EQ(tl.ops[c].end_ns, 100);
  EXPECT_EQ(tl.ops[wait].start_ns, 300);
  EXPECT_EQ(tl.ops[wait].end_ns, 300);
  EXPECT_EQ(tl.ops[opt].end_ns, 350);
}

TEST(EngineTest, DeadlockNamesTheStuckOps) {
  ScheduleMaker m;
  // c1 waits for ag1, which is behind ag0 on its lane, which waits for c2, behind c1.
  const int ag0_index = 2;
  const int c1 = m.Compute("fwd/x/compute", 10, {3});
  m.Compute("fwd/y/compute", 10, {ag0_index});
  m.AllGather("fwd/y/all_gather", 10, {c1 + 1});
  m.AllGather("fwd/x/all_gather", 10);
  auto r = RunEngine(m.schedule(), m.durations(), EngineOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("deadlock"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("fwd/x/compute"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("fwd/y/all_gather"), std::string::npos)
      << r.status().message();
}

TEST(EngineTest, RejectsBadIndicesAndDurations) {
  {
    ScheduleMaker m;
    m.Compute("c", 10, {5});
    auto r = RunEngine(m.schedule(), m.durations(), EngineOptions{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("dependency 5 out of range"), std::string::npos);
  }
  {
    ScheduleMaker m;
    m.Compute("c", -1);
    auto r = RunEngine(m.schedule(), m.durations(), EngineOptions{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("negative duration"), std::string::npos);
  }
  {
    ScheduleMaker m;
    m.Compute("c", 1);
    auto r = RunEngine(m.schedule(), m.durations(), EngineOptions{0.5});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("overlap slowdown"), std::string::npos);
  }
  {
    ScheduleMaker m;
    m.Compute("c", 1, {0});
    auto r = RunEngine(m.schedule(), m.durations(), EngineOptions{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("depends on itself"), std::string::npos);
  }
  {
    // Lists outside the schedule's shared lists: an error, not a read past their end (the
    // memory replay checks the effects' the same way).
    ScheduleMaker m;
    const int c = m.Compute("c", 1);
    m.schedule().ops[c].deps = OpRange(3, 2);
    auto r = RunEngine(m.schedule(), m.durations(), EngineOptions{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("are not ranges of the schedule's lists"),
              std::string::npos)
        << r.status().message();
    m.schedule().ops[c].deps = OpRange();
    const Timeline tl = MustRun(m);
    m.schedule().ops[c].memory = OpRange(0, 1);
    auto mem = TrackMemory(m.schedule(), tl, MemoryOptions{});
    ASSERT_FALSE(mem.ok());
    EXPECT_NE(mem.status().message().find("are not ranges of the schedule's lists"),
              std::string::npos)
        << mem.status().message();
  }
}

// A random DAG: deps point only backwards, so it never deadlocks.
ScheduleMaker RandomSchedule(uint32_t seed, int roles, int ops) {
  std::mt19937 rng(seed);
  ScheduleMaker m(roles);
  const int g = m.Group("g", {0, 1});
  const Lane lanes[] = {Lane::kCompute, Lane::kAllGather, Lane::kReduceScatter, Lane::kAllReduce};
  const OpType types[] = {OpType::kCompute, OpType::kAllGather, OpType::kReduceScatter,
                          OpType::kAllReduce};
  for (int i = 0; i < ops; ++i) {
    const int k = static_cast<int>(rng() % 4);
    std::vector<int> deps;
    const int num_deps = i == 0 ? 0 : static_cast<int>(rng() % 3);
    for (int d = 0; d < num_deps; ++d) deps.push_back(static_cast<int>(rng() % i));
    m.Op("op" + std::to_string(i), lanes[k], types[k], static_cast<int64_t>(rng() % 1000), deps,
         static_cast<int>(rng() % roles), k == 0 ? -1 : g);
  }
  return m;
}

TEST(EngineTest, RandomSchedulesRespectEveryRule) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    ScheduleMaker m = RandomSchedule(seed, 3, 300);
    const Timeline tl = MustRun(m, 1.2);
    const Schedule& s = m.schedule();
    int64_t last_end_per_lane[3][kNumLanes + 1] = {};
    int64_t last_start_per_group[3] = {-1, -1, -1};
    for (size_t i = 0; i < s.ops.size(); ++i) {
      const ScheduleOp& o = s.ops[i];
      const OpTiming& t = tl.ops[i];
      ASSERT_GE(t.start_ns, 0);
      ASSERT_GE(t.end_ns, t.start_ns);
      for (int d : DepsOf(s, o)) ASSERT_GE(t.start_ns, tl.ops[d].end_ns) << "deps, seed " << seed;
      // Issue order per lane and no overlap: each op starts after the previous one ended.
      int64_t& last = last_end_per_lane[o.role][static_cast<int>(o.lane)];
      ASSERT_GE(t.start_ns, last) << "lane overlap / order, seed " << seed << " op " << i;
      last = t.end_ns;
      if (o.group >= 0) {
        ASSERT_GE(t.start_ns, last_start_per_group[o.role]) << "group order, seed " << seed;
        last_start_per_group[o.role] = t.start_ns;
      }
      // Compute is stretched by at most the slowdown factor.
      if (o.lane == Lane::kCompute) {
        ASSERT_LE(t.duration_ns(), static_cast<int64_t>(m.durations()[i] * 1.2) + 1);
        ASSERT_GE(t.duration_ns(), m.durations()[i]);
      } else {
        ASSERT_EQ(t.duration_ns(), m.durations()[i]);
      }
    }
  }
}

TEST(EngineTest, DeterministicAcrossRuns) {
  ScheduleMaker m = RandomSchedule(7, 2, 2000);
  const Timeline a = MustRun(m, 1.1);
  const Timeline b = MustRun(m, 1.1);
  ASSERT_EQ(a.log.size(), b.log.size());
  for (size_t i = 0; i < a.log.size(); ++i) {
    ASSERT_EQ(a.log[i].op, b.log[i].op);
    ASSERT_EQ(a.log[i].time_ns, b.log[i].time_ns);
    ASSERT_EQ(a.log[i].is_start, b.log[i].is_start);
  }
}

}  // namespace
}  // namespace shardscope::sim
