// Calibration files: JSON that overrides any figure of the hardware catalog or of the cost
// model. Every key is optional; an unknown key or a value of the wrong type or range is an
// error naming the file and the key (`cal.json: compute.gemm_efficency: unknown key (did you
// mean gemm_efficiency?)`).
//
// Format (all sections optional):
//   {
//     "gpu":   {"peak_bf16_tflops": 989, "best_matmul_tflops": 795, "hbm_gib": 80,
//               "reserved_gib": 2.5, "hbm_tbps": 3.35, "nvlink_gbps": 450,
//               "nvlink_links": 18, "nvlink_link_gbps": 20.6, "nvls": true, "pcie_gbps": 50,
//               "attention_efficiency": 0.45, "memory_bound_efficiency": 0.8,
//               "elementwise_efficiency": 0.55, "sm_count": 132},
//     "node":  {"nics_per_node": 8, "nic_gbit_per_s": 400, "nic_efficiency": 0.94},
//     "compute": {"gemm_efficiency": 0.8, "gemm_ramp_us": 0.6, "gemm_tile": 128,
//                 "attention_efficiency": 0.45, "memory_bound_efficiency": 0.8,
//                 "elementwise_efficiency": 0.55,
//                 "backward_kernels": 2, "kernel_overhead_us": 2, "unit_overhead_us": 30,
//                 "overlap_slowdown": 1.2, "attention_backward_ratio": 0.8,
//                 "host_optimizer_gbps": 10},
//     "collectives": {"launch_us": 15, "latency_scale": 1.0, "bandwidth_scale": 1.0,
//                     "nvls": false,
//                     "overrides": [{"op": "all_gather", "ranks_per_node": 8, "nodes": 1,
//                                    "latency_us": 20, "busbw_gbps": 300}]}
//   }
// "gpu.attention_efficiency" and "compute.attention_efficiency" are the same figure (the
// compute section wins when both are given); likewise memory_bound_efficiency, and
// compute.gemm_efficiency follows gpu.best_matmul_tflops / peak_bf16_tflops unless given.
// collectives.nvls false is NCCL_NVLS_ENABLE=0. An override replaces NCCL's model for that
// op on groups of exactly that shape. A top-level "notes" string is kept as provenance.
//
// Contents:
//   Calibration          a validated override set (keeps the JSON to write it back)
//   ParseCalibration     text → Calibration (validates every key)
//   LoadCalibration      file → Calibration (ReadFile, so .gz works)
//   ApplyCalibration     overrides hardware and parameters in place
//   CalibrationToJson    the canonical JSON text of a Calibration (what `calibrate` writes)
//   CalibrationKeys      every key a calibration file may set, as "section.key"
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"
#include "sim/cost/cost_params.h"
#include "sim/hardware/hardware.h"

namespace shardscope {

struct Calibration {
  nlohmann::json overrides = nlohmann::json::object();  // validated; only known keys
  std::string source;                                   // file name, for messages
};

// `source` prefixes every error message (e.g. the file name).
Result<Calibration> ParseCalibration(std::string_view text, std::string_view source);
Result<Calibration> LoadCalibration(const std::string& path);

// Applies `cal` to `hw` and `params` (either may be null to skip it). Cross-field checks that
// need both (best_matmul <= peak) are made here.
Status ApplyCalibration(const Calibration& cal, Hardware* hw, CostParams* params);

// Pretty-printed JSON (2-space indent, keys sorted) that ParseCalibration reads back.
std::string CalibrationToJson(const Calibration& cal);

// Every key a calibration file may set ("gpu.hbm_tbps", "compute.gemm_ramp_us", ...,
// "collectives.overrides"); docs/calibration.md lists them (tests/docs checks it).
std::vector<std::string> CalibrationKeys();

}  // namespace shardscope
