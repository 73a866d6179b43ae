// Communicators: one per process group of the schedule (schedule.h ProcessGroup), issuing a
// collective or a point-to-point transfer on a lane of the device, without blocking the
// issuing thread. Implementations: MPI on CPU ranks (backend/comm/mpi*), NCCL on GPUs
// (backend/cuda/), and the emulated one of `--emulate-world` (backend/comm/emulated_comm.h).
//
// Contents:
//   CollectiveCall   what one ScheduleOp's collective runs (from its CollectiveSpec) + buffers
//   Communicator     AllGather / ReduceScatter / AllReduce / AllToAll / Send / Recv / Wait,
//                    Begin/EndP2PGroup (a send and a receive that progress together)
//   IssueCollective  dispatches a call on its type
//   CollectiveCallOf builds the call of a schedule op (buffers resolved by the caller)
//   CommFactory      makes the communicators of a rank's groups (collective over the world)
//   CompareInputDigests  CommFactory::CheckSameInputs over a transport's set-up all-gather
//
// Semantics every implementation obeys (the exactness `run --check` verifies):
//   - counts are NCCL's (CollectiveSpec): all-gather `count` per rank, the output holds
//     size·count, rank i's contribution at offset i·count; reduce-scatter output `count`, the
//     input size·count, rank i receiving the reduction of every rank's block i; all-reduce
//     `count` in and out; send / recv `count` elements to / from `peer`.
//   - reductions: out = post_scale · R_j(pre_scale · x_j), R the sum over the group's ranks j
//     (kAvg: the sum divided by the group size), computed in `dtype`; scaling factors of 1 are
//     no operation (bit-exact sums).
//   - in place: an all-gather's input may be its output's own slot (output + rank·count);
//     an all-reduce's input may equal its output.
//   - a call is enqueued on `lane` after the work already there; the lane is busy until the
//     collective completes here. A communicator runs one collective at a time, in issue
//     order (the executor orders the calls so; NCCL chains them itself).
//   - every rank of the group issues the group's collectives in the same order with the same
//     dtype and count (schedule.h rule 5).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/device/device.h"
#include "core/schedule/schedule.h"
#include "core/util/status.h"

namespace shardscope::backend {

struct CollectiveCall {
  OpType type = OpType::kAllGather;
  Lane lane = Lane::kAllGather;
  DType dtype = DType::kUInt8;
  int64_t count = 0;
  CollectiveReduce reduce = CollectiveReduce::kNone;
  double pre_scale = 1.0;
  double post_scale = 1.0;
  const void* input = nullptr;
  void* output = nullptr;
  int peer = -1;      // send / recv: the peer's position in the group
  int64_t bytes = 0;  // nccl-tests size (ScheduleOp::bytes): what the emulated one prices
  std::string op_id;  // named by errors and by the watchdog
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual const ProcessGroup& group() const = 0;
  virtual int rank() const = 0;  // this process's position in group().ranks
  int size() const { return group().size(); }

  virtual Status AllGather(const CollectiveCall& call) = 0;
  virtual Status ReduceScatter(const CollectiveCall& call) = 0;
  virtual Status AllReduce(const CollectiveCall& call) = 0;
  // Even split: `count` elements in all, count / size to and from each peer.
  virtual Status AllToAll(const CollectiveCall& call) = 0;
  virtual Status Send(const CollectiveCall& call) = 0;
  virtual Status Recv(const CollectiveCall& call) = 0;

  // Brackets point-to-point calls that must progress together (a send and the receive after
  // it, possibly on another communicator: 1F1B's send-forward / receive-backward): between
  // the two, calls are only collected, and every one is enqueued at the end. NCCL needs it
  // (ncclGroupStart / ncclGroupEnd: without it two ranks each sending first wait on each
  // other's receive); transports whose sends do not wait for the receive (MPI's buffered
  // sends, the emulated one) need nothing. The bracket is the calling thread's: it may begin
  // on one communicator and end on another.
  virtual Status BeginP2PGroup() { return Status::Ok(); }
  virtual Status EndP2PGroup() { return Status::Ok(); }

  // Blocks until every call issued so far completed here. RuntimeError naming the op_id and
  // the group when one fails (a peer died, an NCCL async error) or is still running after
  // `timeout` (the watchdog: never a hang).
  virtual Status Wait(std::chrono::nanoseconds timeout) = 0;

  // The op_id of the first call that failed or timed out here; empty while none has. The
  // executor cuts the measured step there: what comes after that op did not run as scheduled,
  // though the lanes' queued work may have gone on.
  virtual std::string failed_op_id() const { return {}; }
};

// Calls the method of call.type (a collective or p2p OpType); InvalidInput otherwise.
Status IssueCollective(Communicator& comm, const CollectiveCall& call);

// The call of collective op `op` on `lane` with its CollectiveSpec; the caller fills input
// and output (and the peer of a send / receive).
CollectiveCall CollectiveCallOf(const Schedule& schedule, const ScheduleOp& op);

// Every rank's `bytes` at `data` (the same count on all), concatenated in rank order: a
// transport's set-up all-gather (MPI's, or the NCCL bootstrap's).
using AllGatherFn = std::function<Result<std::vector<char>>(const void* data, int64_t bytes)>;

// CommFactory::CheckSameInputs for a world of `world_size` ranks: each rank's hash of `digest`,
// gathered by `all_gather` and compared with rank 0's, and with it rank 0's new run id (NewRunId),
// which it returns on every rank. One definition for every transport that has a world (MPI,
// NCCL over its bootstrap).
Result<std::string> CompareInputDigests(const std::string& digest, int world_size,
                                        const AllGatherFn& all_gather);

// An id for one run, unlikely to repeat ("run-" and 16 hex digits from the clock and the OS's
// entropy): measured traces carry it, so `calibrate` knows which rank files are one run's.
std::string NewRunId();

class CommFactory {
 public:
  virtual ~CommFactory() = default;

  virtual int world_rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string name() const = 0;  // "mpi", "nccl", "emulated"
  // Versions for trace metadata ({"mpi": "Open MPI v4.1.4"}, {"nccl": "2.28.3"}); may be empty.
  virtual std::map<std::string, std::string> versions() const = 0;

  // Whether every rank of the world was started with the same inputs: `digest` (the resolved
  // scenario and the run's flags) is compared across the ranks in a set-up collective that every
  // rank calls once, before MakeCommunicators (CompareInputDigests over the transport's
  // out-of-band all-gather). InvalidInput naming the first rank that differs from rank 0: ranks
  // that build different schedules fail later in ways that blame the collectives. Returns the
  // run's id, rank 0's on every rank (NewRunId). Transports without a world of their own to
  // ask (emulation) compare nothing and return an id of their own.
  virtual Result<std::string> CheckSameInputs(const std::string& digest) {
    (void)digest;
    return NewRunId();
  }

  // One communicator per group, in the order given (a rank's Schedule::groups, each holding
  // this rank). Real transports make them collectively: every rank of the world calls this
  // once with its own schedule's groups, in the schedule's order.
  virtual Result<std::vector<std::unique_ptr<Communicator>>> MakeCommunicators(
      std::span<const ProcessGroup> groups, Device& device) = 0;

  // This rank's run failed on an error of its own (out of memory, a kernel), which the others
  // do not share: it leaves the world without the closing barrier, so that it exits (and says
  // why) at once and the launcher ends the others. Waiting there, it sat silent for the whole
  // --timeout while the others blamed a stuck collective. Transports without a world: nothing.
  virtual void Abandon() {}
};

}  // namespace shardscope::backend
