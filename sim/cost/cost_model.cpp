#include "sim/cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <variant>

#include "sim/cost/compute_model.h"
#include "sim/cost/nccl_model.h"

namespace shardscope {
namespace {

class DefaultCostModel final : public CostModel {
 public:
  DefaultCostModel(const Hardware& hw, const CostParams& params)
      : hw_(hw), params_(params), nccl_(NcclSystemFor(hw, params)) {}

  ComputeSplit ComputeSplitNs(const ComputeItem& item) const override {
    const ComputeTime t = ComputeItemTime(item, hw_, params_);
    return {UsToNs(t.total_us()), t.sm_us * 1e3, t.hbm_us * 1e3, t.flops};
  }

  int64_t HostComputeOpNs(const std::vector<ComputeItem>& items) const override {
    if (items.empty()) return 0;
    int64_t total = UnitOverheadNs();
    for (const ComputeItem& item : items) total += HostItemNs(item, params_);
    return total;
  }

  int64_t UnitOverheadNs() const override { return UsToNs(params_.unit_overhead_us); }

  CollectiveEstimate CollectiveNs(OpType type, int64_t bytes,
                                  const GroupShape& group) const override {
    CollectiveEstimate e = NcclCollective(type, bytes, group, nccl_);
    for (const CollectiveOverride& o : params_.collective_overrides) {
      if (o.type == type && o.ranks_per_node == group.ranks_per_node && o.nodes == group.nodes) {
        const int channels = e.channels;  // the measured curve says nothing of blocks held
        e = Calibrated(o, type, bytes, group);
        e.channels = channels;
        break;
      }
    }
    e.hbm_gbps =
        HbmPasses(type, e.algo) * (e.algo == NcclAlgo::kLocal ? e.algbw_gbps : e.busbw_gbps);
    return e;
  }

  ComputeSplit CopySplitNs(OpType type, int64_t bytes) const override {
    if (type == OpType::kCopyH2D || type == OpType::kCopyD2H)
      return {HostCopyNs(bytes, hw_, params_), 0, 0};
    return {DeviceCopyNs(bytes, hw_, params_), 0, DeviceCopyHbmUs(bytes, hw_, params_) * 1e3};
  }

  OverlapModel Overlap() const override {
    OverlapModel m;
    if (params_.overlap_slowdown >= 1.0) {
      m.uniform_slowdown = params_.overlap_slowdown;
      return m;
    }
    m.sm_count = hw_.gpu.sm_count;
    m.hbm_gbps = hw_.gpu.hbm_gbps * params_.memory_bound_efficiency;
    return m;
  }

  const Hardware& hardware() const override { return hw_; }

 private:
  static CollectiveEstimate Calibrated(const CollectiveOverride& o, OpType type, int64_t bytes,
                                       const GroupShape& group) {
    const double factor = BusBandwidthFactor(type, group.size);
    const double b = static_cast<double>(std::max<int64_t>(0, bytes));
    const double us = o.latency_us + (o.busbw_gbps > 0 ? b * factor / (o.busbw_gbps * 1e3) : 0.0);
    CollectiveEstimate e;
    e.ns = std::max<int64_t>(1, UsToNs(us));
    e.algo = NcclAlgo::kCalibrated;
    e.proto = NcclProto::kSimple;
    e.algbw_gbps = b / static_cast<double>(e.ns);
    e.busbw_gbps = e.algbw_gbps * factor;
    return e;
  }

  // Bytes of HBM traffic per bus byte: a ring step reads what it sends and its peer writes what
  // it receives (2); a reduction also reads the local operand (3); a send or receive touches
  // one side (1). NVLS reduces in the switch, so its all-reduce counts as 2.
  static double HbmPasses(OpType type, NcclAlgo algo) {
    const bool in_switch = algo == NcclAlgo::kNvls || algo == NcclAlgo::kNvlsTree;
    switch (type) {
      case OpType::kReduceScatter:
      case OpType::kAllReduce:
        return in_switch ? 2.0 : 3.0;
      case OpType::kSend:
      case OpType::kRecv:
        return 1.0;
      default:
        return 2.0;
    }
  }

  Hardware hw_;
  CostParams params_;
  NcclSystem nccl_;
};

}  // namespace

namespace {

// (distinct blocks, most ranks in one block) of `ranks` cut into blocks of `block` ranks.
std::pair<int, int> Spread(const std::vector<int>& ranks, int block) {
  std::map<int, int> ranks_in;
  for (int rank : ranks) ++ranks_in[rank / block];
  int most = 1;
  for (const auto& [b, count] : ranks_in) most = std::max(most, count);
  return {std::max<int>(1, static_cast<int>(ranks_in.size())), most};
}

}  // namespace

GroupShape GroupShapeOf(const ProcessGroup& group, int gpus_per_node, int nvlink_domain) {
  GroupShape shape;
  shape.size = std::max(1, group.size());
  const int per_node = std::max(1, gpus_per_node);
  std::tie(shape.nodes, shape.ranks_per_node) = Spread(group.ranks, per_node);
  if (nvlink_domain > per_node) {
    std::tie(shape.domains, shape.ranks_per_domain) = Spread(group.ranks, nvlink_domain);
  }
  return shape;
}

std::string_view NcclAlgoName(NcclAlgo algo) {
  switch (algo) {
    case NcclAlgo::kRing:
      return "Ring";
    case NcclAlgo::kTree:
      return "Tree";
    case NcclAlgo::kNvls:
      return "NVLS";
    case NcclAlgo::kNvlsTree:
      return "NVLSTree";
    case NcclAlgo::kPat:
      return "PAT";
    case NcclAlgo::kAllToAll:
      return "AllToAll";
    case NcclAlgo::kP2p:
      return "P2P";
    case NcclAlgo::kLocal:
      return "Local";
    case NcclAlgo::kCalibrated:
      return "Calibrated";
  }
  return "unknown";
}

std::string_view NcclProtoName(NcclProto proto) {
  switch (proto) {
    case NcclProto::kLL:
      return "LL";
    case NcclProto::kLL128:
      return "LL128";
    case NcclProto::kSimple:
      return "Simple";
  }
  return "unknown";
}

int64_t CostModel::OpOverheadNs(const std::vector<ComputeItem>& items) const {
  for (const ComputeItem& item : items) {
    if (!std::holds_alternative<FsdpCopyWork>(item.work)) return UnitOverheadNs();
  }
  return 0;
}

ComputeSplit CostModel::ComputeOpSplit(const std::vector<ComputeItem>& items) const {
  ComputeSplit total;
  total.ns = OpOverheadNs(items);
  for (const ComputeItem& item : items) {
    const ComputeSplit s = ComputeSplitNs(item);
    total.ns += s.ns;
    total.sm_ns += s.sm_ns;
    total.hbm_ns += s.hbm_ns;
    total.flops += s.flops;
  }
  return total;
}

std::unique_ptr<CostModel> MakeDefaultCostModel(const Hardware& hw, const CostParams& params) {
  return std::make_unique<DefaultCostModel>(hw, params);
}

}  // namespace shardscope
