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

// The all-gather of a world where rank r holds digests[r]: this rank's own block is the one
// passed in (what the function under test hashed), the others are hashed as a rank would.
AllGatherFn WorldOf(const std::vector<std::string>& digests, int me) {
  return [digests, me](const void* data, int64_t bytes) -> Result<std::vector<char>> {
    std::vector<char> out;
    for (int r = 0; r < static_cast<int>(digests.size()); ++r) {
      const uint64_t h = std::hash<std::string>{}(digests[static_cast<size_t>(r)]);
      const char* from =
          r == me ? static_cast<const char*>(data) : reinterpret_cast<const char*>(&h);
      out.insert(out.end(), from, from + bytes);
    }
    return out;
  };
}

TEST(CompareInputDigests, TheSameInputsOnEveryRankPass) {
  const std::vector<std::string> same(4, "scenario+flags");
  for (int me = 0; me < 4; ++me) {
    EXPECT_TRUE(CompareInputDigests(same[me], 4, WorldOf(same, me)).ok()) << "rank " << me;
  }
}

TEST(CompareInputDigests, NamesTheFirstRankThatDiffersFromRankZero) {
  const std::vector<std::string> d = {"a", "a", "b", "c"};
  for (int me = 0; me < 4; ++me) {
    const Status s = CompareInputDigests(d[static_cast<size_t>(me)], 4, WorldOf(d, me));
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
  const Status s = CompareInputDigests("x", 2, short_gather);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kRuntime);
}

TEST(CompareInputDigests, AFailedGatherIsPassedOn) {
  const AllGatherFn failing = [](const void*, int64_t) -> Result<std::vector<char>> {
    return RuntimeError("MPI_Allgather failed");
  };
  const Status s = CompareInputDigests("x", 2, failing);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("MPI_Allgather failed"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::backend
