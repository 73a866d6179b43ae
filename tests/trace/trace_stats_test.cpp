#include "core/trace/trace_stats.h"

#include <gtest/gtest.h>

#include "core/trace/intervals.h"
#include "tests/trace/trace_test_util.h"

namespace shardscope {
namespace {

TEST(Intervals, UnionMergesOverlapsAndTouches) {
  const auto u = UnionOf({{10, 20}, {0, 5}, {15, 30}, {30, 35}, {40, 40}, {50, 60}});
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0].start_ns, 0);
  EXPECT_EQ(u[0].end_ns, 5);
  EXPECT_EQ(u[1].start_ns, 10);
  EXPECT_EQ(u[1].end_ns, 35);
  EXPECT_EQ(u[2].start_ns, 50);
  EXPECT_EQ(TotalNs(u), 5 + 25 + 10);
}

TEST(Intervals, IntersectionAndClip) {
  const auto a = UnionOf({{0, 100}, {200, 300}});
  const auto b = UnionOf({{50, 250}, {290, 400}});
  EXPECT_EQ(IntersectNs(a, b), 50 + 50 + 10);
  EXPECT_EQ(IntersectNs(a, {}), 0);
  const auto c = ClipTo(a, 80, 210);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].start_ns, 80);
  EXPECT_EQ(c[1].end_ns, 210);
  EXPECT_EQ(TotalNs(ClipTo(a, 100, 200)), 0);
}

// Classification is remembered per (name, lane, group_size set): two events that differ only
// in group_size are told apart (only the one with a group is a collective).
TEST(TraceStats, SameNameAndLaneWithAndWithoutGroupClassifiedApart) {
  Trace t;
  t.AddMarker(0, 0, "step_begin");
  t.AddWork(0, kLaneCompute, "gemm", "fwd/layers.0/compute:1", 0, 100);
  t.AddWork(0, kLaneAllGather, "custom_copy", "fwd/layers.0/all_gather:1", 0, 50);
  WorkEvent& g = t.AddWork(0, kLaneAllGather, "custom_copy", "fwd/layers.1/all_gather:1", 60, 50);
  g.group_size = 8;
  g.bytes = 1 << 20;
  const TraceStats s = ComputeStats(t);
  ASSERT_EQ(s.collectives.size(), 1u);
  EXPECT_EQ(s.collectives[0].kind, "all_gather");
  EXPECT_EQ(s.collectives[0].count, 1);
  EXPECT_EQ(s.collectives[0].bytes, 1 << 20);
}

TEST(TraceStats, ExposedCommunicationByIntervalArithmetic) {
  const TraceStats s = ComputeStats(testing::SmallTrace());
  ASSERT_EQ(s.steps.size(), 2u);  // one step per rank
  const StepStats& st = s.steps[0];
  EXPECT_EQ(st.rank, 0);
  EXPECT_EQ(st.step_ns, 300000);
  EXPECT_EQ(st.busy_ns, 270000);  // [0,120) ∪ [150,300) µs
  EXPECT_EQ(st.idle_ns, 30000);
  EXPECT_EQ(st.compute_ns, 200000);
  EXPECT_EQ(st.comm_ns, 130000);
  EXPECT_EQ(st.exposed_comm_ns, 70000);  // 20 µs of the all-gather, 50 µs of the reduce-scatter
  EXPECT_DOUBLE_EQ(st.overlap_ratio, 60000.0 / 130000.0);
  EXPECT_EQ(st.exposed_by_kind_ns.at("all_gather"), 20000);
  EXPECT_EQ(st.exposed_by_kind_ns.at("reduce_scatter"), 50000);
  EXPECT_EQ(s.step_time_ns, 300000);
  EXPECT_EQ(s.exposed_comm_ns, 70000);
}

