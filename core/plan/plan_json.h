// The plan's two outward forms: JSON (formats.md §1b) and the readable table of `plan`.
//
// Contents:
//   PlanToJson       {"format": "shardscope-plan/1", "units": [...], "warnings", "totals", ...}
//   FormatPlanTable  one row per unit in execution order (root last), the pipeline chunk roots,
//                    then warnings and totals
//   FormatBytes      "1.50 GiB" / "12.0 MiB" / "512 B"
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/plan/plan.h"

namespace shardscope {

// Units in wrapping order. Beyond §1b each unit carries depth, expert, mixed_precision,
// offload, comm_fusion(_zero_copy), byte figures and replicate_param_details; the top level
// carries execution_order, mesh, adapter, source_metadata_present and pipeline_chunks (the
// chunk roots under pp > 1: chunk, stage, label, units, modules, params, replicate_params).
nlohmann::json PlanToJson(const Plan& plan);

std::string FormatPlanTable(const Plan& plan);

std::string FormatBytes(int64_t bytes);

}  // namespace shardscope
