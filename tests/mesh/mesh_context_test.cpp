#include "core/mesh/mesh_context.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

MeshLayout Layout(int world, int dp_shard, int tp = 1, int cp = 1, int pp = 1, int ep = 1,
                  int edp_shard = 1) {
  MeshLayout l;
  l.world_size = world;
  l.dp_shard = dp_shard;
  l.tp = tp;
  l.cp = cp;
  l.pp = pp;
  l.ep = ep;
  l.edp_shard = edp_shard;
  return l;
}

std::string ErrorOf(const MeshLayout& l) {
  Result<MeshContext> m = BuildMeshContext(l);
  EXPECT_FALSE(m.ok());
  return m.ok() ? "" : m.status().message();
}

TEST(MeshContextTest, FsdpOnly) {
  Result<MeshContext> m = BuildMeshContext(Layout(8, 8));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->dp, 8);
  EXPECT_EQ(m->dp_replicate, 1);
  EXPECT_FALSE(m->hsdp());
  EXPECT_FALSE(m->has_expert_mesh());
  EXPECT_EQ(m->fsdp.dim_names(), (std::vector<std::string>{"fsdp_replicate", "fsdp_shard", "tp"}));
  EXPECT_EQ(m->fsdp.sizes(), (std::vector<int>{1, 8, 1}));
  EXPECT_EQ(m->world.sizes(), (std::vector<int>{8, 1, 1}));
}

TEST(MeshContextTest, HsdpWithTpAndCpFoldedIn) {
  // W=64, tp=2, cp=2: dp = 16; dp_shard = 8 (CP folded) → dp_replicate = 16·2/8 = 4.
  Result<MeshContext> m = BuildMeshContext(Layout(64, 8, 2, 2));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->dp, 16);
  EXPECT_EQ(m->dp_replicate, 4);
  EXPECT_TRUE(m->hsdp());
  EXPECT_EQ(m->fsdp.sizes(), (std::vector<int>{4, 8, 2}));
  EXPECT_EQ(m->world.sizes(), (std::vector<int>{16, 2, 2}));
  // The shard group of rank 0: 8 ranks, stride tp = 2.
  EXPECT_EQ(*m->fsdp.GroupRanks(0, {"fsdp_shard"}), (std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14}));
}

TEST(MeshContextTest, PipelineStagesAreContiguous) {
  Result<MeshContext> m = BuildMeshContext(Layout(16, 4, 2, 1, 2), /*stage=*/1);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->stage_size, 8);
  EXPECT_EQ(m->fsdp.ranks().front(), 8);
  EXPECT_EQ(m->fsdp.ranks().back(), 15);
}

TEST(MeshContextTest, ExpertMesh) {
  // W=16, tp=2: dp=8; ep=4 → edp = 8·1·2/4 = 4; edp_shard=2 → edp_replicate = 2.
  Result<MeshContext> m = BuildMeshContext(Layout(16, 8, 2, 1, 1, 4, 2));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->edp, 4);
  EXPECT_EQ(m->edp_replicate, 2);
  ASSERT_TRUE(m->has_expert_mesh());
  EXPECT_EQ(m->expert->dim_names(), (std::vector<std::string>{"edp_replicate", "edp_shard", "ep"}));
  EXPECT_EQ(m->expert->sizes(), (std::vector<int>{2, 2, 4}));
  // edp_replicate == 1 drops the dim.
  Result<MeshContext> flat = BuildMeshContext(Layout(16, 8, 2, 1, 1, 4, 4));
  ASSERT_TRUE(flat.ok()) << flat.status().message();
  EXPECT_EQ(flat->expert->dim_names(), (std::vector<std::string>{"edp_shard", "ep"}));
}

TEST(MeshContextTest, SizeErrorsNameTheSizes) {
  EXPECT_NE(
      ErrorOf(Layout(12, 1, 8)).find("world size 12 is not divisible by tp·cp·pp = 8·1·1 = 8"),
      std::string::npos);
  EXPECT_NE(ErrorOf(Layout(8, 3)).find("dp·cp = 8·1 = 8 is not divisible by dp_shard = 3"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(Layout(8, 8, 1, 1, 1, 3)).find("dp·cp·tp = 8·1·1 = 8 is not divisible by ep = 3"),
      std::string::npos);
  EXPECT_NE(ErrorOf(Layout(8, 8, 1, 1, 1, 2, 3)).find("edp = 4 is not divisible by edp_shard = 3"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Layout(8, 0)).find("dp_shard = 0 (expected >= 1)"), std::string::npos);
  EXPECT_NE(ErrorOf(Layout(8, 8, -1)).find("tp = -1"), std::string::npos);
}

TEST(MeshContextTest, FsdpDimNames) {
  for (const char* n : {"dp", "dp_replicate", "dp_shard", "cp", "pp", "fsdp_replicate",
                        "fsdp_shard", "edp", "edp_replicate", "edp_shard"}) {
    EXPECT_TRUE(IsFsdpDimName(n)) << n;
  }
  EXPECT_FALSE(IsFsdpDimName("tp"));
  EXPECT_FALSE(IsFsdpDimName("ep"));
}

}  // namespace
}  // namespace shardscope
