#include "backend/comm/mpi_communicator.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/check/reduction_rule.h"
#include "backend/comm/mpi_groups.h"
#include "backend/comm/mpi_roll_call.h"
#include "backend/comm/mpi_world.h"
#include "backend/device/deterministic.h"

namespace shardscope::backend {
namespace {

using Clock = std::chrono::steady_clock;

std::string Seconds(std::chrono::nanoseconds ns) {
  return fmt::format("{:g} s", std::chrono::duration<double>(ns).count());
}

std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

// ----- SIGTERM: the launcher ends the survivors of a failed rank -----
// The message is formatted before any signal can arrive; the handler only writes it.
char g_term_message[256];
size_t g_term_length = 0;

void OnTerminate(int) {
  if (g_term_length > 0) (void)!write(STDERR_FILENO, g_term_message, g_term_length);
  _exit(3);
}

void InstallTerminateHandler(int world_rank) {
  const std::string text = fmt::format(
      "shardscope: error: rank {}: terminated by the launcher (SIGTERM) during the step: "
      "another rank failed or the job was cancelled (the launcher's message names the rank)\n",
      world_rank);
  g_term_length = std::min(text.size(), sizeof g_term_message);
  std::memcpy(g_term_message, text.data(), g_term_length);
  struct sigaction action {};
  action.sa_handler = OnTerminate;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
}

// The test-only faults of kTestExitEnv / kTestCorruptEnv: "RANK:OP_ID".
struct TestExit {
  int rank = -1;
  std::string op_id;
  bool Matches(int r, const std::string& id) const { return rank == r && op_id == id; }
};
TestExit ReadTestFault(const char* env) {
  TestExit t;
  const char* v = std::getenv(env);
  if (v == nullptr) return t;
  const std::string s(v);
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return t;
  t.rank = std::atoi(s.substr(0, colon).c_str());
  t.op_id = s.substr(colon + 1);
  return t;
}

// What the factory and every queued call share. Calls hold it (and their communicator's
// state) by shared_ptr: after a fault, `run` returns and destroys its communicators while
// calls of other lanes are still queued or polling, and those must find their state alive.
struct Shared {
  std::unique_ptr<MpiWorld> world_ptr;
  MpiCommOptions options_value;
  TestExit exit_at = ReadTestFault(kTestExitEnv);
  TestExit corrupt_at = ReadTestFault(kTestCorruptEnv);
  int world_rank() const { return world_ptr->rank(); }
  MpiWorld& world() { return *world_ptr; }
  const MpiCommOptions& options() const { return options_value; }
  const TestExit& test_exit() const { return exit_at; }
  const TestExit& test_corrupt() const { return corrupt_at; }
};

// One group's communicator state: the calls run here, on the lane threads.
class Channel : public std::enable_shared_from_this<Channel> {
 public:
  Channel(std::shared_ptr<Shared> shared, const ProcessGroup& group, MPI_Comm comm)
      : factory_(std::move(shared)), group_(group), comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
  }
  Status Enqueue(Device& device, const CollectiveCall& call);
  Status Wait(std::chrono::nanoseconds timeout);
  const ProcessGroup& group() const { return group_; }
  int rank() const { return rank_; }
  std::string failed_op_id() {
    std::lock_guard lock(fault_mu_);
    return failed_op_id_;
  }

 private:
  Status Run(const CollectiveCall& call);  // on the lane thread
  Status Issue(const CollectiveCall& call);
  Status RunReduction(const CollectiveCall& call);
  // Polls `req` until done; the watchdog's error after the timeout.
  Status Complete(MPI_Request& req, const CollectiveCall& call);
  Status Fault(const CollectiveCall& call, const std::string& what);

  std::shared_ptr<Shared> factory_;
  ProcessGroup group_;
  MPI_Comm comm_;
  int rank_ = 0;
  // The first failed call's op_id (Fault runs on a lane thread or the waiting one).
  std::mutex fault_mu_;
  std::string failed_op_id_;
  std::mutex mu_;
  std::condition_variable cv_;
  int pending_ = 0;
  Status first_error_;
  // Sends in flight (Issue posts them, Wait completes them): each from its own copy.
  struct InFlightSend {
    MPI_Request req = MPI_REQUEST_NULL;
    std::vector<char> data;
    CollectiveCall call;
  };
  std::vector<std::unique_ptr<InFlightSend>> sends_;  // under mu_
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(std::shared_ptr<Channel> channel, Device& device)
      : channel_(std::move(channel)), device_(device) {}

  const ProcessGroup& group() const override { return channel_->group(); }
  int rank() const override { return channel_->rank(); }

