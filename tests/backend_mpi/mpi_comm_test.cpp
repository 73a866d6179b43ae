// The MPI communicators (backend/comm/mpi_communicator.h) under `mpirun -np N` (N = 2 or 4):
// data movement of every call, the reduction rule's exact sums, sub-groups, and refusal of
// schedules whose groups disagree. Every rank runs every test; a rank's failure fails the run.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>

#include "backend/backends.h"
#include "backend/check/reduction_rule.h"
#include "backend/comm/mpi_communicator.h"
#include "backend/device/deterministic.h"
#include "tests/backend_mpi/inline_device.h"

namespace shardscope::backend {
namespace {

CommFactory* g_factory = nullptr;

int Rank() { return g_factory->world_rank(); }
int Size() { return g_factory->world_size(); }

ProcessGroup Group(std::string name, std::vector<int> ranks) {
  ProcessGroup g;
  g.name = std::move(name);
  g.ranks = std::move(ranks);
  return g;
}

// The groups every test uses: the world, and this rank's half (even or odd ranks).
class MpiComm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<int> all, half;
    for (int r = 0; r < Size(); ++r) {
      all.push_back(r);
      if (r % 2 == Rank() % 2) half.push_back(r);
    }
    groups_ = {Group("world", all), Group(Rank() % 2 ? "odd" : "even", half)};
    auto made = g_factory->MakeCommunicators(groups_, device_);
    ASSERT_TRUE(made.ok()) << made.status().message();
    comms_ = std::move(made).value();
  }
  static void TearDownTestSuite() { comms_.clear(); }
  Communicator& world() { return *comms_[0]; }
  Communicator& half() { return *comms_[1]; }

  static inline InlineDevice device_;
  static inline std::vector<ProcessGroup> groups_;
  static inline std::vector<std::unique_ptr<Communicator>> comms_;
};

CollectiveCall Call(OpType type, DType dtype, int64_t count,
                    CollectiveReduce reduce = CollectiveReduce::kNone) {
  CollectiveCall c;
  c.type = type;
  c.lane = type == OpType::kAllGather ? Lane::kAllGather : Lane::kReduceScatter;
  c.dtype = dtype;
  c.count = count;
  c.reduce = reduce;
  c.op_id = std::string("test/") + std::string(OpTypeName(type));
  return c;
}

// Rank `r`'s deterministic input element i in `dtype` (as float).
float Value(const std::string& name, int r, int64_t i, DType dtype) {
  return RoundTo(dtype, DeterministicValue(SeedOf(name + ":" + std::to_string(r)), i));
}

std::vector<uint16_t> Bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out;
  for (float f : v) out.push_back(FloatToBf16Bits(f));
  return out;
}

TEST_F(MpiComm, WorldMatchesTheLauncher) {
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(Rank(), rank);
  EXPECT_EQ(Size(), size);
  EXPECT_EQ(world().rank(), rank);
  EXPECT_EQ(half().rank(), rank / 2);
  EXPECT_EQ(g_factory->name(), "mpi");
  EXPECT_NE(g_factory->versions().at("mpi").find("MPI"), std::string::npos);
}

TEST_F(MpiComm, AllGatherInPlaceReassemblesEveryRanksShard) {
  const int64_t count = 7;
  const int n = world().size();
  std::vector<uint16_t> buf(count * n, 0xffff);
  for (int64_t i = 0; i < count; ++i) {
    buf[Rank() * count + i] = FloatToBf16Bits(Value("ag", Rank(), i, DType::kBFloat16));
  }
  CollectiveCall c = Call(OpType::kAllGather, DType::kBFloat16, count);
  c.output = buf.data();
  c.input = buf.data() + Rank() * count;
  ASSERT_TRUE(world().AllGather(c).ok());
  ASSERT_TRUE(world().Wait(std::chrono::seconds(30)).ok());
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(Bf16BitsToFloat(buf[r * count + i]), Value("ag", r, i, DType::kBFloat16))
          << "rank " << r << " element " << i;
    }
  }
}

