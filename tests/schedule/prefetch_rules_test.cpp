// FSDP2's prefetch and reshard rules as the schedule realises them (torch 2.15
// _fsdp_param_group.py / _fsdp_state.py): the forward all-gather output kept until the next
// copy-out, additive forward lists, backward lists replacing the implicit one-ahead prefetch,
// the root's pre-backward prefetch, host run-ahead issue, and reshard_after_forward = d.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/schedule/schedule_builder.h"
#include "core/schedule/schedule_check.h"
#include "core/schedule/unit_sizes.h"
#include "tests/schedule/test_model.h"

namespace shardscope::testing {
namespace {

int Index(const Schedule& s, const std::string& op_id) {
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (OpIdOf(s, s.ops[i]) == op_id) return static_cast<int>(i);
  }
  return -1;
}

bool DependsOn(const Schedule& s, int op, int dep) {
  const auto& d = DepsOf(s, s.ops[op]);
  return std::find(d.begin(), d.end(), dep) != d.end();
}

// Unsharded-parameter buffers of the layers that are live while op `at` runs, replaying the
// memory effects in program order (issue order: what the caching allocator counts).
int LiveLayerBuffers(const Schedule& s, int at) {
  std::vector<char> live(s.buffers.size(), 0);
  for (int i = 0; i <= at; ++i) {
    for (const MemoryEffect& m : EffectsOf(s, s.ops[i])) {
      if (i == at && m.when == MemoryEffect::When::kEnd) continue;
      live[m.buffer] = m.bytes > 0;
    }
  }
  int n = 0;
  for (const Buffer& b : s.buffers) {
    if (live[b.id] && b.category == MemCategory::kUnshardedParams &&
        b.unit.starts_with("model.layers.") && b.bytes > 1 << 20) {
      ++n;
    }
  }
  return n;
}

Schedule WithDepths(int forward, int backward) {
  Case c = MixedPrecisionCase();
  c.fsdp.forward_prefetch_depth = forward;
  c.fsdp.backward_prefetch_depth = backward;
  Built b = BuildAll(c);
  EXPECT_TRUE(ValidateSchedule(b.schedule).ok()) << ValidateSchedule(b.schedule).message();
  return b.schedule;
}

TEST(PrefetchRulesTest, ForwardUnitHoldsTwoBuffersPlusItsDepth) {
  for (int f = 0; f <= 2; ++f) {
    const Schedule s = WithDepths(f, 1);
    // Layer 1 computing: its own parameters, the all-gather output FSDP2 keeps until layer
    // 2's copy-out, and the f units its list prefetched.
    EXPECT_EQ(LiveLayerBuffers(s, Index(s, "fwd/model.layers.1/compute")), 2 + f) << "depth " << f;
  }
}

TEST(PrefetchRulesTest, TheKeptOutputIsFreedByTheNextCopyOut) {
  Case c = MixedPrecisionCase();
  Built b = BuildAll(c);
  const Schedule& s = b.schedule;
  const int out1 = Index(s, "fwd/model.layers.1/copy_out");
  const int out2 = Index(s, "fwd/model.layers.2/copy_out");
  // The copy-out allocates the kept output as it starts (the prefetch its pre-forward issues
  // next allocates at its end).
  auto kept_by = [&](int copy_out) {
    for (const MemoryEffect& m : EffectsOf(s, s.ops[copy_out])) {
      if (m.bytes > 0 && m.when == MemoryEffect::When::kStart) return m.buffer;
    }
    return -1;
  };
  int kept = kept_by(out1);
  ASSERT_GE(kept, 0);
  EXPECT_EQ(s.buffers[kept].free_op, out2);
  EXPECT_EQ(s.buffers[kept].free_when, MemoryEffect::When::kStart);
  // The last one is released by the root's post-forward, at the end of forward: after the
  // loss, its own op (compute:2), which transformers computes inside the root.
  kept = kept_by(Index(s, "fwd/model.layers.3/copy_out"));
  ASSERT_GE(kept, 0);
  EXPECT_EQ(OpIdOf(s, s.ops[s.buffers[kept].free_op]), "fwd/root/compute:2");
}

TEST(PrefetchRulesTest, BackwardListReplacesTheImplicitPrefetchAndDepthZeroIsTheDefault) {
  const Schedule d0 = WithDepths(1, 0), d1 = WithDepths(1, 1), d2 = WithDepths(1, 2);
  // Depth 0 is FSDP2's implicit one-ahead prefetch: layer 1 is gathered from layer 2's
  // pre-backward, before layer 2 computes, exactly as with depth 1.
  for (const Schedule* s : {&d0, &d1}) {
    EXPECT_LT(Index(*s, "bwd/model.layers.1/all_gather"), Index(*s, "bwd/model.layers.2/compute"));
    EXPECT_GT(Index(*s, "bwd/model.layers.0/all_gather"), Index(*s, "bwd/model.layers.2/compute"));
    EXPECT_EQ(LiveLayerBuffers(*s, Index(*s, "bwd/model.layers.2/compute")), 2);
  }
  // Depth 2 replaces it: two ahead, 1 + 2 buffers.
  EXPECT_LT(Index(d2, "bwd/model.layers.0/all_gather"), Index(d2, "bwd/model.layers.2/compute"));
  EXPECT_EQ(LiveLayerBuffers(d2, Index(d2, "bwd/model.layers.2/compute")), 3);
}

TEST(PrefetchRulesTest, RootPrefetchesTheLastLayerAsBackwardBegins) {
  const Schedule s = WithDepths(1, 1);
  // Issued from the root's pre-backward hook: before the root's own backward (head, loss)
  // and allocated right after the last forward op, so it is live during the loss backward.
  const int ag = Index(s, "bwd/model.layers.3/all_gather");
  ASSERT_GE(ag, 0);
  EXPECT_LT(ag, Index(s, "bwd/root/compute"));
  const Buffer& params = s.buffers[s.ops[ag].collective.output_buffer];
  EXPECT_EQ(OpIdOf(s, s.ops[params.alloc_op]), "fwd/root/compute:2");  // the loss, the last one
  EXPECT_FALSE(DependsOn(s, Index(s, "bwd/model.layers.3/copy_in"), Index(s, "bwd/root/compute")));
}

TEST(PrefetchRulesTest, HostRunsAheadSoAllGathersWaitOnlyForCopyOuts) {
  const Schedule s = WithDepths(0, 1);
  // No forward list: layer 2's all-gather is issued at its own pre-forward, but its streams
  // wait only for layer 0's copy-out (whose output layer 1's copy-out released), not for
  // layer 1's compute: FSDP2 overlaps it with layer 1 anyway.
  const int copy_in = Index(s, "fwd/model.layers.2/copy_in");
  EXPECT_TRUE(DependsOn(s, copy_in, Index(s, "fwd/model.layers.0/copy_out")));
  EXPECT_FALSE(DependsOn(s, copy_in, Index(s, "fwd/model.layers.1/compute")));
  // Backward: the streams wait for the latest copy-out, the prefetching unit's own.
  EXPECT_TRUE(DependsOn(s, Index(s, "bwd/model.layers.1/copy_in"),
                        Index(s, "bwd/model.layers.2/copy_out")));
  // A reduce-scatter still follows the compute before its hook.
  EXPECT_TRUE(DependsOn(s, Index(s, "bwd/model.layers.2/reduce_scatter"),
                        Index(s, "bwd/model.layers.2/reduce_copy_in")));
}

TEST(PrefetchRulesTest, ReshardAfterForwardToTwoRanks) {
  Case c = MixedPrecisionCase();
  c.fsdp.reshard_after_forward_ranks = 2;
  Built b = BuildAll(c);
  const Schedule& s = b.schedule;
  ASSERT_TRUE(ValidateSchedule(s).ok()) << ValidateSchedule(s).message();
  const UnitPlan& unit = b.plan.units[b.plan.FindUnit("model.layers.1")];
  EXPECT_EQ(unit.reshard_after_forward_ranks, 2);
  const UnitSizes z = ComputeUnitSizes(unit);
  // Forward gathers over the 8 ranks of the shard group, backward over 2.
  const ScheduleOp& fwd = s.ops[Index(s, "fwd/model.layers.1/all_gather")];
  const ScheduleOp& bwd = s.ops[Index(s, "bwd/model.layers.1/all_gather")];
  EXPECT_EQ(s.groups[fwd.group].size(), 8);
  ASSERT_GE(bwd.group, 0);
  EXPECT_EQ(s.groups[bwd.group].size(), 2);
  EXPECT_EQ(s.groups[bwd.group].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(bwd.bytes, z.gathered_bytes);
  EXPECT_EQ(bwd.collective.count * 2 * DTypeBytes(bwd.collective.dtype), z.gathered_bytes);
  // The 1/2 slice lives from the end of the unit's forward to its backward copy-out, and the
  // backward all-gather waits for that reshard.
  const int end = Index(s, "fwd/model.layers.1/compute");
  int slice = -1;
  for (const MemoryEffect& m : EffectsOf(s, s.ops[end])) {
    if (m.bytes == z.gathered_bytes / 2) slice = m.buffer;
  }
  ASSERT_GE(slice, 0);
  EXPECT_EQ(s.buffers[slice].category, MemCategory::kUnshardedParams);
  EXPECT_EQ(OpIdOf(s, s.ops[s.buffers[slice].free_op]), "bwd/model.layers.1/copy_out");
  EXPECT_TRUE(DependsOn(s, Index(s, "bwd/model.layers.1/copy_in"), end));
  // No cast: the slice is already in param_dtype.
  EXPECT_EQ(s.ops[Index(s, "bwd/model.layers.1/copy_in")].bytes, z.gathered_bytes / 2);
}

TEST(PrefetchRulesTest, ReshardIntResolvesAsFsdp2Does) {
  Case one = MixedPrecisionCase();
  one.fsdp.reshard_after_forward_ranks = 1;  // FSDP2: the same as false
  Built b1 = BuildAll(one);
  const UnitPlan& u1 = b1.plan.units[b1.plan.FindUnit("model.layers.0")];
  EXPECT_FALSE(u1.reshard_after_forward);
  EXPECT_EQ(u1.reshard_after_forward_ranks, 0);
  Case all = MixedPrecisionCase();
  all.fsdp.reshard_after_forward_ranks = 8;  // the shard size: the same as true
  Built b8 = BuildAll(all);
  const UnitPlan& u8 = b8.plan.units[b8.plan.FindUnit("model.layers.0")];
  EXPECT_TRUE(u8.reshard_after_forward);
  EXPECT_EQ(u8.reshard_after_forward_ranks, 0);
  EXPECT_FALSE(b8.plan.root().reshard_after_forward);
}

}  // namespace
}  // namespace shardscope::testing
