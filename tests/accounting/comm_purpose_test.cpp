#include "core/trace/comm_purpose.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/trace/accounting.h"

namespace shardscope {
namespace {

constexpr int Idx(CommPurpose p) { return static_cast<int>(p); }

TEST(CommPurpose, TheGroupsDimsSayWhatACollectiveIsFor) {
  using V = std::vector<std::string>;
  EXPECT_EQ(PurposeOfDims(V{"fsdp_shard"}, WorkKind::kAllGather), CommPurpose::kFsdpAllGather);
  EXPECT_EQ(PurposeOfDims(V{"edp_shard"}, WorkKind::kReduceScatter),
            CommPurpose::kFsdpReduceScatter);
  EXPECT_EQ(PurposeOfDims(V{"fsdp_replicate"}, WorkKind::kAllReduce), CommPurpose::kDpAllReduce);
  EXPECT_EQ(PurposeOfDims(V{"fsdp_replicate", "fsdp_shard"}, WorkKind::kAllReduce),
            CommPurpose::kDpAllReduce);
  EXPECT_EQ(PurposeOfDims(V{"tp"}, WorkKind::kAllReduce), CommPurpose::kTp);
  EXPECT_EQ(PurposeOfDims(V{"tp"}, WorkKind::kAllGather), CommPurpose::kTp);
  EXPECT_EQ(PurposeOfDims(V{"cp"}, WorkKind::kReduceScatter), CommPurpose::kCp);
  EXPECT_EQ(PurposeOfDims(V{"ep"}, WorkKind::kAllToAll), CommPurpose::kEp);
  EXPECT_EQ(PurposeOfDims(V{"pp"}, WorkKind::kP2P), CommPurpose::kPp);
  EXPECT_EQ(PurposeOfDims(V{"tp"}, WorkKind::kCompute), CommPurpose::kNone);
}

TEST(CommPurpose, TheOpIdSaysTheSameWithoutTheGroup) {
  EXPECT_EQ(PurposeOfOpId("fwd/model.layers.3/all_gather", WorkKind::kAllGather),
            CommPurpose::kFsdpAllGather);
  EXPECT_EQ(PurposeOfOpId("fwd/model.layers.3/copy_in", WorkKind::kAllGather),
            CommPurpose::kFsdpAllGather);
  EXPECT_EQ(PurposeOfOpId("mb2/bwd/root/reduce_scatter", WorkKind::kReduceScatter),
            CommPurpose::kFsdpReduceScatter);
  EXPECT_EQ(PurposeOfOpId("bwd/model.layers.0/all_reduce_replicate", WorkKind::kAllReduce),
            CommPurpose::kDpAllReduce);
  EXPECT_EQ(PurposeOfOpId("fwd/model.layers.3/tp_all_reduce:2", WorkKind::kAllReduce),
            CommPurpose::kTp);
  EXPECT_EQ(PurposeOfOpId("bwd/model.layers.3/cp_all_gather:1", WorkKind::kAllGather),
            CommPurpose::kCp);
  EXPECT_EQ(PurposeOfOpId("bwd/model.layers.3/recompute_cp_all_gather:1", WorkKind::kAllGather),
            CommPurpose::kCp);
  EXPECT_EQ(PurposeOfOpId("fwd/model.layers.1.mlp/ep_dispatch", WorkKind::kAllToAll),
            CommPurpose::kEp);
  EXPECT_EQ(PurposeOfOpId("fwd/chunk0/send", WorkKind::kP2P), CommPurpose::kPp);
  // No op_id (a profiler trace without FSDP labels): the kind decides.
  EXPECT_EQ(PurposeOfOpId("", WorkKind::kAllToAll), CommPurpose::kEp);
  EXPECT_EQ(PurposeOfOpId("ncclKernel_AllReduce", WorkKind::kAllReduce), CommPurpose::kDpAllReduce);
  EXPECT_EQ(PurposeOfOpId("fwd/root/compute", WorkKind::kCompute), CommPurpose::kNone);
  for (int p = 1; p < kNumCommPurposes; ++p)
    EXPECT_FALSE(CommPurposeName(static_cast<CommPurpose>(p)).empty());
}

TEST(RankAccounting, BusyAndExposedByPurpose) {
  // compute [0,100) [200,300); FSDP all-gather [50,150); TP all-reduce on the compute stream
  // [100,130); FSDP reduce-scatter [250,400).
  const std::vector<WorkSpan> work = {
      {0, 100, WorkKind::kCompute},
      {200, 300, WorkKind::kCompute},
      {50, 150, WorkKind::kAllGather, CommPurpose::kFsdpAllGather},
      {100, 130, WorkKind::kAllReduce, CommPurpose::kTp},
      {250, 400, WorkKind::kReduceScatter, CommPurpose::kFsdpReduceScatter},
  };
  const RankAccounting acc(work);
  const StepAccount a = acc.Window(0, 400);
  EXPECT_EQ(a.busy_by_purpose_ns[Idx(CommPurpose::kFsdpAllGather)], 100);
  EXPECT_EQ(a.exposed_by_purpose_ns[Idx(CommPurpose::kFsdpAllGather)], 50);
  EXPECT_EQ(a.busy_by_purpose_ns[Idx(CommPurpose::kTp)], 30);
  EXPECT_EQ(a.exposed_by_purpose_ns[Idx(CommPurpose::kTp)], 30);
  EXPECT_EQ(a.busy_by_purpose_ns[Idx(CommPurpose::kFsdpReduceScatter)], 150);
  EXPECT_EQ(a.exposed_by_purpose_ns[Idx(CommPurpose::kFsdpReduceScatter)], 100);
  EXPECT_EQ(a.busy_by_purpose_ns[Idx(CommPurpose::kNone)], 0);
  // Each op's own exposure: the part of its span no compute covers.
  EXPECT_EQ(acc.ExposedNs(50, 150), 50);
  EXPECT_EQ(acc.ExposedNs(250, 400), 100);
  EXPECT_EQ(acc.ExposedNs(0, 300), 100);
  EXPECT_EQ(acc.ExposedNs(120, 120), 0);
  // A window cuts purposes like kinds.
  const StepAccount b = acc.Window(300, 400);
  EXPECT_EQ(b.busy_by_purpose_ns[Idx(CommPurpose::kFsdpReduceScatter)], 100);
  EXPECT_EQ(b.busy_by_purpose_ns[Idx(CommPurpose::kFsdpAllGather)], 0);
}

}  // namespace
}  // namespace shardscope