TEST(TraceStats, CommunicationByPurposeAndTheMostExposedOps) {
  Trace t = testing::SmallTrace();
  // A TP all-reduce on the compute stream, rank 0, while nothing else runs: [120, 140) µs.
  t.AddWork(0, kLaneCompute, "ncclAllReduce", "fwd/layers.1/tp_all_reduce", 120000, 20000);
  t.SortEvents();
  const TraceStats s = ComputeStats(t);
  const StepStats& st = s.steps[0];
  EXPECT_EQ(st.busy_by_purpose_ns.at("fsdp_all_gather"), 70000);
  EXPECT_EQ(st.exposed_by_purpose_ns.at("fsdp_all_gather"), 20000);  // [100,120)
  EXPECT_EQ(st.exposed_by_purpose_ns.at("fsdp_reduce_scatter"), 50000);
  EXPECT_EQ(st.busy_by_purpose_ns.at("tp"), 20000);
  EXPECT_EQ(st.exposed_by_purpose_ns.at("tp"), 20000);
  EXPECT_EQ(st.busy_by_purpose_ns.count("ep"), 0u);
  // Most exposed first, each op's own exposure; equal ones by start: the reduce-scatter, the
  // all-gather, the TP all-reduce.
  ASSERT_EQ(st.exposed_ops.size(), 3u);
  EXPECT_EQ(st.exposed_ops[0].op_id, "bwd/layers.1/reduce_scatter");
  EXPECT_EQ(st.exposed_ops[0].exposed_ns, 50000);
  EXPECT_EQ(st.exposed_ops[0].dur_ns, 60000);
  EXPECT_EQ(st.exposed_ops[0].purpose, "fsdp_reduce_scatter");
  EXPECT_EQ(st.exposed_ops[1].op_id, "fwd/layers.1/all_gather");
  EXPECT_EQ(st.exposed_ops[1].exposed_ns, 20000);
  EXPECT_EQ(st.exposed_ops[2].purpose, "tp");
  EXPECT_EQ(st.exposed_ops[2].exposed_ns, 20000);
  const nlohmann::json j = StatsToJson(s);
  EXPECT_EQ(j["steps"][0]["exposed_by_purpose_ns"]["tp"], 20000);
  EXPECT_EQ(j["steps"][0]["exposed_ops"][0]["op_id"], "bwd/layers.1/reduce_scatter");
}

TEST(TraceStats, SeriesMaximaAndPeaksByPhase) {
  Trace t = testing::SmallTrace();
  // A backward compute event and an activation series that peaks there, after the allocated
  // peak at 50 µs.
  t.AddWork(0, kLaneCompute, "bwd layers.1", "bwd/layers.1/compute", 260000, 30000);
  t.AddCounter(0, 270000, "activations_bytes", 3000);
  t.AddCounter(0, 270000, "allocated_bytes", 4000);
  t.SortEvents();
  const TraceStats s = ComputeStats(t);
  const MemoryPeak& m = s.memory[0];
  EXPECT_EQ(m.peak_bytes, 5000);
  EXPECT_EQ(m.at_peak_bytes.at("unsharded_params_bytes"), 4000);
  EXPECT_EQ(m.max_bytes.at("unsharded_params_bytes"), 4000);
  EXPECT_EQ(m.max_bytes.at("activations_bytes"), 3000);  // 0 at the peak, 3000 later
  EXPECT_EQ(m.at_peak_bytes.count("activations_bytes"), 0u);
  ASSERT_EQ(m.by_phase.count("forward"), 1u);
  EXPECT_EQ(m.by_phase.at("forward").peak_bytes, 5000);
  EXPECT_EQ(m.by_phase.at("forward").time_ns, 50000);
  ASSERT_EQ(m.by_phase.count("backward"), 1u);
  EXPECT_EQ(m.by_phase.at("backward").peak_bytes, 4000);
  EXPECT_EQ(m.by_phase.at("backward").time_ns, 270000);
  EXPECT_EQ(m.by_phase.count("optimizer"), 0u);
  const nlohmann::json j = StatsToJson(s);
  EXPECT_EQ(j["memory"][0]["peak_by_phase"]["backward"]["peak_bytes"], 4000);
  EXPECT_EQ(j["memory"][0]["max_bytes"]["activations_bytes"], 3000);
}

TEST(TraceStats, OverlapNeverDoubleCounts) {
  // Two communication lanes busy at once while compute is idle: exposed is the union (10 µs),
  // not the sum (20 µs) and not compute + comm − wall.
  Trace t;
  t.AddWork(0, kLaneCompute, "c", "c", 0, 10000);
  t.AddWork(0, kLaneAllGather, "ag", "ag", 10000, 10000);
  t.AddWork(0, kLaneReduceScatter, "rs", "rs", 10000, 10000);
  const TraceStats s = ComputeStats(t);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].comm_ns, 10000);
  EXPECT_EQ(s.steps[0].exposed_comm_ns, 10000);
  EXPECT_EQ(s.steps[0].overlap_ratio, 0.0);
  EXPECT_EQ(s.steps[0].idle_ns, 0);
}

