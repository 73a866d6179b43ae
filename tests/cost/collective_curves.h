// Reads tests/cost/data/collectives.json (measured NCCL curves) and prices each point with
// the default cost model, for the validation test and bench/collective_model_benchmark.cpp.
//
// Contents:
//   CurvePoint / Curve     one measured point / curve, with the NVLS setting it was measured with
//   LoadCurves             the JSON file → curves
//   ModelPoint             the model's estimate for one point (catalog defaults + that NVLS
//   setting)
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/util/file_io.h"
#include "sim/cost/calibration.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/cost_params.h"
#include "sim/hardware/hardware.h"

namespace shardscope::testing {

struct CurvePoint {
  int64_t bytes = 0;
  int gpus = 0;
  double busbw_gbps = 0;
  std::string known_miss;  // why the default model cannot meet this point ("" = it must)
};

struct Curve {
  std::string id;
  std::string gpu;
  int nodes = 1;
  OpType type = OpType::kAllReduce;
  bool nvls = true;
  int64_t nvls_from_bytes = 0;  // > 0: NVLS only from this size on
  bool informational = false;   // printed by the benchmark, not held to the 15% target
  std::string calibration;      // calibration JSON the curve's system needs ("" = none)
  std::vector<CurvePoint> points;
};

inline Result<std::vector<Curve>> LoadCurves(const std::string& path) {
  SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("curves"))
    return InvalidInput(path + ": expected {\"curves\": [...]}");
  std::vector<Curve> out;
  for (const auto& c : j["curves"]) {
    Curve curve;
    curve.id = c.at("id").get<std::string>();
    curve.gpu = c.at("gpu").get<std::string>();
    curve.nodes = c.value("nodes", 1);
    const std::string coll = c.at("collective").get<std::string>();
    curve.type = coll == "all_gather"       ? OpType::kAllGather
                 : coll == "reduce_scatter" ? OpType::kReduceScatter
                                            : OpType::kAllReduce;
    curve.nvls = c.value("nvls", true);
    curve.nvls_from_bytes = c.value("nvls_from_bytes", int64_t{0});
    curve.informational = c.value("informational", false);
    if (c.contains("calibration")) curve.calibration = c["calibration"].dump();
    for (const auto& p : c.at("points")) {
      CurvePoint point;
      point.bytes = p.at("bytes").get<int64_t>();
      point.gpus = p.value("gpus", c.value("gpus", 8));
      point.busbw_gbps = p.at("busbw_gbps").get<double>();
      point.known_miss = p.value("known_miss", std::string());
      curve.points.push_back(point);
    }
    out.push_back(std::move(curve));
  }
  return out;
}

// The default model's estimate for `point` of `curve`: catalog figures (plus the curve's
// calibration, if any), point.gpus GPUs per node, NVLS as the measurement had it.
inline Result<CollectiveEstimate> ModelPoint(const Curve& curve, const CurvePoint& point) {
  SS_ASSIGN_OR_RETURN(Hardware hw, LookupHardware(curve.gpu, point.gpus, curve.nodes));
  CostParams params = DefaultCostParams(hw);
  if (!curve.calibration.empty()) {
    SS_ASSIGN_OR_RETURN(Calibration cal, ParseCalibration(curve.calibration, curve.id));
    SS_RETURN_IF_ERROR(ApplyCalibration(cal, &hw, &params));
  }
  const bool nvls = curve.nvls_from_bytes > 0 ? point.bytes >= curve.nvls_from_bytes : curve.nvls;
  params.nvls_enabled = params.nvls_enabled && nvls;
  const auto model = MakeDefaultCostModel(hw, params);
  GroupShape shape;
  shape.size = point.gpus * curve.nodes;
  shape.ranks_per_node = point.gpus;
  shape.nodes = curve.nodes;
  return model->CollectiveNs(curve.type, point.bytes, shape);
}

}  // namespace shardscope::testing
