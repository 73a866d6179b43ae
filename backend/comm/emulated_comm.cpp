#include "backend/comm/emulated_comm.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "backend/device/deterministic.h"

namespace shardscope::backend {
namespace {

class EmulatedCommunicator final : public Communicator {
 public:
  EmulatedCommunicator(ProcessGroup group, int rank, Device& device, const CostModel& cost,
                       int gpus_per_node)
      : group_(std::move(group)),
        rank_(rank),
        device_(device),
        cost_(cost),
        shape_(GroupShapeOf(group_, gpus_per_node)) {}

  const ProcessGroup& group() const override { return group_; }
  int rank() const override { return rank_; }

  Status AllGather(const CollectiveCall& c) override {
    SS_RETURN_IF_ERROR(Need(c, c.output != nullptr, "an output buffer"));
    const int64_t slot = c.count * DTypeBytes(c.dtype);
    char* out = static_cast<char*>(c.output);
    if (c.input != nullptr && c.input != out + rank_ * slot) {
      SS_RETURN_IF_ERROR(device_.Memcpy(c.lane, out + rank_ * slot, c.input, slot));
    }
    SS_RETURN_IF_ERROR(FillOthers(c, out, slot, c.count));
    return Finish(c);
  }

  Status ReduceScatter(const CollectiveCall& c) override {
    SS_RETURN_IF_ERROR(Need(c, c.input != nullptr && c.output != nullptr, "input and output"));
    const int64_t slot = c.count * DTypeBytes(c.dtype);
    SS_RETURN_IF_ERROR(Reduce(c, static_cast<const char*>(c.input) + rank_ * slot, c.output));
    return Finish(c);
  }

  Status AllReduce(const CollectiveCall& c) override {
    SS_RETURN_IF_ERROR(Need(c, c.input != nullptr && c.output != nullptr, "input and output"));
    SS_RETURN_IF_ERROR(Reduce(c, c.input, c.output));
    return Finish(c);
  }

  Status AllToAll(const CollectiveCall& c) override {
    if (c.output != nullptr) {
      const int64_t per_peer = c.count / std::max(1, size());
      const int64_t slot = per_peer * DTypeBytes(c.dtype);
      char* out = static_cast<char*>(c.output);
      if (c.input != nullptr && slot > 0) {
        SS_RETURN_IF_ERROR(device_.Memcpy(c.lane, out + rank_ * slot,
                                          static_cast<const char*>(c.input) + rank_ * slot, slot));
      }
      SS_RETURN_IF_ERROR(FillOthers(c, out, slot, per_peer));
    }
    return Finish(c);
  }

  Status Send(const CollectiveCall& c) override { return Finish(c); }

  Status Recv(const CollectiveCall& c) override {
    if (c.output != nullptr && c.count > 0) {
      SS_RETURN_IF_ERROR(
          device_.Fill(c.lane, FillArgs{c.output, c.dtype, c.count, SeedOf(c.op_id), 0, 1.0f}));
    }
    return Finish(c);
  }

  Status Wait(std::chrono::nanoseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (auto& [op_id, event] : last_) {
      while (!device_.Done(*event)) {
        if (std::chrono::steady_clock::now() > deadline) {
          return RuntimeError(fmt::format("collective {} on group {} still running after {:.3f} s",
                                          op_id, group_.name,
                                          std::chrono::duration<double>(timeout).count()));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    last_.clear();
    return Status::Ok();
  }

 private:
  Status Need(const CollectiveCall& c, bool ok, const char* what) const {
    if (ok) return Status::Ok();
    return InvalidInput(
        fmt::format("{} (group {}): {} needs {}", c.op_id, group_.name, OpTypeName(c.type), what));
  }

  // Every slot but this rank's: DeterministicValue(SeedOf(op_id), i) at output element i
  // (two fills, whatever the group size: the issue cost stays flat on 64-rank groups).
  Status FillOthers(const CollectiveCall& c, char* out, int64_t slot_bytes, int64_t elements) {
    if (elements == 0 || size() == 1) return Status::Ok();
    const uint64_t seed = SeedOf(c.op_id);
    if (rank_ > 0) {
      SS_RETURN_IF_ERROR(
          device_.Fill(c.lane, FillArgs{out, c.dtype, rank_ * elements, seed, 0, 1.0f}));
    }
    if (rank_ + 1 < size()) {
      SS_RETURN_IF_ERROR(device_.Fill(
          c.lane, FillArgs{out + (rank_ + 1) * slot_bytes, c.dtype, (size() - rank_ - 1) * elements,
                           seed, (rank_ + 1) * elements, 1.0f}));
    }
    return Status::Ok();
  }

  // Every rank's operand taken equal to this one's: the sum is size · x, the mean x.
  Status Reduce(const CollectiveCall& c, const void* x, void* out) {
    const double reduced = c.reduce == CollectiveReduce::kSum ? static_cast<double>(size()) : 1.0;
    const float scale = static_cast<float>(c.post_scale * reduced * c.pre_scale);
    return device_.Cast(c.lane, CastArgs{c.count, c.dtype, c.dtype, x, out, scale});
  }

  // Holds the lane for the predicted time with NCCL's channel count of blocks.
  Status Finish(const CollectiveCall& c) {
    const CollectiveEstimate e = cost_.CollectiveNs(c.type, c.bytes, shape_);
    SS_RETURN_IF_ERROR(device_.Hold(c.lane, HoldArgs{e.ns, std::max(1, e.channels)}));
    SS_ASSIGN_OR_RETURN(std::shared_ptr<DeviceEvent> done, device_.Record(c.lane));
    last_.emplace_back(c.op_id, std::move(done));
    return Status::Ok();
  }

  ProcessGroup group_;
  int rank_;
  Device& device_;
  const CostModel& cost_;
  GroupShape shape_;
  std::vector<std::pair<std::string, std::shared_ptr<DeviceEvent>>> last_;  // since Wait
};

class EmulatedCommFactory final : public CommFactory {
 public:
  explicit EmulatedCommFactory(const EmulationOptions& o) : options_(o) {}
  int world_rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  std::string name() const override { return "emulated"; }
  std::map<std::string, std::string> versions() const override { return {}; }

  Result<std::vector<std::unique_ptr<Communicator>>> MakeCommunicators(
      std::span<const ProcessGroup> groups, Device& device) override {
    if (options_.cost == nullptr) return InvalidInput("emulated communicators need a cost model");
    std::vector<std::unique_ptr<Communicator>> out;
    for (const ProcessGroup& g : groups) {
      const auto it = std::find(g.ranks.begin(), g.ranks.end(), options_.rank);
      if (it == g.ranks.end()) {
        return InvalidInput(fmt::format("group {} does not hold rank {}", g.name, options_.rank));
      }
      out.push_back(
          std::make_unique<EmulatedCommunicator>(g, static_cast<int>(it - g.ranks.begin()), device,
                                                 *options_.cost, options_.gpus_per_node));
    }
    return out;
  }

 private:
  EmulationOptions options_;
};

}  // namespace

std::unique_ptr<CommFactory> MakeEmulatedCommFactory(const EmulationOptions& options) {
  return std::make_unique<EmulatedCommFactory>(options);
}

}  // namespace shardscope::backend
