#include "sim/engine/memory_tracker.h"

#include <gtest/gtest.h>

#include "core/util/units.h"
#include "tests/engine/test_schedules.h"

namespace shardscope::sim {
namespace {

using testing::ScheduleMaker;
using When = MemoryEffect::When;

std::vector<RoleMemory> MustTrack(ScheduleMaker& m, int64_t capacity = 0) {
  auto tl = RunEngine(m.schedule(), m.durations(), EngineOptions{});
  EXPECT_TRUE(tl.ok()) << tl.status().message();
  auto mem = TrackMemory(m.schedule(), tl.value(), MemoryOptions{capacity, true});
  EXPECT_TRUE(mem.ok()) << mem.status().message();
  return mem.ok() ? std::move(mem).value() : std::vector<RoleMemory>{};
}

TEST(MemoryTrackerTest, PeakIsFoundWithItsTimeOpAndBreakdown) {
  ScheduleMaker m;
  m.schedule().initial_memory[0][static_cast<int>(MemCategory::kShardedParams)] = 100 * kMiB;
  const int ag = m.AllGather("fwd/a/all_gather", 10);
  m.Mem(ag, When::kStart, MemCategory::kUnshardedParams, 400 * kMiB, 1);
  const int c = m.Compute("fwd/a/compute", 100, {ag});
  m.Mem(c, When::kStart, MemCategory::kTemporaries, 50 * kMiB, 2);
  m.Mem(c, When::kEnd, MemCategory::kTemporaries, -50 * kMiB, 2);
  m.Mem(c, When::kEnd, MemCategory::kActivations, 30 * kMiB, 3);
  m.Mem(c, When::kEnd, MemCategory::kUnshardedParams, -400 * kMiB, 1);
  const int b = m.Compute("bwd/a/compute", 100, {c});
  m.Mem(b, When::kEnd, MemCategory::kActivations, -30 * kMiB, 3);
  const auto mem = MustTrack(m);
  ASSERT_EQ(mem.size(), 1u);
  const RoleMemory& r = mem[0];
  EXPECT_EQ(r.peak_allocated_bytes, 550 * kMiB);
  EXPECT_EQ(r.peak_allocated_time_ns, 10);
  EXPECT_EQ(r.peak_allocated_op, c);
  EXPECT_EQ(r.at_peak_allocated[static_cast<int>(MemCategory::kUnshardedParams)], 400 * kMiB);
  EXPECT_EQ(r.at_peak_allocated[static_cast<int>(MemCategory::kTemporaries)], 50 * kMiB);
  // Conservation: everything transient is gone at the end.
  EXPECT_EQ(r.final_bytes, r.initial_bytes);
  EXPECT_EQ(r.live_buffers_at_end, 0);
  // Reserved never below allocated, and the curve ends at the initial allocation.
  EXPECT_GE(r.peak_reserved_bytes, r.peak_allocated_bytes);
  for (const MemorySample& s : r.samples) EXPECT_GE(s.reserved_bytes, s.allocated_bytes);
  EXPECT_EQ(r.samples.back().allocated_bytes, 100 * kMiB);
}

TEST(MemoryTrackerTest, StreamsDoNotShareCachedBlocks) {
  // Two equal buffers, one after the other: on one stream the second reuses the first's
  // block; on two streams it needs its own segment.
  for (bool same_stream : {true, false}) {
    ScheduleMaker m;
    const int a = m.AllGather("a", 10);
    m.Mem(a, When::kStart, MemCategory::kUnshardedParams, 64 * kMiB, 1);
    m.Mem(a, When::kEnd, MemCategory::kUnshardedParams, -64 * kMiB, 1);
    const int b = same_stream ? m.AllGather("b", 10, {a}) : m.ReduceScatter("b", 10, {a});
    m.Mem(b, When::kStart, MemCategory::kCommBuffers, 64 * kMiB, 2);
    m.Mem(b, When::kEnd, MemCategory::kCommBuffers, -64 * kMiB, 2);
    const auto mem = MustTrack(m);
    EXPECT_EQ(mem[0].peak_allocated_bytes, 64 * kMiB);
    EXPECT_EQ(mem[0].peak_reserved_bytes, (same_stream ? 64 : 128) * kMiB);
  }
}

TEST(MemoryTrackerTest, OomNamesTheOpAndCategory) {
  ScheduleMaker m;
  const int c = m.Compute("fwd/loss", 10);
  m.Mem(c, When::kStart, MemCategory::kTemporaries, 300 * kMiB, 1);
  m.Mem(c, When::kEnd, MemCategory::kTemporaries, -300 * kMiB, 1);
  const auto mem = MustTrack(m, 256 * kMiB);
  EXPECT_TRUE(mem[0].oom);
  EXPECT_EQ(mem[0].oom_op, c);
  EXPECT_EQ(mem[0].oom_category, MemCategory::kTemporaries);
  EXPECT_FALSE(MustTrack(m, 512 * kMiB)[0].oom);
}

TEST(MemoryTrackerTest, AnonymousFreesMatchBySizeAndCategory) {
  ScheduleMaker m;
  const int c = m.Compute("c", 10);
  m.Mem(c, When::kStart, MemCategory::kActivations, 10 * kMiB);
  m.Mem(c, When::kStart, MemCategory::kActivations, 20 * kMiB);
  const int d = m.Compute("d", 10, {c});
  m.Mem(d, When::kEnd, MemCategory::kActivations, -10 * kMiB);
  m.Mem(d, When::kEnd, MemCategory::kActivations, -20 * kMiB);
  EXPECT_EQ(MustTrack(m)[0].live_buffers_at_end, 0);
}

TEST(MemoryTrackerTest, BadFreesAreErrorsNamingTheOp) {
  ScheduleMaker m;
  const int c = m.Compute("bwd/model.layers.0/compute", 10);
  m.Mem(c, When::kEnd, MemCategory::kUnshardedGrads, -kMiB, 9);
  auto tl = RunEngine(m.schedule(), m.durations(), EngineOptions{});
  ASSERT_TRUE(tl.ok());
  auto mem = TrackMemory(m.schedule(), tl.value(), MemoryOptions{});
  ASSERT_FALSE(mem.ok());
  EXPECT_NE(mem.status().message().find("bwd/model.layers.0/compute"), std::string::npos);
  EXPECT_NE(mem.status().message().find("buffer 9 which is not live"), std::string::npos);
}

// Buffers of the table (ids below its size) are tracked in one table for all roles: each role
// allocates and frees its own, and one role cannot free a buffer another role holds.
TEST(MemoryTrackerTest, TableBuffersBelongToTheRoleThatAllocatedThem) {
  ScheduleMaker m(2);
  m.schedule().buffers.resize(4);
  const int a0 = m.Compute("fwd/a/compute", 10, {}, 0);
  m.Mem(a0, When::kStart, MemCategory::kActivations, 8 * kMiB, 0);
  const int a1 = m.Compute("fwd/a/compute", 10, {}, 1);
  m.Mem(a1, When::kStart, MemCategory::kActivations, 4 * kMiB, 1);
  const int b0 = m.Compute("bwd/a/compute", 10, {a0}, 0);
  m.Mem(b0, When::kEnd, MemCategory::kActivations, -8 * kMiB, 0);
  const int b1 = m.Compute("bwd/a/compute", 10, {a1}, 1);
  m.Mem(b1, When::kEnd, MemCategory::kActivations, -4 * kMiB, 1);
  const auto mem = MustTrack(m);
  ASSERT_EQ(mem.size(), 2u);
  EXPECT_EQ(mem[0].peak_allocated_bytes, 8 * kMiB);
  EXPECT_EQ(mem[1].peak_allocated_bytes, 4 * kMiB);
  EXPECT_EQ(mem[0].live_buffers_at_end, 0);
  EXPECT_EQ(mem[1].live_buffers_at_end, 0);

  // Role 1 freeing role 0's live buffer 2.
  const int c0 = m.Compute("fwd/b/compute", 10, {b0}, 0);
  m.Mem(c0, When::kStart, MemCategory::kActivations, 2 * kMiB, 2);
  const int c1 = m.Compute("bwd/b/compute", 10, {c0}, 1);
  m.Mem(c1, When::kEnd, MemCategory::kActivations, -2 * kMiB, 2);
  auto tl = RunEngine(m.schedule(), m.durations(), EngineOptions{});
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  auto bad = TrackMemory(m.schedule(), tl.value(), MemoryOptions{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("buffer 2 which is not live"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace shardscope::sim
