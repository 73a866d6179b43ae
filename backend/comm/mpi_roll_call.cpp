#include "backend/comm/mpi_roll_call.h"

#include <algorithm>
#include <memory>

namespace shardscope::backend {
namespace {

constexpr int kPingTag = 1;
// Replies carry the ping's nonce as their tag, so a late answer to an earlier roll call is
// never mistaken for one to the current call.
constexpr int kFirstReplyTag = 2;

}  // namespace

Result<std::unique_ptr<MpiRollCall>> MpiRollCall::Start() {
  std::unique_ptr<MpiRollCall> rc(new MpiRollCall());
  if (MPI_Comm_dup(MPI_COMM_WORLD, &rc->comm_) != MPI_SUCCESS) {
    return RuntimeError("MPI_Comm_dup of the world for the liveness service failed");
  }
  MPI_Comm_set_errhandler(rc->comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(rc->comm_, &rc->rank_);
  rc->responder_ = std::thread([p = rc.get()] { p->Respond(); });
  return rc;
}

MpiRollCall::~MpiRollCall() {
  stop_ = true;
  if (responder_.joinable()) responder_.join();
  // The duplicate is not freed: MPI_Comm_free waits for pending answers, and after a fault a
  // pinger may never receive its answer. MPI_Finalize (clean runs only) reclaims it.
}

void MpiRollCall::Respond() {
  // Answers carry no data (the tag is the nonce) and send from one static int, so a pending
  // answer never points into storage this loop reuses.
  static int answer_value = 0;
  std::vector<MPI_Request> answers;
  while (!stop_) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, comm_, &flag, &status) == MPI_SUCCESS && flag) {
      int nonce = 0;
      MPI_Recv(&nonce, 1, MPI_INT, status.MPI_SOURCE, kPingTag, comm_, MPI_STATUS_IGNORE);
      MPI_Request req;
      if (MPI_Isend(&answer_value, 1, MPI_INT, status.MPI_SOURCE, kFirstReplyTag + nonce, comm_,
                    &req) == MPI_SUCCESS) {
        answers.push_back(req);
      }
      continue;
    }
    if (!answers.empty()) {
      int done = 0;
      MPI_Testall(static_cast<int>(answers.size()), answers.data(), &done, MPI_STATUSES_IGNORE);
      if (done) answers.clear();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::vector<int> MpiRollCall::Unresponsive(const std::vector<int>& world_ranks,
                                           std::chrono::milliseconds grace) {
  // Nonces stay below the MPI tag limit (at least 32767 by the standard).
  const int nonce = next_nonce_.fetch_add(1) % 30000;
  std::vector<int> peers;
  for (int r : world_ranks) {
    if (r != rank_) peers.push_back(r);
  }
  // Receive slots outlive this call when a peer stays silent (a cancelled receive may still
  // land), so they are released, not freed, in that case.
  auto replies = std::make_unique<std::vector<int>>(peers.size(), 0);
  std::vector<MPI_Request> recvs(peers.size(), MPI_REQUEST_NULL);
  std::vector<bool> failed(peers.size(), false);
  // The pings' send buffer outlives this call: a dead peer never takes its message.
  static thread_local int ping_value;
  ping_value = nonce;
  for (size_t i = 0; i < peers.size(); ++i) {
    MPI_Request send;
    if (MPI_Irecv(&(*replies)[i], 1, MPI_INT, peers[i], kFirstReplyTag + nonce, comm_, &recvs[i]) !=
            MPI_SUCCESS ||
        MPI_Isend(&ping_value, 1, MPI_INT, peers[i], kPingTag, comm_, &send) != MPI_SUCCESS) {
      failed[i] = true;
      continue;
    }
    MPI_Request_free(&send);
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  std::vector<bool> answered(peers.size(), false);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (size_t i = 0; i < peers.size(); ++i) {
      if (answered[i] || failed[i]) continue;
      int flag = 0;
      if (MPI_Test(&recvs[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        failed[i] = true;
      } else if (flag) {
        answered[i] = true;
      } else {
        all = false;
      }
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::vector<int> silent;
  for (size_t i = 0; i < peers.size(); ++i) {
    if (answered[i]) continue;
    silent.push_back(peers[i]);
    if (!failed[i]) {
      MPI_Cancel(&recvs[i]);
      MPI_Request_free(&recvs[i]);
    }
  }
  if (!silent.empty()) (void)replies.release();
  return silent;
}

}  // namespace shardscope::backend
