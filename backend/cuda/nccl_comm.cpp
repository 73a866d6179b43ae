#include "backend/cuda/nccl_comm.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <set>
#include <thread>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_device.h"
#include "backend/cuda/kernels/kernels.h"

namespace shardscope::backend::cuda {
namespace {

Status NcclStatus(ncclResult_t r, const std::string& what, ncclComm_t comm = nullptr) {
  if (r == ncclSuccess) return Status::Ok();
  const char* last = comm ? ncclGetLastError(comm) : nullptr;
  return RuntimeError(fmt::format("{}: {}{}", what, ncclGetErrorString(r),
                                  last && *last ? fmt::format(" ({})", last) : ""));
}

Result<ncclDataType_t> NcclTypeOf(DType d, bool reduction) {
  switch (d) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kBFloat16:
      return ncclBfloat16;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kInt64:
      return ncclInt64;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt8:
      return ncclInt8;
    default:
      // Raw bytes (uint8 flat buffers over mixed dtypes, bool, fp8) move as bytes; a sum of
      // them means nothing.
      if (reduction && d != DType::kUInt8) {
        return InvalidInput(fmt::format("NCCL reduction over {}", DTypeName(d)));
      }
      return ncclUint8;
  }
}

// The premul-sum scalar in the collective's own type, as NCCL reads it (host immediate).
Result<std::vector<unsigned char>> ScalarBytes(double v, DType d) {
  std::vector<unsigned char> out;
  auto put = [&out](const auto& x) {
    out.resize(sizeof(x));
    std::memcpy(out.data(), &x, sizeof(x));
  };
  switch (d) {
    case DType::kFloat32:
      put(static_cast<float>(v));
      break;
    case DType::kFloat64:
      put(v);
      break;
    case DType::kBFloat16:
      put(__float2bfloat16_rn(static_cast<float>(v)));
      break;
    case DType::kFloat16:
      put(__float2half_rn(static_cast<float>(v)));
      break;
    default:
      return InvalidInput(fmt::format("pre-scaling of a {} reduction", DTypeName(d)));
  }
  return out;
}

// The calling thread's open ncclGroupStart bracket (NCCL's group state is per thread too):
// inside it ncclSend / ncclRecv return before their work is on the stream, so what must
// follow that work on the stream (completion events, scratch frees) waits for the group's end.
struct P2PGroup {
  bool open = false;
  std::vector<std::function<Status()>> after_end;
};
thread_local P2PGroup t_p2p_group;

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ProcessGroup group, int rank, ncclComm_t comm, CudaDevice& device,
                   const NcclBootstrap& boot)
      : group_(std::move(group)),
        rank_(rank),
        comm_(comm),
        device_(device),
        mark_faulted_(boot.mark_faulted),
        unresponsive_(boot.unresponsive) {}

  ~NcclCommunicator() override {
    (void)device_.Bind();
    for (Pending& p : pending_) cudaEventDestroy(p.done);
    if (comm_ == nullptr) return;
    if (aborted_) return;  // ncclCommAbort already freed it
    ncclCommDestroy(comm_);
  }

  const ProcessGroup& group() const override { return group_; }
  int rank() const override { return rank_; }

  Status AllGather(const CollectiveCall& c) override {
    SS_RETURN_IF_ERROR(Usable(c));
    SS_RETURN_IF_ERROR(Need(c, c.output != nullptr, "an output buffer"));
    SS_ASSIGN_OR_RETURN(ncclDataType_t type, NcclTypeOf(c.dtype, false));
    // In place when the input is this rank's slot of the output (FSDP2's copy-in).
    const void* send =
        c.input ? c.input
                : static_cast<const char*>(c.output) + rank_ * c.count * DTypeBytes(c.dtype);
    SS_RETURN_IF_ERROR(Nccl(
        c, ncclAllGather(send, c.output, static_cast<size_t>(c.count), type, comm_, Stream(c))));
    return Finish(c, {});
  }

  Status ReduceScatter(const CollectiveCall& c) override {
    SS_RETURN_IF_ERROR(Usable(c));
    SS_RETURN_IF_ERROR(Need(c, c.input != nullptr && c.output != nullptr, "input and output"));
    SS_ASSIGN_OR_RETURN(ncclDataType_t type, NcclTypeOf(c.dtype, true));
    SS_ASSIGN_OR_RETURN(Op op, MakeOp(c));
    const ncclResult_t r = ncclReduceScatter(c.input, c.output, static_cast<size_t>(c.count), type,
                                             op.op, comm_, Stream(c));
    op.Release(comm_);
    SS_RETURN_IF_ERROR(Nccl(c, r));
    SS_RETURN_IF_ERROR(PostScale(c));
    return Finish(c, {});
  }

  Status AllReduce(const CollectiveCall& c) override {
    SS_RETURN_IF_ERROR(Usable(c));
    SS_RETURN_IF_ERROR(Need(c, c.input != nullptr && c.output != nullptr, "input and output"));
    SS_ASSIGN_OR_RETURN(ncclDataType_t type, NcclTypeOf(c.dtype, true));
    SS_ASSIGN_OR_RETURN(Op op, MakeOp(c));
    const ncclResult_t r = ncclAllReduce(c.input, c.output, static_cast<size_t>(c.count), type,
                                         op.op, comm_, Stream(c));
    op.Release(comm_);
    SS_RETURN_IF_ERROR(Nccl(c, r));
    SS_RETURN_IF_ERROR(PostScale(c));
    return Finish(c, {});
  }

  Status AllToAll(const CollectiveCall& c) override {
    SS_RETURN_IF_ERROR(Usable(c));
    SS_ASSIGN_OR_RETURN(ncclDataType_t type, NcclTypeOf(c.dtype, false));
    const int64_t per_peer = c.count / std::max(1, size());
    if (per_peer == 0) return Finish(c, {});
    std::vector<DeviceBuffer> scratch;
    SS_ASSIGN_OR_RETURN(const void* in, Scratch(c, c.input, per_peer * size(), &scratch));
    SS_ASSIGN_OR_RETURN(void* out, ScratchOut(c, c.output, per_peer * size(), &scratch));
    SS_RETURN_IF_ERROR(
        Nccl(c, ncclAlltoAll(in, out, static_cast<size_t>(per_peer), type, comm_, Stream(c))));
    return Finish(c, std::move(scratch));
  }

  Status Send(const CollectiveCall& c) override {
    SS_RETURN_IF_ERROR(Usable(c));
    SS_RETURN_IF_ERROR(Need(c, c.peer >= 0 && c.peer < size(), "a peer in the group"));
    if (c.count == 0) return Finish(c, {});
    SS_ASSIGN_OR_RETURN(ncclDataType_t type, NcclTypeOf(c.dtype, false));
    std::vector<DeviceBuffer> scratch;
    SS_ASSIGN_OR_RETURN(const void* in, Scratch(c, c.input, c.count, &scratch));
    SS_RETURN_IF_ERROR(
        Nccl(c, ncclSend(in, static_cast<size_t>(c.count), type, c.peer, comm_, Stream(c))));
    return Finish(c, std::move(scratch));
  }

  Status Recv(const CollectiveCall& c) override {
    SS_RETURN_IF_ERROR(Usable(c));
    SS_RETURN_IF_ERROR(Need(c, c.peer >= 0 && c.peer < size(), "a peer in the group"));
    if (c.count == 0) return Finish(c, {});
    SS_ASSIGN_OR_RETURN(ncclDataType_t type, NcclTypeOf(c.dtype, false));
    std::vector<DeviceBuffer> scratch;
    SS_ASSIGN_OR_RETURN(void* out, ScratchOut(c, c.output, c.count, &scratch));
    SS_RETURN_IF_ERROR(
        Nccl(c, ncclRecv(out, static_cast<size_t>(c.count), type, c.peer, comm_, Stream(c))));
    return Finish(c, std::move(scratch));
  }

  Status BeginP2PGroup() override {
    if (t_p2p_group.open) return InvalidInput("NCCL: a point-to-point group is already open");
    SS_RETURN_IF_ERROR(NcclStatus(ncclGroupStart(), "ncclGroupStart"));
    t_p2p_group.open = true;
    return Status::Ok();
  }

  Status EndP2PGroup() override {
    if (!t_p2p_group.open) return InvalidInput("NCCL: no point-to-point group is open");
    t_p2p_group.open = false;
    std::vector<std::function<Status()>> after;
    after.swap(t_p2p_group.after_end);
    // The group's sends and receives are enqueued here, all at once: none waits on another.
    SS_RETURN_IF_ERROR(NcclStatus(ncclGroupEnd(), "ncclGroupEnd", comm_));
    for (auto& f : after) SS_RETURN_IF_ERROR(f());
    return Status::Ok();
  }

  // Faults are raised on the thread that issues and waits (the executor's).
  std::string failed_op_id() const override { return failed_op_id_; }

  Status Wait(std::chrono::nanoseconds timeout) override {
    SS_RETURN_IF_ERROR(device_.Bind());
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      const cudaError_t done = cudaEventQuery(p.done);
      if (done == cudaSuccess) {
        cudaEventDestroy(p.done);
        pending_.erase(pending_.begin());
        continue;
      }
      if (done != cudaErrorNotReady) {
        return Fault(p.op_id, CudaStatus(done, "its CUDA work").message());
      }
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        return Fault(p.op_id, fmt::format("NCCL error {} ({})", ncclGetErrorString(async),
                                          ncclGetLastError(comm_)));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Fault(p.op_id,
                     fmt::format("still running after {:.3f} s (--timeout): a peer of the group "
                                 "died, hangs or never issued it",
                                 std::chrono::duration<double>(timeout).count()));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return Status::Ok();
  }

 private:
  struct Pending {
    std::string op_id;
    cudaEvent_t done = nullptr;
  };
  // A reduction op: a built-in one, or a premul-sum made for this call and released after.
  struct Op {
    ncclRedOp_t op = ncclSum;
    bool created = false;
    void Release(ncclComm_t comm) {
      if (created) ncclRedOpDestroy(op, comm);  // legal once the call using it was enqueued
      created = false;
    }
  };

  cudaStream_t Stream(const CollectiveCall& c) const { return device_.stream(c.lane); }

  Status Usable(const CollectiveCall& c) const {
    if (aborted_) {
      return RuntimeError(
          fmt::format("{}: the NCCL communicator of group {} was aborted after "
                      "an earlier fault",
                      c.op_id, group_.name));
    }
    return device_.Bind();
  }

  Status Need(const CollectiveCall& c, bool ok, const char* what) const {
    if (ok) return Status::Ok();
    return InvalidInput(
        fmt::format("{} (group {}): {} needs {}", c.op_id, group_.name, OpTypeName(c.type), what));
  }

  Status Nccl(const CollectiveCall& c, ncclResult_t r) {
    if (r == ncclSuccess) return Status::Ok();
    return Fault(c.op_id, fmt::format("{} failed: {} ({})", OpTypeName(c.type),
                                      ncclGetErrorString(r), ncclGetLastError(comm_)));
  }

  Result<Op> MakeOp(const CollectiveCall& c) {
    Op op;
    if (c.reduce == CollectiveReduce::kAvg) {
      if (c.pre_scale != 1.0) {
        return InvalidInput(
            fmt::format("{}: pre-scaling of an average (a sum with a factor is "
                        "the schedule's way to scale before averaging)",
                        c.op_id));
      }
      op.op = ncclAvg;
      return op;
    }
    if (c.pre_scale == 1.0) return op;
    SS_ASSIGN_OR_RETURN(ncclDataType_t type, NcclTypeOf(c.dtype, true));
    SS_ASSIGN_OR_RETURN(std::vector<unsigned char> scalar, ScalarBytes(c.pre_scale, c.dtype));
    SS_RETURN_IF_ERROR(NcclStatus(
        ncclRedOpCreatePreMulSum(&op.op, scalar.data(), type, ncclScalarHostImmediate, comm_),
        c.op_id + ": ncclRedOpCreatePreMulSum", comm_));
    op.created = true;
    return op;
  }

  Status PostScale(const CollectiveCall& c) {
    if (c.post_scale == 1.0) return Status::Ok();
    return cuda::Cast(
        CastArgs{c.count, c.dtype, c.dtype, c.output, c.output, static_cast<float>(c.post_scale)},
        Stream(c));
  }

  // The call's buffer, or scratch of `elements` from the device when the schedule tracks no
  // buffer for this traffic (activations of TP / EP / pipeline collectives).
  Result<const void*> Scratch(const CollectiveCall& c, const void* given, int64_t elements,
                              std::vector<DeviceBuffer>* scratch) {
    if (given != nullptr) return given;
    SS_ASSIGN_OR_RETURN(DeviceBuffer b, device_.Allocate(elements * DTypeBytes(c.dtype),
                                                         MemCategory::kCommBuffers, c.lane));
    scratch->push_back(b);
    return static_cast<const void*>(b.data);
  }
  Result<void*> ScratchOut(const CollectiveCall& c, void* given, int64_t elements,
                           std::vector<DeviceBuffer>* scratch) {
    SS_ASSIGN_OR_RETURN(const void* p, Scratch(c, given, elements, scratch));
    return const_cast<void*>(p);
  }

  // Records the call's completion for Wait; scratch returns to the cache after it. Inside a
  // point-to-point group, once the group's end has enqueued the call.
  Status Finish(const CollectiveCall& c, std::vector<DeviceBuffer> scratch) {
    if (t_p2p_group.open) {
      t_p2p_group.after_end.push_back([this, c, scratch = std::move(scratch)]() mutable {
        return Enqueued(c, std::move(scratch));
      });
      return Status::Ok();
    }
    return Enqueued(c, std::move(scratch));
  }
  Status Enqueued(const CollectiveCall& c, std::vector<DeviceBuffer> scratch) {
    Pending p{c.op_id, nullptr};
    SS_RETURN_IF_ERROR(
        CudaStatus(cudaEventCreateWithFlags(&p.done, cudaEventDisableTiming), c.op_id));
    SS_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(p.done, Stream(c)), c.op_id));
    pending_.push_back(std::move(p));
    if (!scratch.empty()) {
      SS_ASSIGN_OR_RETURN(std::shared_ptr<DeviceEvent> done, device_.Record(c.lane));
      for (const DeviceBuffer& b : scratch) device_.Free(b, done);
    }
    return Status::Ok();
  }

  // Aborts the communicator (its kernels end, the device can drain) and names what failed.
  Status Fault(const std::string& op_id, const std::string& why) {
    if (failed_op_id_.empty()) failed_op_id_ = op_id;
    if (!aborted_) {
      ncclCommAbort(comm_);
      aborted_ = true;
      if (mark_faulted_) mark_faulted_();
    }
    return RuntimeError(
        fmt::format("collective {} on group {} (ranks {}) failed on rank {} of "
                    "the group: {}",
                    op_id, group_.name, group_.ranks, rank_, why));
  }

  ProcessGroup group_;
  int rank_;
  std::string failed_op_id_;  // the first faulted call's
  ncclComm_t comm_;
  CudaDevice& device_;
  std::function<void()> mark_faulted_;
  std::function<std::vector<int>(const std::vector<int>&)> unresponsive_;
  bool aborted_ = false;
  std::vector<Pending> pending_;
};

