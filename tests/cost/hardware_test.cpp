#include "sim/hardware/hardware.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/util/units.h"

namespace shardscope {
namespace {

TEST(Catalog, ParsesAndListsEveryGpu) {
  const nlohmann::json j = nlohmann::json::parse(CatalogJson(), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  const std::vector<std::string> names = CatalogGpuNames();
  const std::vector<std::string> expected = {"h100-sxm",    "h100-96g", "h200",   "b200",
                                             "a100-80g",    "a100-40g", "mi300x", "b300",
                                             "gb200-nvl72", "mi325x",   "mi355x", "host-cpu"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(j["gpus"].size(), expected.size());
}

// The catalog node's GPU count (8 for HGX / OAM nodes, 4 for a GB200 compute tray).
int CatalogNodeGpus(const std::string& name) {
  const nlohmann::json catalog = nlohmann::json::parse(CatalogJson());
  for (const nlohmann::json& g : catalog["gpus"]) {
    if (g["name"] == name) return g["node"]["gpus_per_node"].get<int>();
  }
  return 0;
}

TEST(Catalog, EveryEntryIsConsistent) {
  for (const std::string& name : CatalogGpuNames()) {
    const int per_node = CatalogNodeGpus(name);
    Result<Hardware> hw = LookupHardware(name, per_node, 1);
    ASSERT_TRUE(hw.ok()) << name << ": " << hw.status().message();
    const GpuSpec& g = hw->gpu;
    EXPECT_GT(g.best_matmul_flops, 0) << name;
    EXPECT_LE(g.best_matmul_flops, g.peak_bf16_flops) << name;
    EXPECT_GT(g.usable_bytes(), 0) << name;
    EXPECT_LT(g.usable_bytes(), g.hbm_bytes) << name;
    // HBM for the GPUs; the host-cpu entry stands for one core's share of DRAM.
    EXPECT_GT(g.hbm_gbps, name == "host-cpu" ? 1 : 1000) << name;
    EXPECT_GT(g.nvlink_links * g.nvlink_link_gbps, 0) << name;
    // NCCL's effective NVLink rate sits below the datasheet's per-direction figure.
    EXPECT_LE(g.nvlink_links * g.nvlink_link_gbps, g.nvlink_gbps) << name;
    EXPECT_GT(g.attention_efficiency, 0) << name;
    EXPECT_GT(g.pcie_gbps, 0) << name;
    // NCCL's blocks must leave most SMs to compute (the overlap model caps them at half).
    EXPECT_GE(g.sm_count, 4 * g.nccl_channels) << name;
    if (g.cudnn_attention_efficiency > 0) {  // a measured backend, faster than FA2 where given
      EXPECT_GT(g.cudnn_attention_efficiency, g.attention_efficiency) << name;
      EXPECT_GT(g.cudnn_attention_backward_ratio, 0) << name;
    }
    EXPECT_EQ(hw->world_size(), per_node);
    // Every figure cites a source: the entry's notes name one, or the _sources block has it.
    EXPECT_GE(hw->node.nvlink_domain, per_node) << name;
    // validated_by names a GPU that validates itself (bench/validate checks the rows).
    if (!g.validated_by.empty()) {
      Result<Hardware> by = LookupHardware(g.validated_by, 1, 1);
      ASSERT_TRUE(by.ok()) << name << ": validated_by " << g.validated_by;
      EXPECT_EQ(by->gpu.validated_by, g.validated_by) << name;
    }
  }
}

TEST(Catalog, NewGpusCiteTheirSources) {
  const nlohmann::json j = nlohmann::json::parse(CatalogJson());
  for (const char* key : {"b300", "gb200", "mi325x", "mi355x", "nvlink_domain"}) {
    ASSERT_TRUE(j["_sources"].contains(key)) << key;
    EXPECT_NE(j["_sources"][key].get<std::string>().find("http"), std::string::npos) << key;
  }
}

TEST(Catalog, Gb200Nvl72IsOneNvlinkDomainOfEighteenTrays) {
  Result<Hardware> rack = LookupHardware("gb200-nvl72", 4, 18);
  ASSERT_TRUE(rack.ok()) << rack.status().message();
  EXPECT_EQ(rack->node.gpus_per_node, 4);
  EXPECT_EQ(rack->node.nvlink_domain, 72);
  EXPECT_DOUBLE_EQ(rack->gpu.peak_bf16_flops, 2500e12);
  EXPECT_DOUBLE_EQ(rack->gpu.best_matmul_flops, 1822e12);  // measured_runs.json MAMF
  // Two GPUs used per tray: the domain is still 18 trays, now of 2 used GPUs each.
  Result<Hardware> half = LookupHardware("gb200-nvl72", 2, 18);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->node.nvlink_domain, 36);
  // HGX nodes keep the node as the domain.
  EXPECT_EQ(LookupHardware("h100-sxm", 8, 8)->node.nvlink_domain, 8);
  EXPECT_EQ(LookupHardware("b300", 4, 2)->node.nvlink_domain, 4);
  EXPECT_FALSE(LookupHardware("gb200-nvl72", 8, 1).ok());  // a tray has 4 GPUs
}

TEST(Catalog, H100FiguresFromTheSpec) {
  Result<Hardware> hw = LookupHardware("h100-sxm", 8, 2);
  ASSERT_TRUE(hw.ok());
  EXPECT_DOUBLE_EQ(hw->gpu.peak_bf16_flops, 989e12);
  EXPECT_DOUBLE_EQ(hw->gpu.best_matmul_flops, 794.5e12);
  EXPECT_NEAR(static_cast<double>(hw->gpu.hbm_bytes) / kGiB, 79.6, 0.01);
  EXPECT_DOUBLE_EQ(hw->gpu.hbm_gbps, 3350);
  EXPECT_TRUE(hw->gpu.nvls);
  EXPECT_EQ(hw->gpu.arch, GpuArch::kHopper);
  EXPECT_EQ(hw->gpu.sm_count, 132);
  EXPECT_EQ(hw->world_size(), 16);
  // One 400 Gb/s NIC per GPU at 94%: the 46-48 GB/s nccl-tests#290 expects.
  EXPECT_NEAR(hw->NicGbpsPerGpu(), 47.0, 0.01);
}

TEST(Catalog, H100At500WattsIsItsOwnEntry) {
  Result<Hardware> sxm = LookupHardware("h100-sxm", 8, 1);
  Result<Hardware> meta = LookupHardware("h100-96g", 8, 1);
  ASSERT_TRUE(sxm.ok() && meta.ok());
  EXPECT_LT(meta->gpu.best_matmul_flops, sxm->gpu.best_matmul_flops);  // lower sustained clocks
  EXPECT_DOUBLE_EQ(meta->gpu.hbm_gbps, 2400);
  EXPECT_NEAR(static_cast<double>(meta->gpu.hbm_bytes) / kGiB, 95.04, 0.01);
}

TEST(Catalog, NvlsOnlyFromHopperOn) {
  for (const char* name : {"a100-80g", "a100-40g", "mi300x"})
    EXPECT_FALSE(LookupHardware(name, 8, 1)->gpu.nvls) << name;
  for (const char* name : {"h100-sxm", "h200", "b200"})
    EXPECT_TRUE(LookupHardware(name, 8, 1)->gpu.nvls) << name;
}

TEST(Catalog, PartialNodeKeepsEachGpusNic) {
  Result<Hardware> full = LookupHardware("b200", 8, 4);
  Result<Hardware> half = LookupHardware("b200", 4, 4);
  ASSERT_TRUE(full.ok() && half.ok());
  EXPECT_EQ(half->node.gpus_per_node, 4);
  EXPECT_EQ(half->world_size(), 16);
  EXPECT_DOUBLE_EQ(half->NicGbpsPerGpu(), full->NicGbpsPerGpu());
}

TEST(Catalog, UnknownNameSuggestsCloseOnes) {
  Result<Hardware> hw = LookupHardware("h100sxm", 8, 1);
  ASSERT_FALSE(hw.ok());
  EXPECT_EQ(hw.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(hw.status().message().find("unknown GPU 'h100sxm'"), std::string::npos)
      << hw.status().message();
  EXPECT_NE(hw.status().message().find("did you mean h100-sxm"), std::string::npos)
      << hw.status().message();
  Result<Hardware> short_name = LookupHardware("H100", 8, 1);
  ASSERT_FALSE(short_name.ok());
  EXPECT_NE(short_name.status().message().find("h100-96g"), std::string::npos)
      << short_name.status().message();
  Result<Hardware> far = LookupHardware("tpu-v5p", 8, 1);
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.status().message().find("did you mean"), std::string::npos)
      << far.status().message();
  EXPECT_NE(far.status().message().find("mi300x"), std::string::npos);  // lists the catalog
}

TEST(Catalog, RejectsBadNodeShapes) {
  EXPECT_FALSE(LookupHardware("h200", 9, 1).ok());
  EXPECT_FALSE(LookupHardware("h200", 0, 1).ok());
  Result<Hardware> no_nodes = LookupHardware("h200", 8, 0);
  ASSERT_FALSE(no_nodes.ok());
  EXPECT_NE(no_nodes.status().message().find("nodes 0"), std::string::npos);
}

TEST(GpuFields, UnknownKeyAndBadValuesAreNamed) {
  GpuSpec g;
  Status s = ApplyGpuFields(nlohmann::json{{"peak_bf16_tflop", 1}}, "cal.json: gpu", &g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cal.json: gpu.peak_bf16_tflop: unknown key"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("peak_bf16_tflops"), std::string::npos) << s.message();
  s = ApplyGpuFields(nlohmann::json{{"nvls", 1}}, "gpu", &g);
  EXPECT_NE(s.message().find("gpu.nvls: expected true or false"), std::string::npos) << s.message();
  s = ApplyGpuFields(nlohmann::json{{"nccl_channels", 2.5}}, "gpu", &g);
  EXPECT_NE(s.message().find("expected an integer"), std::string::npos) << s.message();
  s = ApplyGpuFields(nlohmann::json{{"hbm_tbps", -1}}, "gpu", &g);
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s.message();
  EXPECT_TRUE(ApplyGpuFields(nlohmann::json{{"hbm_tbps", 4}, {"nvls", false}}, "gpu", &g).ok());
  EXPECT_DOUBLE_EQ(g.hbm_gbps, 4000);
  EXPECT_FALSE(g.nvls);
}

}  // namespace
}  // namespace shardscope
