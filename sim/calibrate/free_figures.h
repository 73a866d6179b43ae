// The cost model's free figures as `calibrate` fits them: one vector of unconstrained
// coordinates z, each mapped to a figure by a bounded transform, applied to CostParams, and
// written back as a calibration file (sim/cost/calibration.h).
//
// Contents:
//   FigureKind        which CostParams field (or collective override) a figure sets
//   FreeFigure        one figure: its calibration key, default, bounds and prior width
//   FigureSet         every figure of one fit + the collective shapes it overrides
//   CollectiveShape   one (collective, ranks per node, nodes) a calibration may override
//   ComputeFigures    the compute / overlap figures (defaults from the hardware)
//   AddShapeFigures   latency and bus bandwidth of one collective shape (defaults from NCCL)
//   ApplyFigures      z → CostParams
//   FiguresToJson     values → the calibration file's JSON object
//
// Coordinates: value = lo_offset + exp(z) for every figure (positive figures: offset 0; the
// overlap stretch: offset 1, so z is log(stretch - 1)). Bounds are on the value. The prior
// (regularisation towards the default) is a normal on z with sd `prior_sd`: a factor of
// exp(prior_sd) on the figure (or on stretch - 1) is one standard deviation.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/schedule/schedule.h"
#include "sim/cost/cost_params.h"
#include "sim/hardware/hardware.h"

namespace shardscope::calibrate {

enum class FigureKind {
  kGemmEfficiency,
  kGemmRampUs,
  kAttentionEfficiency,
  kMemoryBoundEfficiency,
  kElementwiseEfficiency,
  kKernelOverheadUs,
  kUnitOverheadUs,
  kOverlapSlowdown,
  kCollectiveLatencyScale,
  kCollectiveBandwidthScale,
  kShapeLatencyUs,  // CollectiveOverride::latency_us of FreeFigure::shape
  kShapeBusbwGbps,  // CollectiveOverride::busbw_gbps of FreeFigure::shape
};

struct CollectiveShape {
  OpType type = OpType::kAllGather;
  int ranks_per_node = 1;
  int nodes = 1;
  bool operator==(const CollectiveShape&) const = default;
};

struct FreeFigure {
  std::string key;  // "compute.gemm_efficiency", "collectives.all_gather[4x1].busbw_gbps"
  FigureKind kind = FigureKind::kGemmEfficiency;
  double default_value = 0;
  double lo = 0, hi = 0;  // bounds on the value
  double offset = 0;      // value = offset + exp(z)
  double prior_sd = 0.7;  // on z
  int shape = -1;         // index into FigureSet::shapes (kShape*)

  double ToValue(double z) const;
  double ToZ(double value) const;  // value clamped into (offset, hi] first
  double ZLo() const { return ToZ(lo); }
  double ZHi() const { return ToZ(hi); }
};

struct FigureSet {
  std::vector<FreeFigure> figures;
  std::vector<CollectiveShape> shapes;

  std::vector<double> DefaultZ() const;
};

// Collective name as calibration files spell it ("all_gather", ...).
std::string CollectiveName(OpType type);

// GEMM, attention, memory-bound and elementwise efficiencies, kernel and unit overheads and
// the overlap stretch, with `defaults` (DefaultCostParams of the GPU) as their defaults; the
// overlap stretch defaults to 1.19 (Lee et al. 2025: overlapped compute 18.9% slower on
// average, cost_params.h), since the default contention model has no single factor.
// `collective_scales` adds NCCL's latency and bandwidth multipliers (for inputs that time
// whole steps only: per-shape figures need operation-level traces).
FigureSet ComputeFigures(const CostParams& defaults, bool collective_scales);

// Appends latency_us and busbw_gbps of `shape` (no-op when already present); the defaults are
// NCCL's model on `hw`: its time for a 1-byte message, its bus bandwidth at `largest_bytes`.
void AddShapeFigures(const CollectiveShape& shape, int64_t largest_bytes, const Hardware& hw,
                     const CostParams& defaults, FigureSet* set);

// `base` with figure i set to figures[i].ToValue(z[i]) for every i in `active` (all when
// empty). Collective overrides are added for every shape with an active figure; a shape's
// other figure keeps its default.
CostParams ApplyFigures(const FigureSet& set, const std::vector<double>& z,
                        const std::vector<int>& active, const CostParams& base);

// {"compute": {...}, "collectives": {...}} of the `active` figures at `z` (ParseCalibration
// reads it back).
nlohmann::json FiguresToJson(const FigureSet& set, const std::vector<double>& z,
                             const std::vector<int>& active);

}  // namespace shardscope::calibrate