// The groups of every rank, gathered: [n, (size, ranks...) × n] per rank, padded to the
// largest rank's length.
Result<std::vector<std::vector<int>>> GatherAllSets(const NcclBootstrap& boot,
                                                    std::span<const ProcessGroup> groups) {
  std::vector<int32_t> mine{static_cast<int32_t>(groups.size())};
  for (const ProcessGroup& g : groups) {
    mine.push_back(static_cast<int32_t>(g.ranks.size()));
    mine.insert(mine.end(), g.ranks.begin(), g.ranks.end());
  }
  const int64_t my_len = static_cast<int64_t>(mine.size());
  SS_ASSIGN_OR_RETURN(std::vector<char> lens, boot.all_gather(&my_len, sizeof(my_len)));
  int64_t longest = 0;
  for (int r = 0; r < boot.size; ++r) {
    int64_t len = 0;
    std::memcpy(&len, lens.data() + r * sizeof(int64_t), sizeof(len));
    longest = std::max(longest, len);
  }
  mine.resize(static_cast<size_t>(longest), 0);
  SS_ASSIGN_OR_RETURN(
      std::vector<char> all,
      boot.all_gather(mine.data(), longest * static_cast<int64_t>(sizeof(int32_t))));
  std::vector<std::vector<int>> sets;
  for (int r = 0; r < boot.size; ++r) {
    const int32_t* p = reinterpret_cast<const int32_t*>(all.data()) + r * longest;
    const int32_t* end = p + longest;
    int32_t n = *p++;
    for (int32_t g = 0; g < n; ++g) {
      if (p >= end) return RuntimeError(fmt::format("rank {} sent a malformed group list", r));
      const int32_t size = *p++;
      if (size < 0 || p + size > end) {
        return RuntimeError(fmt::format("rank {} sent a malformed group list", r));
      }
      sets.emplace_back(p, p + size);
      p += size;
    }
  }
  return sets;
}