TEST_F(MpiComm, AllGatherFromASeparateInputOnASubGroup) {
  const int64_t count = 3;
  const int n = half().size();
  std::vector<float> in(count), out(count * n, -1.0f);
  for (int64_t i = 0; i < count; ++i) in[i] = Value("agh", Rank(), i, DType::kFloat32);
  CollectiveCall c = Call(OpType::kAllGather, DType::kFloat32, count);
  c.input = in.data();
  c.output = out.data();
  ASSERT_TRUE(half().AllGather(c).ok());
  ASSERT_TRUE(half().Wait(std::chrono::seconds(30)).ok());
  for (int j = 0; j < n; ++j) {
    const int r = half().group().ranks[j];
    for (int64_t i = 0; i < count; ++i)
      EXPECT_EQ(out[j * count + i], Value("agh", r, i, DType::kFloat32));
  }
}

// Reduce-scatter over the world against the rule applied to every rank's input, which each
// rank can rebuild (deterministic values).
void ExpectReduceScatter(Communicator& comm, DType dtype, CollectiveReduce reduce, double pre,
                         double post) {
  const int64_t count = 33;
  const int n = comm.size();
  const std::string name = fmt::format("rs{}{}{}", DTypeName(dtype), static_cast<int>(reduce), pre);
  std::vector<float> in(count * n);
  for (int64_t i = 0; i < count * n; ++i) in[i] = Value(name, Rank(), i, dtype);
  std::vector<float> out_f(count, -7.0f);
  std::vector<uint16_t> in_b = Bf16(in), out_b(count, 0);
  CollectiveCall c = Call(OpType::kReduceScatter, dtype, count, reduce);
  c.pre_scale = pre;
  c.post_scale = post;
  const bool bf = dtype == DType::kBFloat16;
  c.input = bf ? static_cast<const void*>(in_b.data()) : in.data();
  c.output = bf ? static_cast<void*>(out_b.data()) : out_f.data();
  ASSERT_TRUE(comm.ReduceScatter(c).ok());
  const Status waited = comm.Wait(std::chrono::seconds(30));
  ASSERT_TRUE(waited.ok()) << waited.message();
  const ReductionRule rule(dtype, reduce, pre, post, n);
  for (int64_t i = 0; i < count; ++i) {
    double sum = 0;
    for (int j = 0; j < n; ++j) {
      sum += rule.Input(Value(name, comm.group().ranks[j], comm.rank() * count + i, dtype));
    }
    const float got = bf ? Bf16BitsToFloat(out_b[i]) : out_f[i];
    ASSERT_EQ(got, rule.Output(sum)) << DTypeName(dtype) << " element " << i;
  }
}

TEST_F(MpiComm, ReduceScatterFloat32SumAvgAndScaled) {
  ExpectReduceScatter(world(), DType::kFloat32, CollectiveReduce::kSum, 1.0, 1.0);
  ExpectReduceScatter(world(), DType::kFloat32, CollectiveReduce::kAvg, 1.0, 1.0);
  ExpectReduceScatter(world(), DType::kFloat32, CollectiveReduce::kSum, 1.0 / 3, 1.0);
  ExpectReduceScatter(world(), DType::kFloat32, CollectiveReduce::kSum, 0.5, 0.25);
}

TEST_F(MpiComm, ReduceScatterBf16SumAndAvg) {
  ExpectReduceScatter(world(), DType::kBFloat16, CollectiveReduce::kSum, 1.0, 1.0);
  ExpectReduceScatter(world(), DType::kBFloat16, CollectiveReduce::kAvg, 1.0, 1.0);
  ExpectReduceScatter(half(), DType::kBFloat16, CollectiveReduce::kAvg, 1.0, 1.0);
}