  Status AllGather(const CollectiveCall& call) override { return Enqueue(call); }
  Status ReduceScatter(const CollectiveCall& call) override { return Enqueue(call); }
  Status AllReduce(const CollectiveCall& call) override { return Enqueue(call); }
  Status AllToAll(const CollectiveCall& call) override { return Enqueue(call); }
  Status Send(const CollectiveCall& call) override { return Enqueue(call); }
  Status Recv(const CollectiveCall& call) override { return Enqueue(call); }
  Status Wait(std::chrono::nanoseconds timeout) override { return channel_->Wait(timeout); }
  std::string failed_op_id() const override { return channel_->failed_op_id(); }

 private:
  Status Enqueue(const CollectiveCall& call) { return channel_->Enqueue(device_, call); }
  std::shared_ptr<Channel> channel_;
  Device& device_;
};

class MpiFactory final : public CommFactory {
 public:
  MpiFactory(std::unique_ptr<MpiWorld> world, const MpiCommOptions& options)
      : shared_(std::make_shared<Shared>()) {
    shared_->world_ptr = std::move(world);
    shared_->options_value = options;
  }

  int world_rank() const override { return shared_->world_ptr->rank(); }
  int world_size() const override { return shared_->world_ptr->size(); }
  std::string name() const override { return "mpi"; }
  std::map<std::string, std::string> versions() const override { return {{"mpi", MpiVersion()}}; }
  void Abandon() override { shared_->world().MarkFaulted(); }

  Result<std::string> CheckSameInputs(const std::string& digest) override {
    return CompareInputDigests(digest, world_size(), [this](const void* data, int64_t bytes) {
      return shared_->world().AllGatherBytes(data, bytes);
    });
  }

  Result<std::vector<std::unique_ptr<Communicator>>> MakeCommunicators(
      std::span<const ProcessGroup> groups, Device& device) override {
    for (const ProcessGroup& g : groups) {
      if (!std::binary_search(g.ranks.begin(), g.ranks.end(), world_rank())) {
        return InvalidInput(fmt::format("group '{}' over ranks [{}] does not hold rank {}", g.name,
                                        fmt::join(g.ranks, ", "), world_rank()));
      }
    }
    SS_ASSIGN_OR_RETURN(std::vector<MPI_Comm> comms,
                        SplitGroups(groups, world_rank(), world_size()));
    std::vector<std::unique_ptr<Communicator>> out;
    for (size_t i = 0; i < groups.size(); ++i) {
      out.push_back(std::make_unique<MpiCommunicator>(
          std::make_shared<Channel>(shared_, groups[i], comms[i]), device));
    }
    return out;
  }

