#include "backend/comm/mpi_world.h"

#include <fmt/core.h>
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <thread>

#include "backend/comm/mpi_roll_call.h"

namespace shardscope::backend {

Result<std::unique_ptr<MpiWorld>> MpiWorld::Init(const LaunchInfo& launch) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return RuntimeError("MPI is already initialised in this process");
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    return RuntimeError(fmt::format("MPI_Init_thread failed (started by {})", launch.launcher));
  }
  std::unique_ptr<MpiWorld> world(new MpiWorld(launch));
  if (provided < MPI_THREAD_MULTIPLE) {
    // Finalised by the destructor: a clean refusal, every rank sees the same.
    return RuntimeError(fmt::format(
        "the MPI library provides thread level {} but the lanes issue collectives from several "
        "threads (MPI_THREAD_MULTIPLE, {}): {}",
        provided, MPI_THREAD_MULTIPLE, MpiVersion()));
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &world->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world->size_);
  if (world->rank_ != launch.world_rank || world->size_ != launch.world_size) {
    return RuntimeError(fmt::format(
        "MPI reports rank {} of {} but the {} environment announced rank {} of {}", world->rank_,
        world->size_, launch.launcher, launch.world_rank, launch.world_size));
  }
  SS_ASSIGN_OR_RETURN(world->roll_call_, MpiRollCall::Start());
  return world;
}

MpiWorld::~MpiWorld() {
  if (faulted_) {
    // The responder thread may be inside MPI with a peer gone: leave it to the process exit.
    (void)roll_call_.release();
    return;
  }
  // Every rank stops its responder before finalising, so no answer is left in flight. The
  // barrier is bounded: a peer that faulted never arrives, and then this rank leaves without
  // MPI_Finalize (which would wait for it forever).
  if (roll_call_) {
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    const auto deadline = std::chrono::steady_clock::now() + shutdown_timeout_;
    int done = 0;
    while (MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!done) {
      std::fprintf(stderr,
                   "shardscope: rank %d: the other ranks did not reach the end of the run "
                   "within %g s; leaving without MPI_Finalize\n",
                   rank_, std::chrono::duration<double>(shutdown_timeout_).count());
      (void)roll_call_.release();
      return;
    }
    roll_call_.reset();
  }
  MPI_Finalize();
}

Status MpiWorld::Broadcast(void* data, int64_t bytes, int root) const {
  if (bytes > INT_MAX) return RuntimeError(fmt::format("broadcast of {} bytes: too large", bytes));
  if (MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD) != MPI_SUCCESS) {
    return RuntimeError(fmt::format("MPI_Bcast of {} bytes from rank {} failed", bytes, root));
  }
  return Status::Ok();
}

Result<std::vector<char>> MpiWorld::AllGatherBytes(const void* data, int64_t bytes) const {
  if (bytes * size_ > INT_MAX) {
    return RuntimeError(fmt::format("all-gather of {} bytes per rank: too large", bytes));
  }
  std::vector<char> out(static_cast<size_t>(bytes * size_));
  if (MPI_Allgather(data, static_cast<int>(bytes), MPI_BYTE, out.data(), static_cast<int>(bytes),
                    MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS) {
    return RuntimeError("MPI_Allgather over the world failed");
  }
  return out;
}

Status MpiWorld::Barrier() const {
  if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) return RuntimeError("MPI_Barrier failed");
  return Status::Ok();
}

std::string MpiVersion() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<size_t>(len));
  // Open MPI's string continues with build details after the first comma.
  if (const size_t comma = s.find(','); comma != std::string::npos) s.resize(comma);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace shardscope::backend
