// issue 14: a 64-GPU job on GB200 NVL72 (16 trays of 4, one NVLink domain) runs its FSDP
// collectives over NVLink; on 8 HGX B200 nodes (the same NVLink per GPU, 8 per domain) and on
// 8 H100 nodes they cross the NICs. Simulated end to end, not only priced.
#include <gtest/gtest.h>

#include "core/config/scenario.h"
#include "sim/engine/simulator.h"

namespace shardscope::sim {
namespace {

Summary Simulate64(const std::string& gpu, int nodes, int gpus_per_node) {
  Result<Scenario> sc =
      LoadScenario(std::string(SHARDSCOPE_SOURCE_DIR) + "/examples/dense_llama3_8b.json",
                   {"cluster.gpu=" + gpu, "cluster.nodes=" + std::to_string(nodes),
                    "cluster.gpus_per_node=" + std::to_string(gpus_per_node)});
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  Result<Simulation> sim = SimulateScenario(*sc, {});
  EXPECT_TRUE(sim.ok()) << sim.status().message();
  return sim->summary;
}

TEST(NvlinkDomain, Gb200Nvl72KeepsA64GpuJobOnNvlink) {
  const Summary rack = Simulate64("gb200-nvl72", 16, 4);
  const Summary hgx = Simulate64("b200", 8, 8);
  const Summary h100 = Simulate64("h100-sxm", 8, 8);
  ASSERT_EQ(rack.world_size, 64);
  ASSERT_EQ(hgx.world_size, 64);
  for (const char* kind : {"all_gather", "reduce_scatter"}) {
    ASSERT_TRUE(rack.comm_s.count(kind) && hgx.comm_s.count(kind)) << kind;
    // The same bytes over NVLink instead of one 400 Gb/s NIC per GPU between nodes.
    EXPECT_LT(rack.comm_s.at(kind), 0.75 * hgx.comm_s.at(kind)) << kind;
    EXPECT_LT(rack.comm_s.at(kind), 0.75 * h100.comm_s.at(kind)) << kind;
  }
}

}  // namespace
}  // namespace shardscope::sim