 private:
  std::shared_ptr<Shared> shared_;
};

Status Channel::Enqueue(Device& device, const CollectiveCall& call) {
  {
    std::lock_guard lock(mu_);
    ++pending_;
  }
  const Status issued = device.HostTask(call.lane, [self = shared_from_this(), this, call] {
    // After a fault of this rank the world is abandoned: later calls fail at once rather than
    // wait out another timeout each.
    Status s = factory_->world().faulted()
                   ? RuntimeError(fmt::format("rank {}: {} on group '{}' not run: an earlier "
                                              "collective of this rank failed",
                                              factory_->world_rank(), call.op_id, group_.name))
                   : Run(call);
    std::lock_guard lock(mu_);
    if (!s.ok() && first_error_.ok()) first_error_ = s;
    --pending_;
    cv_.notify_all();
    return s;
  });
  if (!issued.ok()) {
    std::lock_guard lock(mu_);
    --pending_;
  }
  return issued;
}

Status Channel::Wait(std::chrono::nanoseconds timeout) {
  std::unique_lock lock(mu_);
  // Each call has its own watchdog (Complete); this bound only covers calls still queued
  // behind other work of their lane.
  // The grace lets a call's own watchdog (which may have started later) report first, with
  // its roll call.
  const auto bound = timeout + std::chrono::seconds(5);
  if (!cv_.wait_for(lock, bound, [this] { return pending_ == 0; })) {
    return RuntimeError(
        fmt::format("rank {}: {} collective(s) on group '{}' still pending after {}",
                    factory_->world_rank(), pending_, group_.name, Seconds(bound)));
  }
  std::vector<std::unique_ptr<InFlightSend>> sends;
  sends.swap(sends_);
  Status status = first_error_;
  lock.unlock();
  // The buffered sends: delivered once the peers received them (each its own watchdog).
  for (auto& send : sends) {
    Status s = Complete(send->req, send->call);
    if (!s.ok() && status.ok()) status = s;
  }
  return status;
}

Status Channel::Fault(const CollectiveCall& call, const std::string& what) {
  // Who still answers tells a dead (or wedged) peer from a collective the ranks disagree on.
  // A live rank answers within milliseconds (its responder thread polls every 2 ms); the
  // grace covers ranks that share oversubscribed cores.
  {
    std::lock_guard lock(fault_mu_);
    if (failed_op_id_.empty()) failed_op_id_ = call.op_id;
  }
  const std::vector<int> silent =
      factory_->world().roll_call().Unresponsive(group_.ranks, std::chrono::milliseconds(2000));
  factory_->world().MarkFaulted();
  std::string who;
  if (silent.empty()) {
    who =
        "every rank of the group answers, so the collective itself is stuck (a rank issued "
        "a different collective or waits on something else)";
  } else if (silent.size() == 1) {
    who = fmt::format("rank {} does not answer: it died or hangs", silent[0]);
  } else {
    who = fmt::format("ranks {} do not answer: they died or hang", fmt::join(silent, ", "));
  }
  return RuntimeError(fmt::format("rank {}: {} on group '{}' (ranks [{}]) {}: {}",
                                  factory_->world_rank(), call.op_id, group_.name,
                                  fmt::join(group_.ranks, ", "), what, who));
}

Status Channel::Complete(MPI_Request& req, const CollectiveCall& call) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + factory_->options().timeout;
  // Spin briefly (most collectives of a small step finish in microseconds), then back off
  // to sleeps: ranks share cores when oversubscribed, and a spinning lane starves its peer.
  // Sleeps stop growing at 50 µs: MPI's non-blocking collectives progress only inside
  // MPI_Test, so each nap delays every round of the algorithm on every peer. At 500 µs the
  // 4-rank CPU run of docs/calibration.md measured its step 18% longer (cal_a: 49.1 against
  // 41.7 ms, medians of six interleaved runs) with the same compute.
  auto nap = std::chrono::microseconds(0);
  while (true) {
    int done = 0;
    const int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return Fault(call, "failed in MPI (" + MpiErrorText(rc) + ")");
    if (done) return Status::Ok();
    if (factory_->world().faulted()) {
      // Another lane's collective failed and reported it: stop waiting on this one.
      return RuntimeError(
          fmt::format("rank {}: {} on group '{}' abandoned: another collective "
                      "of this rank failed",
                      factory_->world_rank(), call.op_id, group_.name));
    }
    if (Clock::now() > deadline) {
      return Fault(call, fmt::format("did not complete within --timeout {}",
                                     Seconds(factory_->options().timeout)));
    }
    if (nap.count() == 0) {
      std::this_thread::yield();
      nap = std::chrono::microseconds(1);
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(50));
    }
  }
}

// Element counts of MPI calls are ints: a call beyond that is refused, not truncated.
Result<int> MpiCount(int64_t n, const CollectiveCall& call) {
  if (n > INT_MAX) {
    return RuntimeError(fmt::format(
        "{}: {} elements in one MPI call exceed MPI's int count (CPU ranks run smaller models)",
        call.op_id, n));
  }
  return static_cast<int>(n);
}

Status Channel::Run(const CollectiveCall& call) {
  SS_RETURN_IF_ERROR(Issue(call));
  if (factory_->test_corrupt().Matches(factory_->world_rank(), call.op_id) &&
      call.output != nullptr && call.count > 0) {
    // The last byte of the output (another rank's slot of an all-gather): a wrong value that
    // the collective's semantics would never produce.
    const int64_t n = call.type == OpType::kAllGather ? group_.size() : 1;
    static_cast<unsigned char*>(call.output)[n * call.count * DTypeBytes(call.dtype) - 1] ^= 0x40;
  }
  return Status::Ok();
}