class NcclCommFactory final : public CommFactory {
 public:
  NcclCommFactory(NcclBootstrap boot, CudaDevice& device, ncclComm_t world)
      : boot_(std::move(boot)), device_(device), world_(world) {}
  ~NcclCommFactory() override {
    if (world_) ncclCommDestroy(world_);
  }

  int world_rank() const override { return boot_.rank; }
  int world_size() const override { return boot_.size; }
  std::string name() const override { return "nccl"; }
  void Abandon() override {
    if (boot_.mark_faulted) boot_.mark_faulted();
  }
  std::map<std::string, std::string> versions() const override {
    std::map<std::string, std::string> v = boot_.versions;
    int code = 0;
    if (ncclGetVersion(&code) == ncclSuccess) {
      v["nccl"] = fmt::format("{}.{}.{}", code / 10000, (code / 100) % 100, code % 100);
    }
    return v;
  }

  // Over the bootstrap (MPI in `run`), before any NCCL communicator is split off the world.
  Result<std::string> CheckSameInputs(const std::string& digest) override {
    return CompareInputDigests(digest, boot_.size, boot_.all_gather);
  }

  Result<std::vector<std::unique_ptr<Communicator>>> MakeCommunicators(
      std::span<const ProcessGroup> groups, Device& device) override {
    if (&device != &device_) {
      return InvalidInput("NCCL communicators must run on the device the factory was made for");
    }
    for (const ProcessGroup& g : groups) {
      if (std::find(g.ranks.begin(), g.ranks.end(), boot_.rank) == g.ranks.end()) {
        return InvalidInput(fmt::format("group {} does not hold rank {}", g.name, boot_.rank));
      }
      if (!std::is_sorted(g.ranks.begin(), g.ranks.end())) {
        return InvalidInput(fmt::format("group {}: ranks must be ascending", g.name));
      }
    }
    SS_RETURN_IF_ERROR(device_.Bind());
    SS_ASSIGN_OR_RETURN(std::vector<std::vector<int>> sets, GatherAllSets(boot_, groups));
    const auto rounds = PlanSplitRounds(std::move(sets));
    std::map<std::vector<int>, ncclComm_t> made;  // this rank's sets → their communicators
    for (const auto& round : rounds) {
      int color = NCCL_SPLIT_NOCOLOR;
      for (size_t i = 0; i < round.size(); ++i) {
        if (std::binary_search(round[i].begin(), round[i].end(), boot_.rank)) {
          color = static_cast<int>(i);
        }
      }
      ncclComm_t comm = nullptr;
      // key = world rank: group ranks keep ascending world order, so a rank's position in
      // ProcessGroup::ranks is its rank in the new communicator.
      SS_RETURN_IF_ERROR(NcclStatus(ncclCommSplit(world_, color, boot_.rank, &comm, nullptr),
                                    "ncclCommSplit", world_));
      if (color != NCCL_SPLIT_NOCOLOR) made[round[color]] = comm;
    }
    std::vector<std::unique_ptr<Communicator>> out;
    std::map<std::vector<int>, int> uses;
    for (const ProcessGroup& g : groups) {
      auto it = made.find(g.ranks);
      if (it == made.end()) {
        return RuntimeError(fmt::format("no NCCL communicator was split for group {}", g.name));
      }
      // Two groups over the same ranks (e.g. the flattened data-parallel group and a 1-D
      // mesh's shard group) would share one communicator; each Communicator owns its own,
      // so the second one is split again from the first.
      ncclComm_t comm = it->second;
      if (uses[g.ranks]++ > 0) {
        SS_RETURN_IF_ERROR(NcclStatus(ncclCommSplit(it->second, 0, boot_.rank, &comm, nullptr),
                                      "ncclCommSplit (duplicate group)", it->second));
      }
      const int pos =
          static_cast<int>(std::find(g.ranks.begin(), g.ranks.end(), boot_.rank) - g.ranks.begin());
      out.push_back(std::make_unique<NcclCommunicator>(g, pos, comm, device_, boot_));
    }
    // Sets another rank listed with this one but this rank's schedule does not use.
    for (auto& [set, comm] : made) {
      if (uses.find(set) == uses.end()) ncclCommDestroy(comm);
    }
    return out;
  }

