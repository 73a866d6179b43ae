#include "core/schedule/rank_layout.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

TEST(RankLayoutTest, GroupsFollowTheRowMajorWorldOrder) {
  // (pp 1, dp_replicate 2, dp_shard 2, cp 2, tp 2) on 16 ranks.
  Result<WorldLayout> w = MakeWorldLayout(16, 1, 2, 2, 2, 2);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->Group(0, {WorldDim::kTp}), (std::vector<int>{0, 1}));
  EXPECT_EQ(w->Group(0, {WorldDim::kCp}), (std::vector<int>{0, 2}));
  EXPECT_EQ(w->Group(0, {WorldDim::kDpShard, WorldDim::kCp}), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(w->Group(0, {WorldDim::kDpReplicate}), (std::vector<int>{0, 8}));
  EXPECT_EQ(w->Group(5, {WorldDim::kDpShard, WorldDim::kCp}), (std::vector<int>{1, 3, 5, 7}));
}

TEST(RankLayoutTest, ExpertMeshLiesOverOneStage) {
  Result<WorldLayout> w = MakeWorldLayout(16, 2, 1, 8, 1, 1);
  ASSERT_TRUE(w.ok());
  // Stage 1 = ranks 8..15, expert mesh (edp_replicate 1, edp_shard 2, ep 4).
  Result<std::vector<int>> ep = ExpertGroup(*w, 9, 1, 2, 4, {ExpertDim::kEp});
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(*ep, (std::vector<int>{8, 9, 10, 11}));
  Result<std::vector<int>> shard = ExpertGroup(*w, 9, 1, 2, 4, {ExpertDim::kEdpShard});
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ(*shard, (std::vector<int>{9, 13}));
  Result<std::vector<int>> bad = ExpertGroup(*w, 9, 1, 3, 4, {ExpertDim::kEp});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("does not cover the 8 ranks"), std::string::npos);
}

TEST(RankLayoutTest, SizesMustMultiplyToTheWorld) {
  Result<WorldLayout> w = MakeWorldLayout(8, 1, 1, 2, 1, 2);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("= 4 does not equal the world size 8"), std::string::npos);
  Result<WorldLayout> z = MakeWorldLayout(8, 1, 0, 8, 1, 1);
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("parallelism.dp_replicate"), std::string::npos);
}

}  // namespace
}  // namespace shardscope
