#include "backend/launch.h"

#include <cstdlib>
#include <string>

namespace shardscope::backend {
namespace {

// -1 when unset or not a number.
int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return (*end == '\0' && n >= 0) ? static_cast<int>(n) : -1;
}

}  // namespace

LaunchInfo DetectLaunch() {
  LaunchInfo info;
  struct Source {
    const char* launcher;
    const char* rank;
    const char* size;
    const char* local_rank;
    const char* local_size;
  };
  // Open MPI's mpirun first: under `srun --mpi=pmix mpirun …` its variables are the ranks'.
  static constexpr Source kSources[] = {
      {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"mpirun", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
      {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
  };
  for (const Source& s : kSources) {
    const int rank = EnvInt(s.rank);
    const int size = EnvInt(s.size);
    if (rank < 0 || size <= 0) continue;
    info.launcher = s.launcher;
    info.world_rank = rank;
    info.world_size = size;
    const int local = EnvInt(s.local_rank);
    info.local_rank = local >= 0 ? local : 0;
    const int local_size = EnvInt(s.local_size);
    info.local_size = local_size > 0 ? local_size : 1;
    return info;
  }
  return info;
}

}  // namespace shardscope::backend
