// NCCL communicators for GPU ranks: a world communicator from an ncclUniqueId that rank 0
// makes and a bootstrap broadcasts (MPI in `run`: backend/cuda/nccl_mpi.cpp), and one
// communicator per schedule group split from it (ncclCommSplit), each collective enqueued on
// its lane's stream of the CUDA device.
//
// Contents:
//   NcclBootstrap         the out-of-band world: rank, size, a broadcast and an all-gather
//   PlanSplitRounds       which groups one ncclCommSplit call can make at once
//   MakeNcclCommFactoryWith   the factory over a bootstrap
//
// Semantics (communicator.h): reductions sum in the collective's dtype; pre_scale becomes
// NCCL's premul-sum (ncclRedOpCreatePreMulSum, the scalar in the dtype), kAvg ncclAvg, and
// post_scale a scaling kernel on the output after the collective, on the same stream. A
// send / receive or all-to-all whose buffer the schedule does not track gets a scratch
// buffer from the device (comm_buffers) for the call's duration.
// Faults: Wait polls each call's completion event and ncclCommGetAsyncError; an NCCL error,
// or a call still running after the timeout, aborts the communicator (ncclCommAbort, which
// also ends its kernels, so the device drains) and returns RuntimeError naming the op_id, the
// group and its ranks, and which of them do not answer the bootstrap's liveness check (those
// died or hang).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/comm/communicator.h"
#include "backend/device/device.h"
#include "core/util/status.h"

namespace shardscope::backend::cuda {

struct NcclBootstrap {
  int rank = 0;
  int size = 1;
  // `bytes` at `data` from `root` to every rank (blocking, set-up only).
  std::function<Status(void* data, int64_t bytes, int root)> broadcast;
  // Every rank's `bytes` (the same on all), concatenated in rank order.
  std::function<Result<std::vector<char>>(const void* data, int64_t bytes)> all_gather;
  std::map<std::string, std::string> versions;  // the bootstrap's own ({"mpi": ...})
  // Called after a fault so the bootstrap does not wait for dead peers at exit.
  std::function<void()> mark_faulted;
  // Which of these world ranks no longer answer (a liveness check beside NCCL: MPI's roll
  // call); may be empty, then faults name the group's ranks only.
  std::function<std::vector<int>(const std::vector<int>& world_ranks)> unresponsive;
};

// Splits of a world communicator that make every rank set in `sets` (each a group's global
// ranks, ascending): each round is one ncclCommSplit, coloring disjoint sets at once. Every
// rank computes the same rounds from the same (all-gathered) sets; sets are deduplicated and
// ordered, so the result does not depend on the order they came in.
std::vector<std::vector<std::vector<int>>> PlanSplitRounds(std::vector<std::vector<int>> sets);

// `device` must be the CUDA device (backend/cuda/cuda_device.h) this process runs on.
Result<std::unique_ptr<CommFactory>> MakeNcclCommFactoryWith(NcclBootstrap bootstrap,
                                                             Device& device);

}  // namespace shardscope::backend::cuda