TEST_F(MpiComm, ReductionsAreExactWhateverTheOrder) {
  // Summed left to right in float32, 2^24 + 1 + 1 − 2^24 gives 0; the exact sum is 2. With
  // one addend per rank (the rest zero), any order MPI picks must give 2.
  const int n = world().size();
  const float addends[4] = {0x1p24f, 1.0f, 1.0f, -0x1p24f};
  std::vector<float> buf(1, Rank() < 4 ? addends[Rank()] : 0.0f);
  CollectiveCall c = Call(OpType::kAllReduce, DType::kFloat32, 1, CollectiveReduce::kSum);
  c.input = buf.data();
  c.output = buf.data();
  ASSERT_TRUE(world().AllReduce(c).ok());
  ASSERT_TRUE(world().Wait(std::chrono::seconds(30)).ok());
  // Two ranks: 2^24 + 1 is a tie in float32, rounded to the even 2^24.
  EXPECT_EQ(buf[0], n >= 4 ? 2.0f : 0x1p24f);
}

TEST_F(MpiComm, AllReduceInPlaceBf16AvgOnASubGroup) {
  const int64_t count = 17;
  const int n = half().size();
  std::vector<float> mine(count);
  for (int64_t i = 0; i < count; ++i) mine[i] = Value("ar", Rank(), i, DType::kBFloat16);
  std::vector<uint16_t> buf = Bf16(mine);
  CollectiveCall c = Call(OpType::kAllReduce, DType::kBFloat16, count, CollectiveReduce::kAvg);
  c.lane = Lane::kAllReduce;
  c.input = buf.data();
  c.output = buf.data();
  ASSERT_TRUE(half().AllReduce(c).ok());
  ASSERT_TRUE(half().Wait(std::chrono::seconds(30)).ok());
  const ReductionRule rule(DType::kBFloat16, CollectiveReduce::kAvg, 1.0, 1.0, n);
  for (int64_t i = 0; i < count; ++i) {
    double sum = 0;
    for (int r : half().group().ranks) sum += rule.Input(Value("ar", r, i, DType::kBFloat16));
    EXPECT_EQ(Bf16BitsToFloat(buf[i]), rule.Output(sum)) << "element " << i;
  }
}

TEST_F(MpiComm, AllToAllSwapsBlocks) {
  const int n = world().size();
  const int64_t per_peer = 2;
  std::vector<float> in(per_peer * n), out(per_peer * n, -1.0f);
  for (int j = 0; j < n; ++j) {
    for (int64_t i = 0; i < per_peer; ++i) in[j * per_peer + i] = Rank() * 100 + j + 0.5f * i;
  }
  CollectiveCall c = Call(OpType::kAllToAll, DType::kFloat32, per_peer * n);
  c.lane = Lane::kCompute;
  c.input = in.data();
  c.output = out.data();
  ASSERT_TRUE(world().AllToAll(c).ok());
  ASSERT_TRUE(world().Wait(std::chrono::seconds(30)).ok());
  for (int j = 0; j < n; ++j) {
    for (int64_t i = 0; i < per_peer; ++i) {
      EXPECT_EQ(out[j * per_peer + i], j * 100 + Rank() + 0.5f * i) << "from rank " << j;
    }
  }
}

TEST_F(MpiComm, SendAndReceiveBetweenNeighbours) {
  // Ranks pair up (0→1, 2→3): the even one sends, the odd one receives.
  const int64_t count = 9;
  std::vector<float> data(count, 0.0f);
  CollectiveCall c = Call(Rank() % 2 == 0 ? OpType::kSend : OpType::kRecv, DType::kFloat32, count);
  c.lane = Lane::kP2P;
  c.peer = Rank() % 2 == 0 ? Rank() + 1 : Rank() - 1;  // world position = world rank
  if (Rank() % 2 == 0) {
    for (int64_t i = 0; i < count; ++i) data[i] = Value("p2p", Rank(), i, DType::kFloat32);
    c.input = data.data();
    ASSERT_TRUE(world().Send(c).ok());
  } else {
    c.output = data.data();
    ASSERT_TRUE(world().Recv(c).ok());
  }
  ASSERT_TRUE(world().Wait(std::chrono::seconds(30)).ok());
  const int sender = Rank() - Rank() % 2;
  for (int64_t i = 0; i < count; ++i) EXPECT_EQ(data[i], Value("p2p", sender, i, DType::kFloat32));
}

