#include "sim/cost/nccl_model.h"

#include <gtest/gtest.h>

#include "core/schedule/schedule.h"
#include "core/util/units.h"
#include "sim/cost/cost_model.h"

namespace shardscope {
namespace {

NcclSystem System(const char* gpu, bool nvls = true, int gpus_per_node = 8) {
  const Hardware hw = *LookupHardware(gpu, gpus_per_node, 4);
  CostParams p = DefaultCostParams(hw);
  p.nvls_enabled = p.nvls_enabled && nvls;
  return NcclSystemFor(hw, p);
}

CollectiveEstimate Estimate(const NcclSystem& sys, OpType type, int64_t bytes, GroupShape g) {
  return NcclCollective(type, bytes, g, sys);
}

const GroupShape kNode8{8, 8, 1};

TEST(NcclModel, LargerMessagesNeverFaster) {
  const std::vector<GroupShape> shapes = {{2, 2, 1},  {4, 4, 1}, kNode8,    {16, 8, 2},
                                          {32, 8, 4}, {4, 1, 4}, {64, 8, 8}};
  for (const char* gpu : {"h100-sxm", "a100-80g", "b200", "mi300x"}) {
    const NcclSystem sys = System(gpu);
    for (OpType type : {OpType::kAllReduce, OpType::kAllGather, OpType::kReduceScatter,
                        OpType::kAllToAll, OpType::kSend}) {
      for (const GroupShape& g : shapes) {
        int64_t previous = 0;
        for (int64_t bytes = 1 * kKiB; bytes <= 16 * kGiB; bytes *= 2) {
          const int64_t ns = Estimate(sys, type, bytes, g).ns;
          EXPECT_GE(ns, previous) << gpu << " " << OpTypeName(type) << " n=" << g.size
                                  << " nodes=" << g.nodes << " bytes=" << bytes;
          previous = ns;
        }
      }
    }
  }
}

TEST(NcclModel, MoreBandwidthNeverSlower) {
  Hardware hw = *LookupHardware("h100-sxm", 8, 4);
  const CostParams p = DefaultCostParams(hw);
  const NcclSystem base = NcclSystemFor(hw, p);
  Hardware faster = hw;
  faster.gpu.nvlink_link_gbps *= 1.5;
  faster.node.nic_gbit_per_s *= 2;
  const NcclSystem fast = NcclSystemFor(faster, p);
  CostParams scaled = p;
  scaled.collective_bandwidth_scale = 2;
  const NcclSystem wide = NcclSystemFor(hw, scaled);
  for (OpType type : {OpType::kAllReduce, OpType::kAllGather, OpType::kReduceScatter,
                      OpType::kAllToAll, OpType::kRecv}) {
    for (const GroupShape& g : {kNode8, GroupShape{32, 8, 4}, GroupShape{4, 1, 4}}) {
      for (int64_t bytes = 64 * kKiB; bytes <= 4 * kGiB; bytes *= 4) {
        const int64_t t = Estimate(base, type, bytes, g).ns;
        EXPECT_LE(Estimate(fast, type, bytes, g).ns, t) << OpTypeName(type) << " " << bytes;
        EXPECT_LE(Estimate(wide, type, bytes, g).ns, t) << OpTypeName(type) << " " << bytes;
      }
    }
  }
}

TEST(NcclModel, SmallMessagesUseLLAndLargeOnesSimple) {
  for (const char* gpu : {"h100-sxm", "a100-80g", "b200"}) {
    const NcclSystem sys = System(gpu);
    for (OpType type : {OpType::kAllReduce, OpType::kAllGather, OpType::kReduceScatter}) {
      EXPECT_EQ(Estimate(sys, type, 4 * kKiB, kNode8).proto, NcclProto::kLL)
          << gpu << " " << OpTypeName(type);
      EXPECT_EQ(Estimate(sys, type, 4 * kGiB, kNode8).proto, NcclProto::kSimple)
          << gpu << " " << OpTypeName(type);
    }
  }
}

TEST(NcclModel, NvlsOnlyWhereTheHardwareHasIt) {
  // Large 8-GPU all-reduces: NVLS on Hopper and Blackwell, Ring on Ampere, Ring when disabled.
  EXPECT_EQ(Estimate(System("h100-sxm"), OpType::kAllReduce, 1 * kGiB, kNode8).algo,
            NcclAlgo::kNvls);
  EXPECT_EQ(Estimate(System("b200"), OpType::kAllReduce, 1 * kGiB, kNode8).algo, NcclAlgo::kNvls);
  EXPECT_EQ(Estimate(System("h100-sxm", false), OpType::kAllReduce, 1 * kGiB, kNode8).algo,
            NcclAlgo::kRing);
  for (const char* gpu : {"a100-80g", "a100-40g", "mi300x"}) {
    const NcclSystem sys = System(gpu);
    for (OpType type : {OpType::kAllReduce, OpType::kAllGather, OpType::kReduceScatter}) {
      for (int64_t bytes = 1 * kKiB; bytes <= 16 * kGiB; bytes *= 4) {
        const NcclAlgo algo = Estimate(sys, type, bytes, kNode8).algo;
        EXPECT_NE(algo, NcclAlgo::kNvls) << gpu;
        EXPECT_NE(algo, NcclAlgo::kNvlsTree) << gpu;
      }
    }
  }
  // NCCL's own choice on H200 (measured sweep): Ring on 4 GPUs, NVLS from 5.
  EXPECT_EQ(Estimate(System("h200"), OpType::kAllReduce, 8 * kGiB, {4, 4, 1}).algo,
            NcclAlgo::kRing);
  EXPECT_EQ(Estimate(System("h200"), OpType::kAllReduce, 8 * kGiB, {5, 5, 1}).algo,
            NcclAlgo::kNvls);
  // All-gather's NVLS bandwidth is below the ring's: large all-gathers stay on Ring.
  EXPECT_EQ(Estimate(System("h200"), OpType::kAllGather, 4 * kGiB, kNode8).algo, NcclAlgo::kRing);
}

TEST(NcclModel, InterNodeSlowerThanIntraNode) {
  for (const char* gpu : {"h100-sxm", "a100-80g", "b200"}) {
    const NcclSystem sys = System(gpu);
    for (OpType type : {OpType::kAllReduce, OpType::kAllGather, OpType::kReduceScatter,
                        OpType::kAllToAll, OpType::kSend}) {
      for (int64_t bytes : {1 * kMiB, 64 * kMiB, 1 * kGiB}) {
        // Same group size: eight ranks in one node vs one rank on each of eight nodes.
        const int64_t intra = Estimate(sys, type, bytes, kNode8).ns;
        const int64_t inter = Estimate(sys, type, bytes, {8, 1, 8}).ns;
        EXPECT_GT(inter, intra) << gpu << " " << OpTypeName(type) << " " << bytes;
        const int64_t two_nodes = Estimate(sys, type, bytes, {8, 4, 2}).ns;
        EXPECT_GT(two_nodes, intra) << gpu << " " << OpTypeName(type) << " " << bytes;
      }
    }
  }
}

TEST(NcclModel, PlateausMatchTheAnchors) {
  // cost-model.md anchors at large messages.
  const double h100_ag =
      Estimate(System("h100-sxm"), OpType::kAllGather, 16 * kGiB, kNode8).busbw_gbps;
  EXPECT_NEAR(h100_ag, 365, 365 * 0.1);
  const double h100_ar =
      Estimate(System("h100-sxm"), OpType::kAllReduce, 16 * kGiB, kNode8).busbw_gbps;
  EXPECT_NEAR(h100_ar, 478, 478 * 0.1);
  const double a100_ar =
      Estimate(System("a100-80g"), OpType::kAllReduce, 16 * kGiB, kNode8).busbw_gbps;
  EXPECT_NEAR(a100_ar, 232, 232 * 0.1);
  const double b200_ring =
      Estimate(System("b200", false), OpType::kAllReduce, 16 * kGiB, kNode8).busbw_gbps;
  EXPECT_NEAR(b200_ring, 682, 682 * 0.1);
  // One GPU per node on NDR 400 Gb/s: the NIC, 46-48 GB/s.
  const double ndr =
      Estimate(System("h100-sxm"), OpType::kAllGather, 16 * kGiB, {4, 1, 4}).busbw_gbps;
  EXPECT_GT(ndr, 40);
  EXPECT_LT(ndr, 48);
  // Bandwidth is still rising at FSDP-sized messages: 64 MiB is well below the plateau.
  const double mid = Estimate(System("h100-sxm"), OpType::kAllGather, 64 * kMiB, kNode8).busbw_gbps;
  EXPECT_LT(mid, 0.9 * h100_ag);
}

TEST(NcclModel, EstimatesAreSelfConsistent) {
  const NcclSystem sys = System("h100-sxm");
  const CollectiveEstimate e = Estimate(sys, OpType::kReduceScatter, 256 * kMiB, kNode8);
  EXPECT_NEAR(e.algbw_gbps, 256.0 * kMiB / e.ns, 1e-9);
  EXPECT_NEAR(e.busbw_gbps, e.algbw_gbps * 7 / 8, 1e-9);
  EXPECT_GT(e.channels, 0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kSend, 2), 1.0);
  // A group of one rank is a local copy.
  const CollectiveEstimate local = Estimate(sys, OpType::kAllGather, 1 * kGiB, {1, 1, 1});
  EXPECT_EQ(local.algo, NcclAlgo::kLocal);
  EXPECT_LT(local.ns, Estimate(sys, OpType::kAllGather, 1 * kGiB, {2, 2, 1}).ns);
}

TEST(NcclModel, PointToPoint) {
  const NcclSystem sys = System("h100-sxm");
  const CollectiveEstimate send = Estimate(sys, OpType::kSend, 1 * kGiB, {2, 2, 1});
  EXPECT_EQ(send.algo, NcclAlgo::kP2p);
  EXPECT_EQ(send.ns, Estimate(sys, OpType::kRecv, 1 * kGiB, {2, 2, 1}).ns);
  EXPECT_NEAR(send.algbw_gbps, sys.intra_bus_gbps,
              0.02 * sys.intra_bus_gbps);  // ~ the measured 376 GB/s
  const CollectiveEstimate remote = Estimate(sys, OpType::kSend, 1 * kGiB, {2, 1, 2});
  EXPECT_NEAR(remote.algbw_gbps, sys.nic_gbps, 0.02 * sys.nic_gbps);
  // Blocks held: two channels per network peer, the communicator's channels over NVLink.
  EXPECT_EQ(remote.channels, 2);
  EXPECT_EQ(send.channels, sys.channels);
  // All-to-all across nodes is bound by the NIC share of the traffic.
  const CollectiveEstimate a2a = Estimate(sys, OpType::kAllToAll, 1 * kGiB, {16, 8, 2});
  EXPECT_EQ(a2a.algo, NcclAlgo::kAllToAll);
  EXPECT_NEAR(a2a.ns, 1.0 * kGiB * 8 / 16 / sys.nic_gbps, 0.02 * a2a.ns);
}

TEST(GroupShapeOf, PlacesRanksRowMajor) {
  ProcessGroup node;
  node.ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(GroupShapeOf(node, 8), (GroupShape{8, 8, 1}));
  ProcessGroup replicas;
  replicas.ranks = {3, 11, 19, 27};
  EXPECT_EQ(GroupShapeOf(replicas, 8), (GroupShape{4, 1, 4}));
  ProcessGroup straddling;
  straddling.ranks = {4, 5, 6, 7, 8, 9};
  EXPECT_EQ(GroupShapeOf(straddling, 8), (GroupShape{6, 4, 2}));
  EXPECT_EQ(GroupShapeOf(straddling, 4), (GroupShape{6, 4, 2}));
  EXPECT_EQ(GroupShapeOf(straddling, 2), (GroupShape{6, 2, 3}));
}

TEST(GroupShapeOf, CountsNvlinkDomainsLargerThanANode) {
  ProcessGroup dp64;
  for (int r = 0; r < 64; ++r) dp64.ranks.push_back(r);
  // GB200 NVL72: trays of 4, one domain of 72 → 16 nodes, 1 domain.
  EXPECT_EQ(GroupShapeOf(dp64, 4, 72), (GroupShape{64, 4, 16, 64, 1}));
  // A domain no larger than the node adds nothing.
  EXPECT_EQ(GroupShapeOf(dp64, 8, 8), (GroupShape{64, 8, 8}));
  EXPECT_EQ(GroupShapeOf(dp64, 8), (GroupShape{64, 8, 8}));
  ProcessGroup two_racks;
  for (int r = 0; r < 144; r += 2) two_racks.ranks.push_back(r);
  EXPECT_EQ(GroupShapeOf(two_racks, 4, 72), (GroupShape{72, 2, 36, 36, 2}));
}

// issue 14: a 64-GPU job on GB200 NVL72 runs its collectives at NVLink speed, while on H100
// (8 nodes of 8) and on the same GPUs with the tray as the domain they cross the NICs.
TEST(NcclModel, Gb200Nvl72CollectivesStayOnNvlink) {
  const Hardware gb200 = *LookupHardware("gb200-nvl72", 4, 16);
  const NcclSystem rack = NcclSystemFor(gb200, DefaultCostParams(gb200));
  Hardware trays_only = gb200;
  trays_only.node.nvlink_domain = 4;
  const NcclSystem trays = NcclSystemFor(trays_only, DefaultCostParams(trays_only));
  const NcclSystem h100 = System("h100-sxm", true, 8);
  ProcessGroup dp64;
  for (int r = 0; r < 64; ++r) dp64.ranks.push_back(r);
  const GroupShape rack_shape = GroupShapeOf(dp64, 4, gb200.node.nvlink_domain);
  const GroupShape tray_shape = GroupShapeOf(dp64, 4, 4);
  const GroupShape h100_shape = GroupShapeOf(dp64, 8, 8);
  const NcclSystem one_node_of_64 = rack;  // the same links as one node holding all 64
  for (OpType type : {OpType::kAllGather, OpType::kReduceScatter, OpType::kAllReduce}) {
    const int64_t bytes = 1 * kGiB;
    const CollectiveEstimate on_rack = Estimate(rack, type, bytes, rack_shape);
    const CollectiveEstimate over_nics = Estimate(trays, type, bytes, tray_shape);
    const CollectiveEstimate on_h100 = Estimate(h100, type, bytes, h100_shape);
    // Priced exactly as if the 64 GPUs sat in one node: NVLink figures, no network step.
    EXPECT_EQ(on_rack.ns, Estimate(one_node_of_64, type, bytes, GroupShape{64, 64, 1}).ns)
        << OpTypeName(type);
    // 18 x 40.1 GB/s NVLink links against one 400 Gb/s NIC per GPU: several times faster.
    EXPECT_GT(on_rack.busbw_gbps, 500) << OpTypeName(type);
    EXPECT_LT(over_nics.busbw_gbps, 0.5 * on_rack.busbw_gbps) << OpTypeName(type);
    EXPECT_LT(on_h100.busbw_gbps, 0.7 * on_rack.busbw_gbps) << OpTypeName(type);
  }
}

}  // namespace
}  // namespace shardscope
