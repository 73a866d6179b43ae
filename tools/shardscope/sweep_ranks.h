// `sweep` under a launcher (mpirun -np N): the combinations are dealt over the ranks
// (sim::DealCombinations: round-robin, the variants that share schedules kept together on one
// rank), every rank's results gathered, and rank 0 alone prints and writes, with
// the same output as one process, errors included. Without a launcher (or a build without MPI)
// the sweep runs whole in this process.
//
// Contents:
//   VariantToJson / VariantFromJson   one VariantResult as JSON, exactly (doubles round-trip)
//   SweepRanks                        the launched ranks (MPI), or this process alone
//     Agree                           every rank's status at one point → what each reports
//     Sweep                           RunSweep, split over the launched ranks
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/util/status.h"
#include "sim/explore/sweep.h"
#include "sim/explore/vary.h"

namespace shardscope::cli {

nlohmann::json VariantToJson(const sim::VariantResult& v);
sim::VariantResult VariantFromJson(const nlohmann::json& j);

// The ranks a launcher started (MPI initialised, once per process, where the build has it), or,
// without a launcher, a world of one.
class SweepRanks {
 public:
  static Result<std::unique_ptr<SweepRanks>> Start();
  ~SweepRanks();
  SweepRanks(const SweepRanks&) = delete;
  SweepRanks& operator=(const SweepRanks&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every rank passes its status at the same point of the command (a collective). When any
  // rank failed, every rank returns an error: rank 0 its own, or the first failing rank's as
  // "rank R of N: ..."; another rank returns an error rank 0 says marked Status::SaidElsewhere
  // (main prints it once, not N times), and one rank 0 does not say as "rank R of N: ..." for
  // itself. Each rank's exit code is that of the error it returns. One process: `status`.
  Status Agree(Status status) const;

  // The whole sweep on every rank that returns with `*print` true (rank 0, or the only
  // process); other ranks get an empty result and `*print` false. Its errors are agreed.
  Result<sim::SweepResult> Sweep(const sim::SweepBase& base, const std::vector<sim::VaryAxis>& axes,
                                 const sim::SweepOptions& options, bool* print) const;

 private:
  SweepRanks() = default;
  struct World;  // the MPI world (a build with MPI)
  std::unique_ptr<World> world_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace shardscope::cli