Status Channel::Issue(const CollectiveCall& call) {
  const TestExit& test_exit = factory_->test_exit();
  if (test_exit.Matches(factory_->world_rank(), call.op_id)) {
    const std::string text = fmt::format("shardscope: test: rank {} exits before {} ({})\n",
                                         test_exit.rank, call.op_id, kTestExitEnv);
    (void)!write(STDERR_FILENO, text.data(), text.size());
    _exit(kTestExitStatus);
  }
  const int64_t esize = DTypeBytes(call.dtype);
  const int n = group_.size();
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  switch (call.type) {
    case OpType::kAllGather: {
      SS_RETURN_IF_ERROR(MpiCount(call.count * esize * n, call).status());
      const int bytes = static_cast<int>(call.count * esize);  // per rank
      char* out = static_cast<char*>(call.output);
      const char* own = out + static_cast<int64_t>(rank_) * bytes;
      const bool in_place = call.input == nullptr || call.input == own;
      rc = MPI_Iallgather(in_place ? MPI_IN_PLACE : call.input, bytes, MPI_BYTE, out, bytes,
                          MPI_BYTE, comm_, &req);
      break;
    }
    case OpType::kReduceScatter:
    case OpType::kAllReduce:
      return RunReduction(call);
    case OpType::kAllToAll: {
      SS_RETURN_IF_ERROR(MpiCount(call.count * esize, call).status());
      // Even split in elements: count / n to each peer, the remainder to the first peers.
      std::vector<int> counts(n), displs(n);
      int offset = 0;
      for (int j = 0; j < n; ++j) {
        const int64_t elems = call.count / n + (j < call.count % n ? 1 : 0);
        counts[j] = static_cast<int>(elems * esize);
        displs[j] = offset;
        offset += counts[j];
      }
      rc = MPI_Ialltoallv(call.input, counts.data(), displs.data(), MPI_BYTE, call.output,
                          counts.data(), displs.data(), MPI_BYTE, comm_, &req);
      if (rc == MPI_SUCCESS) return Complete(req, call);  // counts live until completion
      break;
    }
    case OpType::kSend: {
      SS_ASSIGN_OR_RETURN(const int bytes, MpiCount(call.count * esize, call));
      // A send is buffered (schedule.h: its receive is a join point on it, rule 3: p2p does
      // not hold the communicator): it leaves from a copy and the lane goes on without waiting
      // for the peer's receive. Otherwise two stages sending to each other (1F1B: stage 0's
      // next activation, stage 1's gradient) would each wait for the other's receive.
      auto send = std::make_unique<InFlightSend>();
      const char* in = static_cast<const char*>(call.input);
      send->data.assign(in, in + bytes);
      send->call = call;
      rc = MPI_Isend(send->data.data(), bytes, MPI_BYTE, call.peer, 0, comm_, &send->req);
      if (rc != MPI_SUCCESS) break;
      std::lock_guard lock(mu_);
      sends_.push_back(std::move(send));
      return Status::Ok();
    }
    case OpType::kRecv: {
      SS_ASSIGN_OR_RETURN(const int bytes, MpiCount(call.count * esize, call));
      rc = MPI_Irecv(call.output, bytes, MPI_BYTE, call.peer, 0, comm_, &req);
      break;
    }
    default:
      return InvalidInput(
          fmt::format("{}: op type {} is no collective", call.op_id, OpTypeName(call.type)));
  }
  if (rc != MPI_SUCCESS) return Fault(call, "could not be issued (" + MpiErrorText(rc) + ")");
  return Complete(req, call);
}

// Reads element i of a float32 / bfloat16 buffer as float.
float LoadAs(DType dtype, const void* data, int64_t i) {
  if (dtype == DType::kBFloat16) return Bf16BitsToFloat(static_cast<const uint16_t*>(data)[i]);
  return static_cast<const float*>(data)[i];
}
void StoreAs(DType dtype, void* data, int64_t i, float v) {
  if (dtype == DType::kBFloat16) {
    static_cast<uint16_t*>(data)[i] = FloatToBf16Bits(v);
  } else {
    static_cast<float*>(data)[i] = v;
  }
}

Status Channel::RunReduction(const CollectiveCall& call) {
  SS_RETURN_IF_ERROR(CheckReducible(call.dtype, call.reduce).WithContext(call.op_id));
  const int n = group_.size();
  const ReductionRule rule(call.dtype, call.reduce, call.pre_scale, call.post_scale, n);
  const bool scatter = call.type == OpType::kReduceScatter;
  const int64_t in_count = scatter ? call.count * n : call.count;
  SS_ASSIGN_OR_RETURN(const int count, MpiCount(call.count, call));
  SS_ASSIGN_OR_RETURN(const int in_elems, MpiCount(in_count, call));
  std::vector<double> in(static_cast<size_t>(in_elems));
  for (int64_t i = 0; i < in_count; ++i) in[i] = rule.Input(LoadAs(call.dtype, call.input, i));
  std::vector<double> out(static_cast<size_t>(count));
  MPI_Request req = MPI_REQUEST_NULL;
  const int rc =
      scatter ? MPI_Ireduce_scatter_block(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, comm_,
                                          &req)
              : MPI_Iallreduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, comm_, &req);
  if (rc != MPI_SUCCESS) return Fault(call, "could not be issued (" + MpiErrorText(rc) + ")");
  SS_RETURN_IF_ERROR(Complete(req, call));
  for (int64_t i = 0; i < call.count; ++i) {
    StoreAs(call.dtype, call.output, i, rule.Output(out[i]));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<CommFactory>> MakeMpiCommFactory(const LaunchInfo& launch,
                                                        const MpiCommOptions& options) {
  if (!launch.launched()) {
    return InvalidInput("MPI communicators need a launcher (mpirun -np N or srun)");
  }
  SS_ASSIGN_OR_RETURN(std::unique_ptr<MpiWorld> world, MpiWorld::Init(launch));
  world->set_shutdown_timeout(options.timeout);
  InstallTerminateHandler(world->rank());
  return std::unique_ptr<CommFactory>(std::make_unique<MpiFactory>(std::move(world), options));
}

}  // namespace shardscope::backend
