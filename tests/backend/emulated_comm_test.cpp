// The emulated communicators of --emulate-world: reductions as if every rank held this rank's
// operand (with CollectiveSpec's scaling), the lane held for the cost model's time, and a
// group that does not hold the rank refused.
#include <gtest/gtest.h>

#include <vector>

#include "backend/backends.h"
#include "sim/cost/cost_model.h"
#include "sim/hardware/hardware.h"

namespace shardscope::backend {
namespace {

constexpr auto kCommTimeout = std::chrono::seconds(30);

struct Fixture {
  Fixture() {
    hw = LookupHardware("h100-sxm", 8, 1).value();
    cost = MakeDefaultCostModel(hw, DefaultCostParams(hw));
    device = MakeHostDevice(DeviceOptions{}).value();
    EmulationOptions e;
    e.world_size = 8;
    e.rank = 2;
    e.cost = cost.get();
    factory = MakeEmulatedCommFactory(e);
  }
  Hardware hw;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<Device> device;
  std::unique_ptr<CommFactory> factory;
};

TEST(EmulatedCommTest, ReductionsScaleThisRanksOperandAsTheGroupWould) {
  Fixture f;
  const ProcessGroup g{"fsdp_shard", {0, 1, 2, 3}, {"fsdp_shard"}};
  auto comms =
      f.factory->MakeCommunicators(std::span<const ProcessGroup>(&g, 1), *f.device).value();
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0]->rank(), 2);
  std::vector<float> in(4 * 3), out(3, 0.0f), ar(3);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  CollectiveCall rs;
  rs.type = OpType::kReduceScatter;
  rs.lane = Lane::kReduceScatter;
  rs.dtype = DType::kFloat32;
  rs.count = 3;
  rs.reduce = CollectiveReduce::kSum;
  rs.pre_scale = 0.5;
  rs.input = in.data();
  rs.output = out.data();
  rs.bytes = 48;
  rs.op_id = "bwd/u/reduce_scatter";
  ASSERT_TRUE(IssueCollective(*comms[0], rs).ok());
  CollectiveCall avg = rs;
  avg.type = OpType::kAllReduce;
  avg.lane = Lane::kAllReduce;
  avg.reduce = CollectiveReduce::kAvg;
  avg.pre_scale = 1.0;
  avg.post_scale = 2.0;
  for (int i = 0; i < 3; ++i) ar[i] = static_cast<float>(10 + i);
  avg.input = avg.output = ar.data();
  ASSERT_TRUE(IssueCollective(*comms[0], avg).ok());
  ASSERT_TRUE(comms[0]->Wait(kCommTimeout).ok());
  ASSERT_TRUE(f.device->Synchronize(kCommTimeout).ok());
  // Block 2 of the input, summed over 4 ranks after the 0.5 pre-scale.
  EXPECT_EQ(out, (std::vector<float>{12.0f, 14.0f, 16.0f}));
  // The mean of equal operands is the operand; then the post-scale.
  EXPECT_EQ(ar, (std::vector<float>{20.0f, 22.0f, 24.0f}));
}

TEST(EmulatedCommTest, HoldsTheLaneForThePredictedTime) {
  Fixture f;
  const ProcessGroup g{"fsdp_shard", {0, 1, 2, 3, 4, 5, 6, 7}, {"fsdp_shard"}};
  auto comms =
      f.factory->MakeCommunicators(std::span<const ProcessGroup>(&g, 1), *f.device).value();
  const int64_t bytes = int64_t{8} << 20;
  std::vector<char> buf(static_cast<size_t>(bytes));
  CollectiveCall ag;
  ag.type = OpType::kAllGather;
  ag.lane = Lane::kAllGather;
  ag.dtype = DType::kUInt8;
  ag.count = bytes / 8;
  ag.output = buf.data();
  ag.input = buf.data() + 2 * ag.count;
  ag.bytes = bytes;
  ag.op_id = "fwd/u/all_gather";
  auto before = f.device->Record(Lane::kAllGather).value();
  ASSERT_TRUE(IssueCollective(*comms[0], ag).ok());
  auto after = f.device->Record(Lane::kAllGather).value();
  ASSERT_TRUE(f.device->Synchronize(kCommTimeout).ok());
  const int64_t predicted = f.cost->CollectiveNs(OpType::kAllGather, bytes, GroupShapeOf(g, 8)).ns;
  EXPECT_GE(f.device->ElapsedNs(*before, *after).value(), predicted);
}

TEST(EmulatedCommTest, AGroupWithoutTheRankIsRefused) {
  Fixture f;
  const ProcessGroup g{"tp", {4, 5}, {"tp"}};
  const auto r = f.factory->MakeCommunicators(std::span<const ProcessGroup>(&g, 1), *f.device);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("group tp does not hold rank 2"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::backend
