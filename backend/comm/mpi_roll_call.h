// Which ranks still answer: the liveness service behind the watchdog's messages. Every rank of
// a launched run keeps a responder thread on a communicator of its own (a duplicate of the
// world with errors returned, not fatal) that answers pings at once, whatever its lanes are
// doing. When a collective is stuck past --timeout the waiting rank pings the collective's
// group: a rank that does not answer within the grace period died (or its process hangs
// outside MPI); when every rank answers, the collective itself is stuck (a peer issued a
// different one, or waits on something else).
//
// Contents:
//   MpiRollCall          Start (collective over the world: duplicates it) / Stop
//     Unresponsive       ping some world ranks, return those that did not answer in time
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/util/status.h"

namespace shardscope::backend {

class MpiRollCall {
 public:
  // Collective over MPI_COMM_WORLD (duplicates it); starts the responder thread.
  static Result<std::unique_ptr<MpiRollCall>> Start();
  ~MpiRollCall();  // stops the responder (every rank does so before MPI_Finalize)
  MpiRollCall(const MpiRollCall&) = delete;
  MpiRollCall& operator=(const MpiRollCall&) = delete;

  // The ranks of `world_ranks` (this rank is skipped) that do not answer a ping within
  // `grace`, ascending. Safe from any thread; a rank's pings are answered in any order.
  std::vector<int> Unresponsive(const std::vector<int>& world_ranks,
                                std::chrono::milliseconds grace);

 private:
  MpiRollCall() = default;
  void Respond();  // the responder thread's loop
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> next_nonce_{1};
  std::thread responder_;
};

}  // namespace shardscope::backend
