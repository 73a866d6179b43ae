// MakeNcclCommFactory (backends.h): the NCCL world bootstrapped over MPI (b3's MpiWorld:
// the ncclUniqueId broadcast, the group lists all-gathered). Built only with MPI.
#include <chrono>
#include <memory>
#include <vector>

#include "backend/backends.h"
#include "backend/comm/mpi_roll_call.h"  // MpiWorld holds one by unique_ptr
#include "backend/comm/mpi_world.h"
#include "backend/cuda/nccl_comm.h"

namespace shardscope::backend {

Result<std::unique_ptr<CommFactory>> MakeNcclCommFactory(const LaunchInfo& launch, Device& device) {
  SS_ASSIGN_OR_RETURN(std::unique_ptr<MpiWorld> owned, MpiWorld::Init(launch));
  // Shared by the bootstrap's callbacks, so MPI lives (and is finalised) with the factory.
  std::shared_ptr<MpiWorld> world(std::move(owned));
  cuda::NcclBootstrap boot;
  boot.rank = world->rank();
  boot.size = world->size();
  boot.broadcast = [world](void* data, int64_t bytes, int root) {
    return world->Broadcast(data, bytes, root);
  };
  boot.all_gather = [world](const void* data, int64_t bytes) {
    return world->AllGatherBytes(data, bytes);
  };
  boot.versions["mpi"] = MpiVersion();
  boot.mark_faulted = [world] { world->MarkFaulted(); };
  boot.unresponsive = [world](const std::vector<int>& ranks) {
    return world->roll_call().Unresponsive(ranks, std::chrono::milliseconds(2000));
  };
  return cuda::MakeNcclCommFactoryWith(std::move(boot), device);
}

}  // namespace shardscope::backend
