#include "sim/calibrate/free_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/cost/cost_model.h"
#include "sim/cost/nccl_model.h"

namespace shardscope::calibrate {
namespace {

FreeFigure Figure(std::string key, FigureKind kind, double value, double lo, double hi) {
  FreeFigure f;
  f.key = std::move(key);
  f.kind = kind;
  f.default_value = std::clamp(value, lo, hi);
  f.lo = lo;
  f.hi = hi;
  return f;
}

CollectiveOverride* FindOverride(std::vector<CollectiveOverride>& list, const CollectiveShape& s) {
  for (CollectiveOverride& o : list) {
    if (o.type == s.type && o.ranks_per_node == s.ranks_per_node && o.nodes == s.nodes) return &o;
  }
  return nullptr;
}

}  // namespace

double FreeFigure::ToValue(double z) const { return std::clamp(offset + std::exp(z), lo, hi); }

double FreeFigure::ToZ(double value) const {
  const double v = std::clamp(value, lo, hi) - offset;
  return std::log(std::max(v, 1e-12));
}

std::vector<double> FigureSet::DefaultZ() const {
  std::vector<double> z;
  for (const FreeFigure& f : figures) z.push_back(f.ToZ(f.default_value));
  return z;
}

// The schedule's own name of the op type: what the cost-model file's `collectives.overrides`
// entries say in `op` (cost-model.md).
std::string CollectiveName(OpType type) { return std::string(OpTypeName(type)); }

FigureSet ComputeFigures(const CostParams& d, bool collective_scales) {
  FigureSet set;
  auto& f = set.figures;
  f.push_back(
      Figure("compute.gemm_efficiency", FigureKind::kGemmEfficiency, d.gemm_efficiency, 0.01, 1));
  f.push_back(Figure("compute.gemm_ramp_us", FigureKind::kGemmRampUs, d.gemm_ramp_us, 1e-3, 1e4));
  f.push_back(Figure("compute.attention_efficiency", FigureKind::kAttentionEfficiency,
                     d.attention_efficiency, 0.01, 1));
  f.push_back(Figure("compute.memory_bound_efficiency", FigureKind::kMemoryBoundEfficiency,
                     d.memory_bound_efficiency, 0.01, 1));
  f.push_back(Figure("compute.elementwise_efficiency", FigureKind::kElementwiseEfficiency,
                     d.elementwise_efficiency, 0.01, 1));
  f.push_back(Figure("compute.kernel_overhead_us", FigureKind::kKernelOverheadUs,
                     d.kernel_overhead_us, 1e-3, 1e5));
  f.push_back(Figure("compute.unit_overhead_us", FigureKind::kUnitOverheadUs, d.unit_overhead_us,
                     1e-2, 1e7));
  FreeFigure overlap = Figure("compute.overlap_slowdown", FigureKind::kOverlapSlowdown,
                              d.overlap_slowdown >= 1 ? d.overlap_slowdown : 1.19, 1.0001, 10);
  overlap.offset = 1;
  overlap.prior_sd = 1.0;  // the stretch is the least known figure (18.9% on average, up to 40%)
  f.push_back(overlap);
  if (collective_scales) {
    f.push_back(Figure("collectives.latency_scale", FigureKind::kCollectiveLatencyScale,
                       d.collective_latency_scale, 1e-3, 1e3));
    f.push_back(Figure("collectives.bandwidth_scale", FigureKind::kCollectiveBandwidthScale,
                       d.collective_bandwidth_scale, 1e-3, 1e3));
  }
  return set;
}

void AddShapeFigures(const CollectiveShape& shape, int64_t largest_bytes, const Hardware& hw,
                     const CostParams& defaults, FigureSet* set) {
  for (const CollectiveShape& s : set->shapes) {
    if (s == shape) return;
  }
  const int index = static_cast<int>(set->shapes.size());
  set->shapes.push_back(shape);
  GroupShape g;
  g.ranks_per_node = shape.ranks_per_node;
  g.nodes = shape.nodes;
  g.size = shape.ranks_per_node * shape.nodes;
  const NcclSystem sys = NcclSystemFor(hw, defaults);
  const CollectiveEstimate small = NcclCollective(shape.type, 1, g, sys);
  const CollectiveEstimate large =
      NcclCollective(shape.type, std::max<int64_t>(largest_bytes, 1), g, sys);
  const std::string name = fmt::format("collectives.{}[{}x{}]", CollectiveName(shape.type),
                                       shape.ranks_per_node, shape.nodes);
  FreeFigure lat = Figure(name + ".latency_us", FigureKind::kShapeLatencyUs,
                          static_cast<double>(small.ns) / 1e3, 0.01, 1e6);
  FreeFigure bw = Figure(name + ".busbw_gbps", FigureKind::kShapeBusbwGbps,
                         std::max(large.busbw_gbps, 1e-3), 1e-4, 1e5);
  lat.shape = index;
  bw.shape = index;
  set->figures.push_back(lat);
  set->figures.push_back(bw);
}

CostParams ApplyFigures(const FigureSet& set, const std::vector<double>& z,
                        const std::vector<int>& active, const CostParams& base) {
  CostParams p = base;
  std::vector<int> all;
  const std::vector<int>* which = &active;
  if (active.empty()) {
    for (size_t i = 0; i < set.figures.size(); ++i) all.push_back(static_cast<int>(i));
    which = &all;
  }
  // Every shape with an active figure gets an override, starting from both defaults.
  for (int i : *which) {
    const FreeFigure& f = set.figures[i];
    if (f.shape < 0) continue;
    const CollectiveShape& s = set.shapes[f.shape];
    if (FindOverride(p.collective_overrides, s) != nullptr) continue;
    CollectiveOverride o;
    o.type = s.type;
    o.ranks_per_node = s.ranks_per_node;
    o.nodes = s.nodes;
    for (const FreeFigure& g : set.figures) {
      if (g.shape != f.shape) continue;
      (g.kind == FigureKind::kShapeLatencyUs ? o.latency_us : o.busbw_gbps) = g.default_value;
    }
    p.collective_overrides.push_back(o);
  }
  for (int i : *which) {
    const FreeFigure& f = set.figures[i];
    const double v = f.ToValue(z[i]);
    switch (f.kind) {
      case FigureKind::kGemmEfficiency:
        p.gemm_efficiency = v;
        break;
      case FigureKind::kGemmRampUs:
        p.gemm_ramp_us = v;
        break;
      case FigureKind::kAttentionEfficiency:
        p.attention_efficiency = v;
        break;
      case FigureKind::kMemoryBoundEfficiency:
        p.memory_bound_efficiency = v;
        break;
      case FigureKind::kElementwiseEfficiency:
        p.elementwise_efficiency = v;
        break;
      case FigureKind::kKernelOverheadUs:
        p.kernel_overhead_us = v;
        break;
      case FigureKind::kUnitOverheadUs:
        p.unit_overhead_us = v;
        break;
      case FigureKind::kOverlapSlowdown:
        p.overlap_slowdown = v;
        break;
      case FigureKind::kCollectiveLatencyScale:
        p.collective_latency_scale = v;
        break;
      case FigureKind::kCollectiveBandwidthScale:
        p.collective_bandwidth_scale = v;
        break;
      case FigureKind::kShapeLatencyUs:
        FindOverride(p.collective_overrides, set.shapes[f.shape])->latency_us = v;
        break;
      case FigureKind::kShapeBusbwGbps:
        FindOverride(p.collective_overrides, set.shapes[f.shape])->busbw_gbps = v;
        break;
    }
  }
  return p;
}

nlohmann::json FiguresToJson(const FigureSet& set, const std::vector<double>& z,
                             const std::vector<int>& active) {
  nlohmann::json j = nlohmann::json::object();
  const CostParams p = ApplyFigures(set, z, active, CostParams());
  for (int i : active) {
    const FreeFigure& f = set.figures[i];
    if (f.shape >= 0) continue;
    const size_t dot = f.key.find('.');
    j[f.key.substr(0, dot)][f.key.substr(dot + 1)] = f.ToValue(z[i]);
  }
  for (const CollectiveOverride& o : p.collective_overrides) {
    j["collectives"]["overrides"].push_back({{"op", CollectiveName(o.type)},
                                             {"ranks_per_node", o.ranks_per_node},
                                             {"nodes", o.nodes},
                                             {"latency_us", o.latency_us},
                                             {"busbw_gbps", o.busbw_gbps}});
  }
  return j;
}

}  // namespace shardscope::calibrate
