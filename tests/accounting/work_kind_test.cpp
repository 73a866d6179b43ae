#include "core/trace/work_kind.h"

#include <gtest/gtest.h>

#include "core/schedule/op_kind.h"

namespace shardscope {
namespace {

TEST(BusBandwidthFactor, NcclTestsConventions) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(WorkKind::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(WorkKind::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(WorkKind::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(WorkKind::kAllToAll, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(WorkKind::kP2P, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(WorkKind::kP2P, 16), 1.0);
}

TEST(BusBandwidthFactor, OneRankMovesNothingOverALink) {
  for (WorkKind k : {WorkKind::kAllReduce, WorkKind::kAllGather, WorkKind::kReduceScatter,
                     WorkKind::kAllToAll, WorkKind::kP2P}) {
    EXPECT_EQ(BusBandwidthFactor(k, 1), 0.0) << WorkKindName(k);
    EXPECT_EQ(BusBandwidthFactor(k, 0), 0.0) << WorkKindName(k);
  }
  EXPECT_EQ(BusBandwidthFactor(WorkKind::kCompute, 8), 0.0);
  EXPECT_EQ(BusBandwidthFactor(WorkKind::kH2D, 8), 0.0);
}

TEST(BusBandwidthFactor, OpTypesMapToTheirKinds) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kAllToAll, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kSend, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kRecv, 2), 1.0);
  EXPECT_EQ(BusBandwidthFactor(OpType::kAllGather, 1), 0.0);
  EXPECT_EQ(BusBandwidthFactor(OpType::kCopyIn, 8), 0.0);
  // Every collective OpType has a kind, and nothing else does.
  for (int t = 0; t <= static_cast<int>(OpType::kWait); ++t) {
    const OpType type = static_cast<OpType>(t);
    EXPECT_EQ(CollectiveKindOf(type).has_value(), IsCollective(type)) << OpTypeName(type);
  }
}

TEST(CollectiveKindOfName, NamesOfOurTracesNcclKernelsAndGloo) {
  EXPECT_EQ(CollectiveKindOfName("ncclAllGather", kLaneCompute), WorkKind::kAllGather);
  EXPECT_EQ(CollectiveKindOfName("ncclReduceScatter", kLaneCompute), WorkKind::kReduceScatter);
  EXPECT_EQ(CollectiveKindOfName("ncclAllReduce", kLaneCompute), WorkKind::kAllReduce);
  EXPECT_EQ(CollectiveKindOfName("ncclAllToAll", kLaneCompute), WorkKind::kAllToAll);
  EXPECT_EQ(CollectiveKindOfName("ncclSend", kLaneP2P), WorkKind::kP2P);
  EXPECT_EQ(CollectiveKindOfName("ncclRecv", kLaneP2P), WorkKind::kP2P);
  EXPECT_EQ(CollectiveKindOfName("ncclDevKernel_AllGather_RING_LL", kLaneAllGather),
            WorkKind::kAllGather);
  EXPECT_EQ(CollectiveKindOfName("ncclDevKernel_SendRecv", kLaneAllReduce), WorkKind::kP2P);
  EXPECT_EQ(CollectiveKindOfName("nccl:all_to_all", kLaneCompute), WorkKind::kAllToAll);
  EXPECT_EQ(CollectiveKindOfName("NCCL:reduce_scatter", kLaneCompute), WorkKind::kReduceScatter);
  EXPECT_EQ(CollectiveKindOfName("gloo:all_reduce", kLaneCompute), WorkKind::kAllReduce);
  // A name that says no kind takes its lane's, else all-reduce.
  EXPECT_EQ(CollectiveKindOfName("ncclKernel_Broadcast", kLaneReduceScatter),
            WorkKind::kReduceScatter);
  EXPECT_EQ(CollectiveKindOfName("ncclKernel_Broadcast", kLaneCompute), WorkKind::kAllReduce);
  EXPECT_EQ(CollectiveKindOfName("all_gather_copy_in", kLaneAllGather), std::nullopt);
  EXPECT_EQ(CollectiveKindOfName("aten::mm", kLaneCompute), std::nullopt);
  EXPECT_EQ(CollectiveKindOfName("", kLaneCompute), std::nullopt);
}

TEST(ClassifyWork, ByKindNotByLane) {
  // A tensor-parallel collective on the compute stream is communication.
  EXPECT_EQ(ClassifyWork(WorkKind::kAllReduce, kLaneCompute, false), WorkKind::kAllReduce);
  EXPECT_EQ(ClassifyWork(std::nullopt, kLaneCompute, false), WorkKind::kCompute);
  EXPECT_EQ(ClassifyWork(std::nullopt, kLaneCompute, true), WorkKind::kHost);
  // Other work on a collective's stream counts with it (the all-gather copy-in).
  EXPECT_EQ(ClassifyWork(std::nullopt, kLaneAllGather, false), WorkKind::kAllGather);
  EXPECT_EQ(ClassifyWork(std::nullopt, kLaneH2D, false), WorkKind::kH2D);
  EXPECT_EQ(ClassifyWork(std::nullopt, kLaneD2H, false), WorkKind::kD2H);
  EXPECT_TRUE(IsCommunication(WorkKind::kAllToAll));
  EXPECT_TRUE(IsCommunication(WorkKind::kP2P));
  EXPECT_FALSE(IsCommunication(WorkKind::kH2D));
  EXPECT_FALSE(IsCommunication(WorkKind::kCompute));
}

TEST(ClassifyWork, AScheduleOpAndItsTraceEventGetTheSameKind) {
  struct Case {
    Lane lane;
    OpType type;
    const char* name;
    bool on_host;
    WorkKind want;
  };
  const Case cases[] = {
      {Lane::kCompute, OpType::kCompute, "fwd", false, WorkKind::kCompute},
      {Lane::kCompute, OpType::kOptimizer, "optimizer", true, WorkKind::kHost},
      {Lane::kCompute, OpType::kAllReduce, "ncclAllReduce", false, WorkKind::kAllReduce},
      {Lane::kCompute, OpType::kAllToAll, "ncclAllToAll", false, WorkKind::kAllToAll},
      {Lane::kCompute, OpType::kAllGather, "ncclAllGather", false, WorkKind::kAllGather},
      {Lane::kAllGather, OpType::kCopyIn, "all_gather_copy_in", false, WorkKind::kAllGather},
      {Lane::kReduceScatter, OpType::kReduceScatter, "ncclReduceScatter", false,
       WorkKind::kReduceScatter},
      {Lane::kP2P, OpType::kSend, "ncclSend", false, WorkKind::kP2P},
      {Lane::kH2D, OpType::kCopyH2D, "Memcpy HtoD", false, WorkKind::kH2D},
      {Lane::kD2H, OpType::kCopyD2H, "Memcpy DtoH", false, WorkKind::kD2H},
  };
  for (const Case& c : cases) {
    ScheduleOp op;
    op.lane = c.lane;
    op.type = c.type;
    op.on_host = c.on_host;
    EXPECT_EQ(WorkKindOf(op), c.want) << c.name;
    Trace t;
    WorkEvent& e = t.AddWork(0, static_cast<int>(c.lane), c.name, "x", 0, 10);
    if (IsCollective(c.type)) e.group_size = 2;
    if (c.on_host) t.SetExtraArgs(e, {{"on_host", true}});
    EXPECT_EQ(ClassifyEvent(t, t.events[0]), c.want) << c.name;
  }
}

TEST(ClassifyEvent, AGroupSizeMakesACollectiveWhateverItsName) {
  Trace t;
  WorkEvent& e = t.AddWork(0, kLaneReduceScatter, "some_kernel", "x", 0, 10);
  e.group_size = 4;
  EXPECT_EQ(EventCollective(t, t.events[0]), WorkKind::kReduceScatter);
  t.AddWork(0, kLaneCompute, "aten::mm", "y", 0, 10);
  EXPECT_EQ(EventCollective(t, t.events[1]), std::nullopt);
  Trace u;
  WorkEvent& other = u.AddWork(0, kLaneCompute, "optimizer", "z", 0, 10);
  u.SetExtraArgs(other, {{"on_host", false}, {"note", 1}});
  EXPECT_EQ(ClassifyEvent(u, u.events[0]), WorkKind::kCompute);
}

}  // namespace
}  // namespace shardscope
