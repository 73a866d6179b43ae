// CompareInputDigests, the inputs check every transport with a world runs before its first
// communicator (MPI's and the NCCL bootstrap's all-gather): a world of fake ranks whose
// all-gather returns what each rank would contribute.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/comm/communicator.h"

namespace shardscope::backend {
namespace {

// What each rank of a world holding digests[r] contributes to the gather: its block as
// CompareInputDigests itself makes it (captured from a call whose gather fails).
std::vector<std::vector<char>> BlocksOf(const std::vector<std::string>& digests) {
  std::vector<std::vector<char>> blocks;
  for (const std::string& d : digests) {
    std::vector<char> block;
    const AllGatherFn capture = [&block](const void* data,
                                         int64_t bytes) -> Result<std::vector<char>> {
      block.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
      return RuntimeError("captured");
    };
    EXPECT_FALSE(CompareInputDigests(d, static_cast<int>(digests.size()), capture).ok());
    blocks.push_back(block);
  }
  return blocks;
}

// The all-gather of that world: every rank's block, in rank order (each rank calls once, so
// the blocks are those it made; the caller's own has the same size).
AllGatherFn WorldOf(const std::vector<std::vector<char>>& blocks) {
  return [blocks](const void*, int64_t bytes) -> Result<std::vector<char>> {
    std::vector<char> out;
    for (const std::vector<char>& b : blocks) {
      EXPECT_EQ(static_cast<int64_t>(b.size()), bytes);
      out.insert(out.end(), b.begin(), b.end());
    }
    return out;
  };
}

TEST(CompareInputDigests, TheSameInputsOnEveryRankPass) {
  const std::vector<std::string> same(4, "scenario+flags");
  const auto blocks = BlocksOf(same);
  for (int me = 0; me < 4; ++me) {
    EXPECT_TRUE(CompareInputDigests(same[me], 4, WorldOf(blocks)).ok()) << "rank " << me;
  }
}

// Measured traces carry the run's id (calibrate joins a run's rank files by it): every rank
// takes rank 0's, and another run has another.
TEST(CompareInputDigests, EveryRankTakesRankZerosRunId) {
  const std::vector<std::string> same(4, "scenario+flags");
  const auto blocks = BlocksOf(same);
  std::vector<std::string> ids;
  for (int me = 0; me < 4; ++me) {
    Result<std::string> id = CompareInputDigests(same[me], 4, WorldOf(blocks));
    ASSERT_TRUE(id.ok()) << id.status().message();
    ids.push_back(*id);
  }
  EXPECT_EQ(ids[0].rfind("run-", 0), 0u) << ids[0];
  EXPECT_EQ(ids[0].size(), 20u) << ids[0];
  for (const std::string& id : ids) EXPECT_EQ(id, ids[0]);
  Result<std::string> other = CompareInputDigests(same[0], 4, WorldOf(BlocksOf(same)));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, ids[0]);
  EXPECT_NE(NewRunId(), NewRunId());
}

TEST(CompareInputDigests, NamesTheFirstRankThatDiffersFromRankZero) {
  const std::vector<std::string> d = {"a", "a", "b", "c"};
  const auto blocks = BlocksOf(d);
  for (int me = 0; me < 4; ++me) {
    const Status s = CompareInputDigests(d[static_cast<size_t>(me)], 4, WorldOf(blocks)).status();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
    // Every rank reports the same rank, whichever it is itself.
    EXPECT_NE(s.message().find("rank 2 was started with other inputs than rank 0"),
              std::string::npos)
        << s.message();
  }
}

TEST(CompareInputDigests, AShortGatherIsAnErrorNotARead) {
  const AllGatherFn short_gather = [](const void*, int64_t) -> Result<std::vector<char>> {
    return std::vector<char>(8, 0);
  };
  const Status s = CompareInputDigests("x", 2, short_gather).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kRuntime);
}

TEST(CompareInputDigests, AFailedGatherIsPassedOn) {
  const AllGatherFn failing = [](const void*, int64_t) -> Result<std::vector<char>> {
    return RuntimeError("MPI_Allgather failed");
  };
  const Status s = CompareInputDigests("x", 2, failing).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("MPI_Allgather failed"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::backend
