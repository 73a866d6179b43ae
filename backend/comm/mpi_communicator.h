// MPI communicators for CPU ranks: the CommFactory of a launched `run --device cpu`. One MPI
// communicator per schedule ProcessGroup (MPI_Comm_split of the world, backend/comm/
// mpi_groups.h); each call runs as a host task on its lane (the host device's lane thread)
// with a non-blocking MPI collective polled to completion, so the lane is busy exactly while
// the collective runs and other lanes keep computing.
//
// Contents:
//   MpiCommOptions       the watchdog's timeout
//   MakeMpiCommFactory   MPI_Init_thread(MULTIPLE) for a launched process, the factory
//   kTestExitEnv         SHARDSCOPE_TEST_EXIT_AT: test-only, makes one rank exit mid-step
//   kTestCorruptEnv      SHARDSCOPE_TEST_CORRUPT_AT: test-only, corrupts one collective
//
// Data and arithmetic (communicator.h's semantics): all-gathers and all-to-alls move bytes
// (MPI_Iallgather in place / MPI_Ialltoallv); reductions follow backend/check/
// reduction_rule.h: the lane converts the input to float64 with the pre-scaling applied in the
// reduce dtype, MPI_Ireduce_scatter_block / MPI_Iallreduce sums float64 (MPI has no bfloat16
// reduction, and an exact sum makes MPI's reduction order irrelevant), and the lane rounds the
// sum once to the reduce dtype and applies the post-divide. Sends and receives are
// MPI_Isend / MPI_Irecv in issue order on the group's communicator.
//
// Faults (never a hang): a call still running `timeout` after it started on its lane, or one
// that MPI fails, returns RuntimeError naming the op_id, the group and its ranks, and which of
// them do not answer the liveness roll call (backend/comm/mpi_roll_call.h): those died or
// hang. After a fault the process skips MPI_Finalize. A rank the launcher terminates because
// another rank failed (mpirun's default) reports so on SIGTERM and exits 3.
#pragma once

#include <chrono>
#include <memory>

#include "backend/comm/communicator.h"
#include "backend/launch.h"
#include "core/util/status.h"

namespace shardscope::backend {

struct MpiCommOptions {
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);
};

// Initialises MPI (once per process) for the launched world `launch` describes.
Result<std::unique_ptr<CommFactory>> MakeMpiCommFactory(const LaunchInfo& launch,
                                                        const MpiCommOptions& options);

// "RANK:OP_ID": world rank RANK exits (status kTestExitStatus, no MPI_Finalize) just before it
// would issue collective OP_ID, as a crashed rank would. For the fault tests only.
inline constexpr const char* kTestExitEnv = "SHARDSCOPE_TEST_EXIT_AT";
inline constexpr int kTestExitStatus = 86;
// "RANK:OP_ID": world rank RANK flips a bit of collective OP_ID's output after it completed,
// so `run --check` must catch it. For the check's tests only.
inline constexpr const char* kTestCorruptEnv = "SHARDSCOPE_TEST_CORRUPT_AT";

}  // namespace shardscope::backend