TEST(TraceStats, StepsSplitAtMarkers) {
  Trace t;
  t.AddMarker(0, 0, "step_begin");
  t.AddMarker(0, 1000, "step_begin");
  t.AddWork(0, kLaneCompute, "a", "s0", 0, 600);
  t.AddWork(0, kLaneCompute, "b", "s1", 1000, 1500);
  const TraceStats s = ComputeStats(t);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].step_ns, 1000);
  EXPECT_EQ(s.steps[0].idle_ns, 400);
  EXPECT_EQ(s.steps[1].step_ns, 1500);
  EXPECT_EQ(s.step_time_ns, 1250);
}

// A pipeline's stages: rank 0 ends last, rank 1 computes more and exposes more. The headline
// is rank 0's, every figure of it (each figure's own maximum mixed the stages: compute 9.17 s
// of stage 1 beside the step time of stage 0, where the summary reported 8.26 s).
TEST(TraceStats, HeadlinesAreTheFiguresOfTheRankThatTakesLongest) {
  Trace t;
  t.AddMarker(0, 0, "step_begin");
  t.AddMarker(1, 0, "step_begin");
  t.AddWork(0, kLaneCompute, "fwd", "mb0/fwd/a/compute", 0, 300);
  t.AddWork(0, kLaneCompute, "bwd", "mb0/bwd/a/compute", 900, 100);  // ends at 1000
  t.AddWork(1, kLaneCompute, "fwd", "mb0/fwd/b/compute", 0, 800);
  WorkEvent& ag = t.AddWork(1, kLaneAllGather, "nccl:all_gather", "mb0/fwd/b/all_gather", 800, 100);
  ag.group_size = 2;
  t.AddCounter(0, 0, "allocated_bytes", 10);
  t.AddCounter(0, 0, "reserved_bytes", 40);
  t.AddCounter(1, 0, "allocated_bytes", 30);
  t.AddCounter(1, 0, "reserved_bytes", 32);
  const TraceStats s = ComputeStats(t);
  EXPECT_EQ(s.reported_rank, 0);
  EXPECT_EQ(s.step_time_ns, 1000);
  EXPECT_EQ(s.compute_ns, 400);
  EXPECT_EQ(s.exposed_comm_ns, 0);
  // Memory: each peak the highest over the ranks (the summary's worst role).
  EXPECT_EQ(s.peak_memory_bytes, 30);
  EXPECT_EQ(s.peak_reserved_bytes, 40);
  const auto j = StatsToJson(s);
  EXPECT_EQ(j["reported_rank"], 0);
  EXPECT_EQ(j["peak_memory_reserved_bytes"], 40);
}

TEST(TraceStats, CollectivesOnTheComputeLaneAreCommunication) {
  // formats.md §2: work is classified by kind. A TP all-reduce and an EP all-to-all issued on
  // the compute stream are exposed communication while they run; host work leaves the GPU idle.
  Trace t;
  t.AddMarker(0, 0, "step_begin");
  t.AddWork(0, kLaneCompute, "fwd", "fwd/a/compute", 0, 1000);
  WorkEvent& ar = t.AddWork(0, kLaneCompute, "ncclAllReduce", "fwd/a/tp_all_reduce", 1000, 300);
  ar.bytes = 1 << 20;
  ar.group_size = 4;
  WorkEvent& a2a = t.AddWork(0, kLaneCompute, "ncclAllToAll", "fwd/a/ep_dispatch", 1300, 200);
  a2a.bytes = 1 << 20;
  a2a.group_size = 8;
  WorkEvent& send = t.AddWork(0, kLaneP2P, "ncclSend", "fwd/a/send", 1500, 100);
  send.bytes = 1000;
  send.group_size = 2;
  WorkEvent& host = t.AddWork(0, kLaneCompute, "Optimizer.step", "step/optimizer", 1600, 400);
  t.SetExtraArgs(host, {{"on_host", true}});
  const TraceStats s = ComputeStats(t);
  ASSERT_EQ(s.steps.size(), 1u);
  const StepStats& st = s.steps[0];
  EXPECT_EQ(st.step_ns, 2000);
  EXPECT_EQ(st.compute_ns, 1000);
  EXPECT_EQ(st.comm_ns, 600);
  EXPECT_EQ(st.exposed_comm_ns, 600);
  EXPECT_EQ(st.host_ns, 400);
  EXPECT_EQ(st.busy_ns, 1600);
  EXPECT_EQ(st.idle_ns, 400);
  EXPECT_EQ(st.exposed_by_kind_ns.at("all_reduce"), 300);
  EXPECT_EQ(st.exposed_by_kind_ns.at("all_to_all"), 200);
  EXPECT_EQ(st.busy_by_kind_ns.at("p2p"), 100);
  EXPECT_EQ(st.exposed_by_kind_ns.count("all_gather"), 0u);
  EXPECT_EQ(s.compute_ns, 1000);
  EXPECT_EQ(s.exposed_comm_ns, 600);
  ASSERT_EQ(s.collectives.size(), 3u);  // by kind, collectives only (not the compute events)
  EXPECT_EQ(s.collectives[0].kind, "all_reduce");
  EXPECT_NEAR(s.collectives[0].busbw_gbps, (1 << 20) * 1.5 / 300.0, 1e-9);
  EXPECT_EQ(s.collectives[1].kind, "all_to_all");
  EXPECT_NEAR(s.collectives[1].busbw_gbps, (1 << 20) * 0.875 / 200.0, 1e-9);
  EXPECT_EQ(s.collectives[2].kind, "p2p");
  EXPECT_NEAR(s.collectives[2].busbw_gbps, 1000 / 100.0, 1e-9);
}

