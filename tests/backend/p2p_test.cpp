// Pipeline sends and receives as the executor issues them (two stages of one rank each, on
// emulated communicators wrapped to record every call): each goes to the other rank of its
// hop's group, and a send whose lane's next op is a receive goes out with it as one
// point-to-point group, nothing else in between.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "exec_test_util.h"

namespace shardscope::backend {
namespace {

using testing::LoadJob;
using testing::RunJob;

struct Call {
  std::string what;  // "begin", "end", "send", "recv", or another op type's name
  std::string op_id;
  int peer = -1;
  std::string group;
};

// Forwards to the emulated communicator and records what was called.
class Recording final : public Communicator {
 public:
  Recording(std::unique_ptr<Communicator> inner, std::vector<Call>* log)
      : inner_(std::move(inner)), log_(log) {}
  const ProcessGroup& group() const override { return inner_->group(); }
  int rank() const override { return inner_->rank(); }
  Status AllGather(const CollectiveCall& c) override {
    return Log("all_gather", c, inner_->AllGather(c));
  }
  Status ReduceScatter(const CollectiveCall& c) override {
    return Log("reduce_scatter", c, inner_->ReduceScatter(c));
  }
  Status AllReduce(const CollectiveCall& c) override {
    return Log("all_reduce", c, inner_->AllReduce(c));
  }
  Status AllToAll(const CollectiveCall& c) override {
    return Log("all_to_all", c, inner_->AllToAll(c));
  }
  Status Send(const CollectiveCall& c) override { return Log("send", c, inner_->Send(c)); }
  Status Recv(const CollectiveCall& c) override { return Log("recv", c, inner_->Recv(c)); }
  Status BeginP2PGroup() override {
    log_->push_back({"begin", "", -1, group().name});
    return Status::Ok();
  }
  Status EndP2PGroup() override {
    log_->push_back({"end", "", -1, group().name});
    return Status::Ok();
  }
  Status Wait(std::chrono::nanoseconds timeout) override { return inner_->Wait(timeout); }

 private:
  Status Log(const char* what, const CollectiveCall& c, Status st) {
    log_->push_back({what, c.op_id, c.peer, group().name});
    return st;
  }
  std::unique_ptr<Communicator> inner_;
  std::vector<Call>* log_;
};

// Logs each op's end as the executor reaches it ("finish"): its end event, observer and end
// effects come together.
class FinishLog final : public ExecObserver {
 public:
  explicit FinishLog(std::vector<Call>* log) : log_(log) {}
  Status AfterOp(int op, const ExecContext& ctx) override {
    log_->push_back({"finish", OpIdOf(*ctx.schedule, ctx.schedule->ops[op]), -1, ""});
    return Status::Ok();
  }
  Status AfterRun(const ExecContext&) override { return Status::Ok(); }

 private:
  std::vector<Call>* log_;
};

std::vector<Call> RunStage(int rank) {
  auto job = LoadJob("two_stages.json", rank);
  std::vector<Call> log;
  for (auto& c : job->comms) c = std::make_unique<Recording>(std::move(c), &log);
  FinishLog finish(&log);
  ExecOptions options;
  options.observer = &finish;
  const StepRun run = RunJob(*job, options);
  EXPECT_TRUE(run.failure.ok()) << run.failure.message();
  return log;
}

TEST(PipelineP2PTest, PeersAreTheOtherRankOfTheHop) {
  for (int rank : {0, 1}) {
    int p2p = 0;
    for (const Call& c : RunStage(rank)) {
      if (c.what != "send" && c.what != "recv") continue;
      ++p2p;
      // The hop's group holds ranks {0, 1}: the peer is the other one's position.
      EXPECT_EQ(c.peer, 1 - rank) << c.op_id << " on " << c.group;
    }
    EXPECT_GE(p2p, 4) << "rank " << rank;  // two micro-batches each way
  }
}

// A stage's sends and receives without a buffer of their own run on the p2p lane while the
// compute lane's kernels use theirs: each lane gets its own workspace (one shared between the
// two threads or streams would be written by both at once).
TEST(PipelineP2PTest, TheP2PLaneHasAWorkspaceApartFromTheComputeLanes) {
  auto job = LoadJob("two_stages.json", 0);
  const StepRun run = RunJob(*job);
  ASSERT_TRUE(run.failure.ok()) << run.failure.message();
  const auto lane = [&](Lane l) { return run.workspace_by_lane[static_cast<int>(l) - 1]; };
  EXPECT_GT(lane(Lane::kCompute), 0);
  EXPECT_GT(lane(Lane::kP2P), 0);
  int64_t sum = 0;
  for (int64_t b : run.workspace_by_lane) sum += b;
  EXPECT_LE(sum, run.workspace_bytes);  // plus replicate params' reduce buffers, if any
}

TEST(PipelineP2PTest, ASendFollowedByAReceiveGoesOutAsOneGroup) {
  for (int rank : {0, 1}) {
    std::vector<Call> log = RunStage(rank);
    std::erase_if(log, [](const Call& c) { return c.what == "finish"; });
    int groups = 0;
    for (size_t k = 0; k < log.size(); ++k) {
      if (log[k].what != "begin") {
        EXPECT_NE(log[k].what, "end") << "an end without its begin at call " << k;
        continue;
      }
      ++groups;
      ASSERT_LT(k + 3, log.size() + 0);
      EXPECT_EQ(log[k + 1].what, "send");
      EXPECT_EQ(log[k + 2].what, "recv");
      EXPECT_EQ(log[k + 3].what, "end");
      // Forward activations out, the gradient of an earlier micro-batch in: two hops.
      EXPECT_NE(log[k + 1].group, log[k + 2].group);
      k += 3;
    }
    // 1F1B over two stages and two micro-batches: stage 0 sends micro-batch 1's activations
    // then receives micro-batch 0's gradient; stage 1 sends that gradient then receives
    // micro-batch 1's activations.
    EXPECT_EQ(groups, 1) << "rank " << rank;
  }
}

TEST(PipelineP2PTest, AGroupedSendFinishesOnlyAfterTheGroupEnds) {
  // NCCL enqueues a group's calls at ncclGroupEnd: the send's end event (and the frees and
  // dependents that wait for it) must come after that, not between the send and the receive.
  for (int rank : {0, 1}) {
    const std::vector<Call> log = RunStage(rank);
    int checked = 0;
    for (size_t k = 0; k < log.size(); ++k) {
      if (log[k].what != "begin") continue;
      ASSERT_LT(k + 3, log.size());
      const std::string send = log[k + 1].op_id, recv = log[k + 2].op_id;
      ASSERT_EQ(log[k + 1].what, "send");
      EXPECT_EQ(log[k + 3].what, "end") << "nothing finishes inside the group, rank " << rank;
      // Both finish after the end, the send first.
      std::vector<std::string> finished;
      for (size_t j = k + 1; j < log.size() && finished.size() < 2; ++j) {
        if (log[j].what == "finish") finished.push_back(log[j].op_id);
      }
      EXPECT_EQ(finished, (std::vector<std::string>{send, recv})) << "rank " << rank;
      ++checked;
    }
    EXPECT_EQ(checked, 1) << "rank " << rank;
  }
}

}  // namespace
}  // namespace shardscope::backend
