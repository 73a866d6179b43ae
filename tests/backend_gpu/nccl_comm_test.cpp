// NCCL communicators in a world of one (one GPU, no MPI): the collectives' semantics of
// communicator.h (in-place all-gather, premul-sum pre-scaling, ncclAvg, post-scaling) and
// the split rounds every rank computes alike.
#include "backend/cuda/nccl_comm.h"

#include <gtest/gtest.h>

#include <vector>

#include "gpu_test_util.h"

namespace shardscope::backend::testing {
namespace {

TEST(NcclSplitRoundsTest, DisjointSetsShareARoundAndInputOrderDoesNotMatter) {
  // HSDP 2×2 on 4 ranks: shard groups {0,1} {2,3}, replicate groups {0,2} {1,3}, the world.
  const std::vector<std::vector<int>> sets = {{2, 3}, {0, 1}, {0, 2}, {1, 3}, {0, 1, 2, 3}, {0, 1}};
  const auto rounds = cuda::PlanSplitRounds(sets);
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_EQ(rounds[0], (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(rounds[1], (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  EXPECT_EQ(rounds[2], (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
  std::vector<std::vector<int>> shuffled(sets.rbegin(), sets.rend());
  EXPECT_EQ(cuda::PlanSplitRounds(shuffled), rounds);
  // Every set appears exactly once, and no rank twice in a round.
  size_t total = 0;
  for (const auto& round : rounds) {
    std::vector<int> seen;
    for (const auto& s : round) seen.insert(seen.end(), s.begin(), s.end());
    std::sort(seen.begin(), seen.end());
    EXPECT_TRUE(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
    total += round.size();
  }
  EXPECT_EQ(total, 5u);
}

class NcclWorldOfOneTest : public CudaDeviceTest {
 protected:
  void SetUp() override {
    CudaDeviceTest::SetUp();
    if (IsSkipped()) return;
    cuda::NcclBootstrap boot;
    boot.broadcast = [](void*, int64_t, int) { return Status::Ok(); };
    boot.all_gather = [](const void* data, int64_t bytes) -> Result<std::vector<char>> {
      const char* p = static_cast<const char*>(data);
      return std::vector<char>(p, p + bytes);
    };
    auto f = cuda::MakeNcclCommFactoryWith(boot, device());
    ASSERT_TRUE(f.ok()) << f.status().message();
    factory_ = std::move(*f);
    const std::vector<ProcessGroup> groups = {{"fsdp_shard", {0}, {"fsdp_shard"}},
                                              {"fsdp_replicate", {0}, {"fsdp_replicate"}}};
    auto c = factory_->MakeCommunicators(groups, device());
    ASSERT_TRUE(c.ok()) << c.status().message();
    comms_ = std::move(*c);
  }
  void TearDown() override {
    comms_.clear();
    factory_.reset();
    CudaDeviceTest::TearDown();
  }
  std::unique_ptr<CommFactory> factory_;
  std::vector<std::unique_ptr<Communicator>> comms_;
};

TEST_F(NcclWorldOfOneTest, ReductionsScaleAsTheCallSays) {
  ASSERT_EQ(comms_.size(), 2u);
  const int64_t n = 4096;
  const std::vector<float> x = FloatVector(n, 1);
  void* in = Upload(x);
  void* out = Zeros<float>(n);
  CollectiveCall rs;
  rs.type = OpType::kReduceScatter;
  rs.lane = Lane::kReduceScatter;
  rs.dtype = DType::kFloat32;
  rs.count = n;
  rs.reduce = CollectiveReduce::kSum;
  rs.pre_scale = 0.25;  // premul-sum
  rs.input = in;
  rs.output = out;
  rs.op_id = "bwd/model.layers.0/reduce_scatter";
  ASSERT_TRUE(IssueCollective(*comms_[0], rs).ok());
  ASSERT_TRUE(comms_[0]->Wait(std::chrono::seconds(30)).ok());
  std::vector<float> got = Download<float>(out, n);
  for (int64_t i = 0; i < n; i += 97) EXPECT_EQ(got[i], x[i] * 0.25f) << i;
  // Average over one rank, then a post-scale, in place on the other communicator.
  CollectiveCall ar = rs;
  ar.type = OpType::kAllReduce;
  ar.lane = Lane::kAllReduce;
  ar.reduce = CollectiveReduce::kAvg;
  ar.pre_scale = 1.0;
  ar.post_scale = 2.0;
  ar.input = out;
  ASSERT_TRUE(IssueCollective(*comms_[1], ar).ok());
  ASSERT_TRUE(comms_[1]->Wait(std::chrono::seconds(30)).ok());
  got = Download<float>(out, n);
  for (int64_t i = 0; i < n; i += 97) EXPECT_EQ(got[i], x[i] * 0.5f) << i;
}

TEST_F(NcclWorldOfOneTest, AllGatherInPlaceKeepsTheShard) {
  const int64_t n = 1000;
  const std::vector<uint16_t> shard = Bf16Vector(n, 3);
  void* buf = Upload(shard);
  CollectiveCall ag;
  ag.type = OpType::kAllGather;
  ag.lane = Lane::kAllGather;
  ag.dtype = DType::kBFloat16;
  ag.count = n;
  ag.input = buf;  // its own slot of the output: in place
  ag.output = buf;
  ag.op_id = "fwd/model.layers.0/all_gather";
  ASSERT_TRUE(IssueCollective(*comms_[0], ag).ok());
  ASSERT_TRUE(comms_[0]->Wait(std::chrono::seconds(30)).ok());
  EXPECT_EQ(Download<uint16_t>(buf, n), shard);
  EXPECT_EQ(factory_->name(), "nccl");
  EXPECT_EQ(factory_->versions().count("nccl"), 1u);
}

}  // namespace
}  // namespace shardscope::backend::testing
