// Where this process sits in a launch: world rank and size and the local rank, as the
// launcher tells them through the environment (mpirun: OMPI_COMM_WORLD_*, PMIx: PMIX_RANK;
// Slurm's srun: SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID), before any MPI call.
//
// Contents:
//   LaunchInfo    world rank / size, local rank, which launcher
//   DetectLaunch  reads the environment; one rank of a world of one when nothing is set
#pragma once

#include <string>

namespace shardscope::backend {

struct LaunchInfo {
  int world_rank = 0;
  int world_size = 1;
  int local_rank = 0;             // picks the GPU (DeviceOptions::local_rank)
  int local_size = 1;             // ranks on this host (they share its memory)
  std::string launcher = "none";  // "mpirun" | "srun" | "none"
  bool launched() const { return launcher != "none"; }
};

LaunchInfo DetectLaunch();

}  // namespace shardscope::backend
