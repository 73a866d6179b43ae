// Fault handling of the MPI communicators, one scenario per run (the world cannot be reused
// after a fault), judged by tests/backend_mpi/expect_fault.sh from the ranks' messages and
// the time they took:
//   mpi_fault_test stuck  rank 0 all-reduces alone while the others stay alive and idle: its
//                         watchdog fires after the timeout; every rank answers the roll call
//   mpi_fault_test dead   SHARDSCOPE_TEST_EXIT_AT=1:test/all_gather makes rank 1 exit just
//                         before the all-gather the others wait in: they name rank 1
// A rank prints "FAULT: <message>" and exits 3 when its collective failed, as `run` would.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "backend/comm/mpi_communicator.h"
#include "tests/backend_mpi/inline_device.h"

using namespace shardscope;
using namespace shardscope::backend;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mpi_fault_test stuck|dead TIMEOUT_S\n");
    return 2;
  }
  const std::string mode = argv[1];
  const auto timeout = std::chrono::seconds(std::atoi(argv[2]));
  auto factory = MakeMpiCommFactory(DetectLaunch(), MpiCommOptions{timeout});
  if (!factory.ok()) {
    std::fprintf(stderr, "FAULT: %s\n", factory.status().message().c_str());
    return 3;
  }
  std::unique_ptr<CommFactory> world = std::move(factory).value();
  InlineDevice device;
  ProcessGroup g;
  g.name = "fsdp_shard";
  for (int r = 0; r < world->world_size(); ++r) g.ranks.push_back(r);
  auto comms = world->MakeCommunicators({&g, 1}, device);
  if (!comms.ok()) {
    std::fprintf(stderr, "FAULT: %s\n", comms.status().message().c_str());
    return 3;
  }
  Communicator& comm = *comms.value()[0];
  std::vector<float> buf(8 * comm.size(), 1.0f);
  CollectiveCall call;
  call.dtype = DType::kFloat32;
  call.count = 8;
  call.input = buf.data();
  call.output = buf.data();
  Status status;
  if (mode == "stuck") {
    if (world->world_rank() != 0) {
      // Alive (the roll call is answered) but never joining the collective.
      std::this_thread::sleep_for(timeout + std::chrono::seconds(10));
      return 0;
    }
    call.type = OpType::kAllReduce;
    call.lane = Lane::kAllReduce;
    call.reduce = CollectiveReduce::kSum;
    call.op_id = "test/all_reduce";
    status = comm.AllReduce(call);
  } else {
    call.type = OpType::kAllGather;
    call.lane = Lane::kAllGather;
    call.op_id = "test/all_gather";
    status = comm.AllGather(call);
  }
  if (status.ok()) status = comm.Wait(timeout * 2);
  if (!status.ok()) {
    std::fprintf(stderr, "FAULT: %s\n", status.message().c_str());
    std::fflush(stderr);
    return 3;
  }
  std::fprintf(stderr, "rank %d: no fault\n", world->world_rank());
  return 0;
}
