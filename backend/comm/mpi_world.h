// The MPI world of a launched `run`: initialised once (MPI_THREAD_MULTIPLE: collectives are
// issued from the lane threads), finalised when the run ends cleanly, and never finalised
// after a fault: a peer that died or hangs would make MPI_Finalize hang too.
//
// Contents:
//   MpiWorld           Init / rank / size / local rank; the communicators of the run are split
//                      from it (backend/comm/mpi_communicator.h)
//     Broadcast        raw bytes from a root (the NCCL communicator's ncclUniqueId)
//     AllGatherBytes   equal-sized byte blocks from every rank (in rank order)
//     MarkFaulted      a collective failed or timed out: skip MPI_Finalize
//   MpiVersion         "Open MPI v4.1.4, ..." (MPI_Get_library_version), for measured output
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "backend/launch.h"
#include "core/util/status.h"

namespace shardscope::backend {

class MpiRollCall;

class MpiWorld {
 public:
  // Initialises MPI for a process started by a launcher (`launch.launched`); rank and size
  // must agree with what the launcher announced. RuntimeError when MPI cannot give
  // MPI_THREAD_MULTIPLE.
  static Result<std::unique_ptr<MpiWorld>> Init(const LaunchInfo& launch);
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return launch_.local_rank; }
  const LaunchInfo& launch() const { return launch_; }

  // Blocking, for set-up only (before any lane runs).
  Status Broadcast(void* data, int64_t bytes, int root) const;
  Result<std::vector<char>> AllGatherBytes(const void* data, int64_t bytes) const;
  Status Barrier() const;

  // The liveness service every rank runs (backend/comm/mpi_roll_call.h).
  MpiRollCall& roll_call() const { return *roll_call_; }

  // After a fault the run ends without MPI_Finalize (and the launcher cleans up).
  void MarkFaulted() { faulted_ = true; }
  // How long the end of the run waits for the other ranks before leaving without
  // MPI_Finalize (the watchdog's --timeout).
  void set_shutdown_timeout(std::chrono::nanoseconds t) { shutdown_timeout_ = t; }
  bool faulted() const { return faulted_; }

 private:
  explicit MpiWorld(const LaunchInfo& launch) : launch_(launch) {}
  LaunchInfo launch_;
  int rank_ = 0;
  int size_ = 1;
  std::atomic<bool> faulted_{false};
  std::chrono::nanoseconds shutdown_timeout_ = std::chrono::seconds(300);
  std::unique_ptr<MpiRollCall> roll_call_;
};

std::string MpiVersion();

}  // namespace shardscope::backend