TEST_F(MpiComm, LanesOfTheHostDeviceRunCollectivesConcurrently) {
  // Two communicators, each collective on its own lane thread of the host device: both are
  // issued before either is waited for, as the executor issues them.
  auto host = MakeHostDevice(DeviceOptions{});
  ASSERT_TRUE(host.ok()) << host.status().message();
  auto made = g_factory->MakeCommunicators(groups_, **host);
  ASSERT_TRUE(made.ok()) << made.status().message();
  Communicator& w = *made.value()[0];
  Communicator& h = *made.value()[1];
  const int64_t count = 1000;
  std::vector<float> gathered(count * w.size(), 0.0f);
  for (int64_t i = 0; i < count; ++i) gathered[Rank() * count + i] = Rank() + 1.0f;
  std::vector<float> summed(count, 1.0f);
  CollectiveCall ag = Call(OpType::kAllGather, DType::kFloat32, count);
  ag.output = gathered.data();
  ag.input = gathered.data() + Rank() * count;
  CollectiveCall ar = Call(OpType::kAllReduce, DType::kFloat32, count, CollectiveReduce::kSum);
  ar.lane = Lane::kAllReduce;
  ar.input = summed.data();
  ar.output = summed.data();
  ASSERT_TRUE(w.AllGather(ag).ok());
  ASSERT_TRUE(h.AllReduce(ar).ok());
  ASSERT_TRUE(w.Wait(std::chrono::seconds(30)).ok());
  ASSERT_TRUE(h.Wait(std::chrono::seconds(30)).ok());
  ASSERT_TRUE((*host)->Synchronize(std::chrono::seconds(30)).ok());
  for (int r = 0; r < w.size(); ++r) EXPECT_EQ(gathered[r * count + 5], r + 1.0f);
  EXPECT_EQ(summed[7], static_cast<float>(h.size()));
}

TEST_F(MpiComm, DisagreeingSchedulesAreRefusedOnEveryRank) {
  // Rank 0's schedule has a group with rank 1 that rank 1's schedule lacks.
  std::vector<ProcessGroup> groups;
  if (Rank() == 0) groups.push_back(Group("lonely", {0, 1}));
  auto made = g_factory->MakeCommunicators(groups, device_);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), ErrorCode::kRuntime);
  EXPECT_NE(made.status().message().find("group 'lonely' over ranks [0, 1] is in rank 0's "
                                         "schedule but not in rank 1's"),
            std::string::npos)
      << made.status().message();
}

TEST_F(MpiComm, UnsupportedReduceDtypeIsAnError) {
  std::vector<uint16_t> buf(4 * world().size());
  CollectiveCall c = Call(OpType::kReduceScatter, DType::kFloat16, 4, CollectiveReduce::kSum);
  c.input = buf.data();
  c.output = buf.data();
  const Status issued = world().ReduceScatter(c);  // the inline device runs it at once
  const Status s = issued.ok() ? world().Wait(std::chrono::seconds(5)) : issued;
  EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.message().find("test/reduce_scatter"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace shardscope::backend

int main(int argc, char** argv) {
  using namespace shardscope::backend;
  ::testing::InitGoogleTest(&argc, argv);
  const LaunchInfo launch = DetectLaunch();
  if (!launch.launched()) {
    std::fprintf(stderr, "mpi_comm_test: run it under mpirun -np 2 or 4\n");
    return 2;
  }
  auto factory = MakeMpiCommFactory(launch, MpiCommOptions{std::chrono::seconds(60)});
  if (!factory.ok()) {
    std::fprintf(stderr, "mpi_comm_test: %s\n", factory.status().message().c_str());
    return 3;
  }
  std::unique_ptr<CommFactory> owned = std::move(factory).value();
  g_factory = owned.get();
  int failed = RUN_ALL_TESTS() != 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  g_factory = nullptr;
  owned.reset();  // MPI_Finalize
  return any_failed;
}
