#include "core/mesh/device_mesh.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

using Ranks = std::vector<int>;

DeviceMesh Mesh(std::vector<std::string> names, std::vector<int> sizes, int first = 0) {
  Result<DeviceMesh> m = DeviceMesh::Create(std::move(names), std::move(sizes), first);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return *m;
}

TEST(DeviceMeshTest, RowMajorLastDimFastest) {
  DeviceMesh m = Mesh({"dp", "tp"}, {4, 2});
  EXPECT_EQ(m.size(), 8);
  EXPECT_EQ(*m.GroupRanks(5, {"tp"}), (Ranks{4, 5}));
  EXPECT_EQ(*m.GroupRanks(5, {"dp"}), (Ranks{1, 3, 5, 7}));
  EXPECT_EQ(*m.GroupRanks(5, {"dp", "tp"}), (Ranks{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(*m.GroupRanks(5, {}), (Ranks{5}));
  EXPECT_EQ(*m.Coordinates(5), (Ranks{2, 1}));
}

TEST(DeviceMeshTest, OffsetRangeForAPipelineStage) {
  DeviceMesh m = Mesh({"a", "b", "c"}, {2, 3, 2}, 24);
  EXPECT_EQ(m.ranks().front(), 24);
  EXPECT_EQ(m.ranks().back(), 35);
  // Rank 31 = 24 + 7: coordinates (1, 0, 1).
  EXPECT_EQ(*m.Coordinates(31), (Ranks{1, 0, 1}));
  EXPECT_EQ(*m.GroupRanks(31, {"b"}), (Ranks{31, 33, 35}));
  EXPECT_EQ(*m.GroupRanks(31, {"a", "c"}), (Ranks{24, 25, 30, 31}));
}

TEST(DeviceMeshTest, SliceKeepsMeshOrderAndNames) {
  DeviceMesh m = Mesh({"rep", "shard", "tp"}, {2, 4, 2});
  Result<DeviceMesh> s = m.Slice(11, {"tp", "rep"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->dim_names(), (std::vector<std::string>{"rep", "tp"}));
  EXPECT_EQ(s->sizes(), (std::vector<int>{2, 2}));
  // 11 = (1, 1, 1): its (rep, tp) slice at shard=1 is {2, 3, 10, 11}.
  EXPECT_EQ(s->ranks(), (Ranks{2, 3, 10, 11}));
}

TEST(DeviceMeshTest, FlattenMergesAdjacentDims) {
  DeviceMesh m = Mesh({"rep", "shard", "tp"}, {2, 4, 2});
  Result<DeviceMesh> f = m.Flatten({"rep", "shard"}, "dp");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->dim_names(), (std::vector<std::string>{"dp", "tp"}));
  EXPECT_EQ(f->sizes(), (std::vector<int>{8, 2}));
  EXPECT_EQ(*f->GroupRanks(3, {"dp"}), (Ranks{1, 3, 5, 7, 9, 11, 13, 15}));
  Result<DeviceMesh> bad = m.Flatten({"rep", "tp"}, "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("adjacent"), std::string::npos);
}

TEST(DeviceMeshTest, ConcatenateSlicesThroughOneRank) {
  DeviceMesh m = Mesh({"dp", "cp", "tp"}, {2, 2, 2});
  DeviceMesh dp = *m.Slice(5, {"dp"});  // {1, 5}
  DeviceMesh tp = *m.Slice(5, {"tp"});  // {4, 5}
  Result<DeviceMesh> c = DeviceMesh::Concatenate(dp, tp);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->dim_names(), (std::vector<std::string>{"dp", "tp"}));
  EXPECT_EQ(c->ranks(), (Ranks{0, 1, 4, 5}));
  EXPECT_EQ(c->ranks(), *m.GroupRanks(5, {"dp", "tp"}));
  // Same dim twice, or no common rank: errors.
  EXPECT_FALSE(DeviceMesh::Concatenate(dp, dp).ok());
  DeviceMesh other_tp = *m.Slice(2, {"tp"});  // {2, 3}: no rank in common with {1, 5}
  Result<DeviceMesh> none = DeviceMesh::Concatenate(dp, other_tp);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("anchor"), std::string::npos);
}

TEST(DeviceMeshTest, CreateErrorsNameTheProblem) {
  Result<DeviceMesh> zero = DeviceMesh::Create({"dp", "tp"}, {4, 0});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(zero.status().message().find("dim 'tp' has size 0"), std::string::npos);
  Result<DeviceMesh> dup = DeviceMesh::Create({"dp", "dp"}, {2, 2});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("appears twice"), std::string::npos);
  EXPECT_FALSE(DeviceMesh::Create({"dp"}, {2, 2}).ok());
  DeviceMesh m = Mesh({"dp"}, {4});
  Result<std::vector<int>> missing = m.GroupRanks(0, {"tp"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no dim 'tp'"), std::string::npos);
  EXPECT_FALSE(m.GroupRanks(9, {"dp"}).ok());
}

}  // namespace
}  // namespace shardscope