 private:
  NcclBootstrap boot_;
  CudaDevice& device_;
  ncclComm_t world_;
};

}  // namespace

std::vector<std::vector<std::vector<int>>> PlanSplitRounds(std::vector<std::vector<int>> sets) {
  for (auto& s : sets) std::sort(s.begin(), s.end());
  std::sort(sets.begin(), sets.end());
  sets.erase(std::unique(sets.begin(), sets.end()), sets.end());
  std::vector<std::vector<std::vector<int>>> rounds;
  std::vector<std::set<int>> taken;  // ranks colored in each round
  for (auto& s : sets) {
    if (s.empty()) continue;
    size_t r = 0;
    for (; r < rounds.size(); ++r) {
      if (std::none_of(s.begin(), s.end(), [&](int x) { return taken[r].count(x) > 0; })) break;
    }
    if (r == rounds.size()) {
      rounds.emplace_back();
      taken.emplace_back();
    }
    taken[r].insert(s.begin(), s.end());
    rounds[r].push_back(std::move(s));
  }
  return rounds;
}

Result<std::unique_ptr<CommFactory>> MakeNcclCommFactoryWith(NcclBootstrap boot, Device& device) {
  auto* cuda = dynamic_cast<CudaDevice*>(&device);
  if (cuda == nullptr)
    return InvalidInput("NCCL communicators need the CUDA device (--device cuda)");
  if (!boot.broadcast || !boot.all_gather || boot.size < 1 || boot.rank < 0 ||
      boot.rank >= boot.size) {
    return InvalidInput("NCCL bootstrap: rank in [0, size), a broadcast and an all-gather");
  }
  SS_RETURN_IF_ERROR(cuda->Bind());
  ncclUniqueId id{};
  if (boot.rank == 0) SS_RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
  SS_RETURN_IF_ERROR(boot.broadcast(&id, sizeof(id), 0));
  ncclComm_t world = nullptr;
  SS_RETURN_IF_ERROR(NcclStatus(ncclCommInitRank(&world, boot.size, id, boot.rank),
                                fmt::format("ncclCommInitRank (rank {} of {}, GPU {})", boot.rank,
                                            boot.size, cuda->ordinal())));
  return std::unique_ptr<CommFactory>(
      std::make_unique<NcclCommFactory>(std::move(boot), *cuda, world));
}

}  // namespace shardscope::backend::cuda
