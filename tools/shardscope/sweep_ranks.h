// `sweep` under a launcher (mpirun -np N): the combinations are dealt over the ranks
// (sim::DealCombinations: round-robin, the variants that share schedules kept together on one
// rank), every rank's results gathered, and rank 0 alone prints and writes, with
// the same output as one process. Without a launcher (or a build without MPI) the sweep runs
// whole in this process.
//
// Contents:
//   VariantToJson / VariantFromJson   one VariantResult as JSON, exactly (doubles round-trip)
//   SweepOverRanks                    RunSweep, split over the launched ranks
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "core/util/status.h"
#include "sim/explore/sweep.h"
#include "sim/explore/vary.h"

namespace shardscope::cli {

nlohmann::json VariantToJson(const sim::VariantResult& v);
sim::VariantResult VariantFromJson(const nlohmann::json& j);

// The whole sweep on every rank that returns with `*print` true (rank 0, or the only process);
// other ranks get an empty result and `*print` false.
Result<sim::SweepResult> SweepOverRanks(const sim::SweepBase& base,
                                        const std::vector<sim::VaryAxis>& axes,
                                        const sim::SweepOptions& options, bool* print);

}  // namespace shardscope::cli
