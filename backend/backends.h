// The constructors of every device and communicator this build has, in one place, so the
// `run` command (and tests) pick one without knowing how it is built. The CUDA ones exist
// when SHARDSCOPE_HAVE_CUDA is defined (library backend_cuda), the MPI ones when
// SHARDSCOPE_HAVE_MPI is (library backend_mpi); the host device and the emulated
// communicator always (library backend).
//
// Contents:
//   MakeHostDevice         backend/host/: the CPU device
//   MakeEmulatedCommFactory backend/comm/emulated_comm.h: `--emulate-world N --rank R`
//   MakeCudaDevice         backend/cuda/ (b2)
//   MakeMpiCommFactory     backend/comm/mpi* (b3): MPI_Init_thread(MULTIPLE), MPI_Comm_split
//   MakeNcclCommFactory    backend/cuda/ (b2): ncclUniqueId broadcast over MPI, ncclCommSplit
#pragma once

#include <memory>

#include "backend/comm/communicator.h"
#include "backend/comm/emulated_comm.h"
#include "backend/device/device.h"
#include "backend/launch.h"
#if defined(SHARDSCOPE_HAVE_MPI)
#include "backend/comm/mpi_communicator.h"
#endif
#include "core/util/status.h"

namespace shardscope::backend {

Result<std::unique_ptr<Device>> MakeHostDevice(const DeviceOptions& options);

#if defined(SHARDSCOPE_HAVE_CUDA)
// backend_cuda defines SHARDSCOPE_HAVE_CUDA_DEVICE once it provides this (`run` calls it then).
// RuntimeError saying no GPU answers (the `run` command adds the `--device cpu` hint, once).
Result<std::unique_ptr<Device>> MakeCudaDevice(const DeviceOptions& options);
#endif

#if defined(SHARDSCOPE_HAVE_MPI)
// MakeMpiCommFactory(launch, MpiCommOptions): backend/comm/mpi_communicator.h. MPI itself
// (the world, a broadcast for ncclUniqueId): backend/comm/mpi_world.h.
#if defined(SHARDSCOPE_HAVE_CUDA)
// backend_cuda defines SHARDSCOPE_HAVE_NCCL_COMM once it provides this (`run` calls it then).
// A world NCCL communicator bootstrapped over MPI, split per group; `device` is the CUDA
// device whose streams the collectives run on.
Result<std::unique_ptr<CommFactory>> MakeNcclCommFactory(const LaunchInfo& launch, Device& device);
#endif
#endif

}  // namespace shardscope::backend