TEST(TraceStats, OneRankCollectivesHaveNoBusBandwidth) {
  Trace t;
  WorkEvent& ag = t.AddWork(0, kLaneAllGather, "ncclAllGather", "fwd/a/all_gather", 0, 100);
  ag.bytes = 1 << 20;
  ag.group_size = 1;
  const TraceStats s = ComputeStats(t);
  ASSERT_EQ(s.collectives.size(), 1u);
  EXPECT_EQ(s.collectives[0].count, 1);
  EXPECT_EQ(s.collectives[0].busbw_gbps, 0.0);
}

TEST(TraceStats, CollectivesAndMemoryPeak) {
  const TraceStats s = ComputeStats(testing::SmallTrace(), 3);
  ASSERT_EQ(s.collectives.size(), 2u);
  const CollectiveStats& ag = s.collectives[0];
  EXPECT_EQ(ag.kind, "all_gather");
  EXPECT_EQ(ag.count, 2);
  EXPECT_EQ(ag.bytes, 2 * (64 << 20));
  EXPECT_EQ(ag.time_ns, 140000);
  EXPECT_NEAR(ag.busbw_gbps, (64 << 20) * 7.0 / 8.0 / 70000.0, 1e-9);
  ASSERT_EQ(s.top_ops.size(), 3u);
  EXPECT_EQ(s.top_ops[0].dur_ns, 100000);

  ASSERT_EQ(s.memory.size(), 2u);
  const MemoryPeak& m = s.memory[0];
  EXPECT_EQ(m.key, "allocated_bytes");
  EXPECT_EQ(m.peak_bytes, 5000);
  EXPECT_EQ(m.time_ns, 50000);
  EXPECT_EQ(m.at_peak_bytes.at("unsharded_params_bytes"), 4000);
  EXPECT_EQ(m.at_peak_bytes.at("sharded_params_bytes"), 1000);
  ASSERT_EQ(m.running.size(), 2u);
  EXPECT_EQ(m.running[0], "compute: fwd layers.0 [fwd/layers.0/compute]");
  EXPECT_EQ(m.running[1], "all_gather: nccl:all_gather [fwd/layers.1/all_gather]");
  EXPECT_EQ(s.peak_memory_bytes, 5000);
  const auto j = StatsToJson(s);
  EXPECT_EQ(j["memory"][0]["peak_bytes"], 5000);
  EXPECT_EQ(j["steps"][0]["exposed_comm_ns"], 70000);
}

TEST(TraceStats, PeakOfCategorySumWithoutAllocatedSeries) {
  Trace t;
  t.AddCounter(0, 0, "activations_bytes", 10);
  t.AddCounter(0, 5, "temporaries_bytes", 7);
  t.AddCounter(0, 9, "activations_bytes", 1);
  const TraceStats s = ComputeStats(t);
  ASSERT_EQ(s.memory.size(), 1u);
  EXPECT_EQ(s.memory[0].key, "sum of categories");
  EXPECT_EQ(s.memory[0].peak_bytes, 17);
  EXPECT_EQ(s.memory[0].time_ns, 5);
}

}  // namespace
}  // namespace shardscope
