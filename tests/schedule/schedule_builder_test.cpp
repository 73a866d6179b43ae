#include "core/schedule/schedule_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <tuple>

#include "core/schedule/schedule_check.h"
#include "tests/schedule/test_model.h"

namespace shardscope::testing {
namespace {

int Find(const Schedule& s, const std::string& op_id) {
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (OpIdOf(s, s.ops[i]) == op_id) return static_cast<int>(i);
  }
  return -1;
}

int Count(const Schedule& s, OpType type) {
  return static_cast<int>(std::count_if(s.ops.begin(), s.ops.end(),
                                        [&](const ScheduleOp& o) { return o.type == type; }));
}

TEST(ScheduleBuilderTest, EveryVariantValidatesAndFreesEveryTransientAllocation) {
  std::vector<std::pair<std::string, Case>> cases;
  cases.emplace_back("default", MixedPrecisionCase());
  for (const char* ac : {"none", "full", "selective_op", "selective_op:2", "selective_layer:2"}) {
    Case s = MixedPrecisionCase();
    s.options.activation_checkpoint = *ParseActivationCheckpoint(ac, "test");
    cases.emplace_back(ac, s);
  }
  {
    Case s = MixedPrecisionCase();
    s.options.grad_accum = 3;
    cases.emplace_back("grad_accum", s);
    s.fsdp.requires_grad_sync = false;
    cases.emplace_back("grad_accum no sync", s);
    s.fsdp.reshard_after_backward = false;
    cases.emplace_back("grad_accum no sync no reshard", s);
  }
  {
    Case s = MixedPrecisionCase();
    s.dp_replicate = 2;
    cases.emplace_back("hsdp", s);
    s.fsdp.reshard_after_forward = false;
    cases.emplace_back("hsdp zero2", s);
  }
  {
    Case s = MixedPrecisionCase();
    s.fsdp.enable_offload = true;
    cases.emplace_back("offload", s);
  }
  {
    Case s = MixedPrecisionCase();
    s.tp = 2;
    cases.emplace_back("tp sp", s);
    s.options.sequence_parallel = false;
    cases.emplace_back("tp", s);
    s.cp = 2;
    s.world = 16;
    cases.emplace_back("tp cp", s);
  }
  {
    Case s = MixedPrecisionCase();
    s.fsdp.mix_precision = {};
    cases.emplace_back("fp32", s);
  }
  for (auto& [name, setup] : cases) {
    SCOPED_TRACE(name);
    Built b = BuildAll(setup);
    ASSERT_FALSE(b.schedule.ops.empty());
    const Status st = ValidateSchedule(b.schedule);
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(OpIdOf(b.schedule, b.schedule.ops.back()), "step/optimizer");
    // The builder records every op's phase (ValidateSchedule holds it to the op_id's).
    for (const ScheduleOp& op : b.schedule.ops)
      EXPECT_TRUE(op.id_phase.has_value()) << OpIdOf(b.schedule, op);
  }
}

// Bus bytes of all-gathers and reduce-scatters equal the closed form: (S−1)/S of the padded
// unit size, all-gathered twice for units resharded after forward (once for the root).
TEST(ScheduleBuilderTest, CommunicationVolumeMatchesClosedForm) {
  for (bool reshard : {true, false}) {
    SCOPED_TRACE(reshard);
    Case setup = MixedPrecisionCase();
    setup.fsdp.reshard_after_forward = reshard;
    Built b = BuildAll(setup);
    double ag = 0, rs = 0;
    for (const UnitPlan& u : b.plan.units) {
      int64_t numel = 0;
      for (const ParamPlan& p : u.params) numel += p.sharded_numel;
      const double s = 8;
      const double gathered = s * static_cast<double>(numel) * 2;  // bf16
      ag += (s - 1) / s * gathered * ((u.reshard_after_forward && !u.is_root) ? 2 : 1);
      rs += (s - 1) / s * s * static_cast<double>(numel) * 4;  // fp32 reduce
    }
    const StepTotals t = ComputeStepTotals(b.schedule, 0);
    EXPECT_DOUBLE_EQ(t.bus_bytes.at(OpType::kAllGather), ag);
    EXPECT_DOUBLE_EQ(t.bus_bytes.at(OpType::kReduceScatter), rs);
    EXPECT_EQ(t.count.count(OpType::kAllReduce), 0u);
  }
}

TEST(ScheduleBuilderTest, PersistentMemoryEqualsThePlansShardedBytes) {
  Case setup = MixedPrecisionCase();
  setup.fsdp.mix_precision = {};
  Built b = BuildAll(setup);
  const auto& init = b.schedule.initial_memory.at(0);
  EXPECT_EQ(init[static_cast<int>(MemCategory::kShardedParams)],
            b.plan.totals.sharded_bytes_per_rank);
  // Sharded gradients do not exist when the step starts (zero_grad set them to None); each
  // unit's reduction allocates its reduced shard, and together they equal the parameters
  // (fp32 parameters: grads the same size), all live when the optimizer runs.
  EXPECT_EQ(init[static_cast<int>(MemCategory::kShardedGrads)], 0);
  int64_t grads = 0, grads_at_optimizer = 0;
  for (const ScheduleOp& op : b.schedule.ops) {
    for (const MemoryEffect& m : EffectsOf(b.schedule, op)) {
      if (m.category != MemCategory::kShardedGrads) continue;
      if (m.bytes > 0) grads += m.bytes;
      if (m.bytes < 0) {
        EXPECT_EQ(op.type, OpType::kOptimizer) << OpIdOf(b.schedule, op);
        grads_at_optimizer -= m.bytes;
      }
    }
  }
  EXPECT_EQ(grads, b.plan.totals.sharded_bytes_per_rank);
  EXPECT_EQ(grads_at_optimizer, grads);
  // AdamW: two fp32 moments.
  EXPECT_EQ(init[static_cast<int>(MemCategory::kOptimizer)],
            2 * b.plan.totals.sharded_bytes_per_rank);
  EXPECT_EQ(init[static_cast<int>(MemCategory::kActivations)], 0);

  setup.options.optimizer = "sgd";
  Built sgd = BuildAll(setup);
  EXPECT_EQ(sgd.schedule.initial_memory[0][static_cast<int>(MemCategory::kOptimizer)], 0);
}

TEST(ScheduleBuilderTest, ForwardPrefetchDepthMovesAllGathersBeforeCompute) {
  auto built = [](int depth) {
    Case s = MixedPrecisionCase();
    s.fsdp.forward_prefetch_depth = depth;
    return BuildAll(s).schedule;
  };
  const Schedule d0 = built(0), d1 = built(1), d2 = built(2);
  // Depth 0: layer 1 is gathered only after layer 0 computed.
  EXPECT_GT(Find(d0, "fwd/model.layers.1/all_gather"), Find(d0, "fwd/model.layers.0/compute"));
  // Depth 1: prefetched from layer 0's pre-forward, before layer 0 computes.
  EXPECT_LT(Find(d1, "fwd/model.layers.1/all_gather"), Find(d1, "fwd/model.layers.0/compute"));
  EXPECT_GT(Find(d1, "fwd/model.layers.2/all_gather"), Find(d1, "fwd/model.layers.0/compute"));
  // Depth 2: two layers ahead.
  EXPECT_LT(Find(d2, "fwd/model.layers.2/all_gather"), Find(d2, "fwd/model.layers.0/compute"));
  // A unit's copy-out (just before its compute on the compute lane) waits for its own
  // all-gather.
  const int ag = Find(d1, "fwd/model.layers.1/all_gather");
  EXPECT_EQ(NextOnLane(d1, Find(d1, "fwd/model.layers.1/copy_out")),
            Find(d1, "fwd/model.layers.1/compute"));
  const auto& deps = DepsOf(d1, d1.ops[Find(d1, "fwd/model.layers.1/copy_out")]);
  EXPECT_NE(std::find(deps.begin(), deps.end(), ag), deps.end());
}

TEST(ScheduleBuilderTest, BackwardPrefetchAndOneReduceScatterInFlight) {
  Built b = BuildAll(MixedPrecisionCase());
  const Schedule& s = b.schedule;
  EXPECT_LT(Find(s, "bwd/model.layers.2/all_gather"), Find(s, "bwd/model.layers.3/compute"));
  // Layer 1's backward (its copy-out first) cannot start before layer 3's reduce-scatter is
  // done.
  const int rs3 = Find(s, "bwd/model.layers.3/reduce_scatter");
  const auto& deps = DepsOf(s, s.ops[Find(s, "bwd/model.layers.1/copy_out")]);
  EXPECT_NE(std::find(deps.begin(), deps.end(), rs3), deps.end());
  // The root: gathered once, in forward, never in backward; reduced last.
  EXPECT_GE(Find(s, "fwd/root/all_gather"), 0);
  EXPECT_EQ(Find(s, "bwd/root/all_gather"), -1);
  EXPECT_GE(Find(s, "fwd/root/compute:1"), 0);  // norm + head + loss after the layers
  const int wait = Find(s, "step/wait_reductions");
  for (int d : {Find(s, "bwd/root/reduce_scatter"), Find(s, "bwd/model.layers.0/reduce_scatter")}) {
    EXPECT_NE(std::find(DepsOf(s, s.ops[wait]).begin(), DepsOf(s, s.ops[wait]).end(), d),
              DepsOf(s, s.ops[wait]).end());
  }
}

TEST(ScheduleBuilderTest, FullCheckpointingSavesLessActivationMemoryThanNone) {
  auto peak = [](const char* mode) {
    Case s = MixedPrecisionCase();
    s.options.activation_checkpoint = *ParseActivationCheckpoint(mode, "test");
    Built b = BuildAll(s);
    return std::make_pair(IssueOrderPeak(b.schedule, 0), ComputeStepTotals(b.schedule, 0));
  };
  const auto [none, none_t] = peak("none");
  const auto [full, full_t] = peak("full");
  const auto [sel, sel_t] = peak("selective_op");
  const int act = static_cast<int>(MemCategory::kActivations);
  EXPECT_LT(full.max_by_category[act], sel.max_by_category[act]);
  EXPECT_LT(sel.max_by_category[act], none.max_by_category[act]);
  EXPECT_EQ(none_t.recompute_flops, 0);
  EXPECT_GT(full_t.recompute_flops, 0);
  EXPECT_DOUBLE_EQ(full_t.fwd_flops, none_t.fwd_flops);

  // selective_layer:2 checkpoints every second block, counted from 1 as torchtitan does.
  Case c = MixedPrecisionCase();
  c.options.activation_checkpoint = *ParseActivationCheckpoint("selective_layer:2", "test");
  const Schedule layer = BuildAll(c).schedule;
  EXPECT_EQ(Find(layer, "bwd/model.layers.0/recompute"), -1);
  EXPECT_GE(Find(layer, "bwd/model.layers.1/recompute"), 0);
  EXPECT_EQ(Find(layer, "bwd/model.layers.2/recompute"), -1);
  EXPECT_GE(Find(layer, "bwd/model.layers.3/recompute"), 0);
}

// torchtitan's op policy (selective_op:2) recomputes every second matmul of a block instead of
// saving its output: less activation memory than saving them all, more recompute work.
TEST(ScheduleBuilderTest, SelectiveOpEverySecondMatmulRecomputesHalfTheProjections) {
  auto build = [](const char* mode) {
    Case s = MixedPrecisionCase();
    s.options.activation_checkpoint = *ParseActivationCheckpoint(mode, "test");
    Built b = BuildAll(s);
    return std::make_tuple(IssueOrderPeak(b.schedule, 0), ComputeStepTotals(b.schedule, 0),
                           b.schedule);
  };
  const auto [all, all_t, all_s] = build("selective_op");
  const auto [half, half_t, half_s] = build("selective_op:2");
  const int act = static_cast<int>(MemCategory::kActivations);
  EXPECT_LT(half.max_by_category[act], all.max_by_category[act]);
  EXPECT_GT(half_t.recompute_flops, all_t.recompute_flops);
  EXPECT_DOUBLE_EQ(half_t.fwd_flops, all_t.fwd_flops);
  // In a Llama block the 2nd, 4th and 6th matmuls (k_proj, o_proj, up_proj) are recomputed.
  int recomputed_linears = 0;
  for (const ScheduleOp& op : half_s.ops) {
    if (UnitOf(half_s, op) != "model.layers.0" || OpIdOf(half_s, op).find("bwd/") != 0) continue;
    for (const ComputeItem& item : op.items) {
      if (item.recompute && item.kind == OpKind::kLinear) {
        ++recomputed_linears;
        const std::string& name = half_s.modules[item.module];
        EXPECT_TRUE(name.ends_with("k_proj") || name.ends_with("o_proj") ||
                    name.ends_with("up_proj"))
            << name;
      }
    }
  }
  EXPECT_EQ(recomputed_linears, 3);
}

TEST(ScheduleBuilderTest, GradientAccumulationMultipliesComputeAndReductions) {
  Case one = MixedPrecisionCase();
  Case three = MixedPrecisionCase();
  three.options.grad_accum = 3;
  const Schedule s1 = BuildAll(one).schedule, s3 = BuildAll(three).schedule;
  const StepTotals t1 = ComputeStepTotals(s1, 0), t3 = ComputeStepTotals(s3, 0);
  EXPECT_DOUBLE_EQ(t3.fwd_flops, 3 * t1.fwd_flops);
  EXPECT_DOUBLE_EQ(t3.bwd_flops, 3 * t1.bwd_flops);
  EXPECT_EQ(Count(s3, OpType::kReduceScatter), 3 * Count(s1, OpType::kReduceScatter));
  EXPECT_GE(Find(s3, "mb2/bwd/model.layers.0/reduce_scatter"), 0);
  EXPECT_EQ(Count(s3, OpType::kOptimizer), 1);

  three.fsdp.requires_grad_sync = false;
  const Schedule nosync = BuildAll(three).schedule;
  EXPECT_EQ(Count(nosync, OpType::kReduceScatter), Count(s1, OpType::kReduceScatter));
  EXPECT_EQ(Find(nosync, "mb0/bwd/model.layers.0/reduce_scatter"), -1);
  // The unsharded fp32 accumulator outlives micro-steps: more unsharded grads at the peak.
  const int g = static_cast<int>(MemCategory::kUnshardedGrads);
  EXPECT_GT(IssueOrderPeak(nosync, 0).max_by_category[g], IssueOrderPeak(s3, 0).max_by_category[g]);

  three.fsdp.reshard_after_backward = false;
  const Schedule keep = BuildAll(three).schedule;
  EXPECT_LT(Count(keep, OpType::kAllGather), Count(nosync, OpType::kAllGather));
}

TEST(ScheduleBuilderTest, HsdpAddsAllReducesOverTheReplicateGroup) {
  Case setup = MixedPrecisionCase();
  setup.dp_replicate = 2;
  Built b = BuildAll(setup);
  const Schedule& s = b.schedule;
  EXPECT_EQ(Count(s, OpType::kAllReduce), Count(s, OpType::kReduceScatter));
  const ScheduleOp& ar = s.ops[Find(s, "bwd/model.layers.0/all_reduce")];
  EXPECT_EQ(s.groups[ar.group].ranks, (std::vector<int>{0, 4}));
  const ScheduleOp& rs = s.ops[Find(s, "bwd/model.layers.0/reduce_scatter")];
  EXPECT_EQ(s.groups[rs.group].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(ar.bytes * 4, rs.bytes);
  const std::span<const int> ar_deps = DepsOf(s, ar);
  EXPECT_NE(std::find(ar_deps.begin(), ar_deps.end(), Find(s, "bwd/model.layers.0/reduce_scatter")),
            ar_deps.end());
  EXPECT_EQ(NameOf(s, ar), "ncclAllReduce");
}

TEST(ScheduleBuilderTest, TensorParallelCollectivesBlockTheComputeLane) {
  Case setup = MixedPrecisionCase();
  setup.tp = 2;
  Built sp = BuildAll(setup);
  int rs = 0, ag = 0;
  for (const ScheduleOp& op : sp.schedule.ops) {
    if (OpIdOf(sp.schedule, op).rfind("fwd/model.layers.0/tp_", 0) != 0) continue;
    EXPECT_EQ(op.lane, Lane::kCompute);
    EXPECT_EQ(sp.schedule.groups[op.group].ranks, (std::vector<int>{0, 1}));
    rs += op.type == OpType::kReduceScatter;
    ag += op.type == OpType::kAllGather;
  }
  EXPECT_EQ(rs, 2);  // after o_proj and down_proj
  EXPECT_EQ(ag, 2);  // before q/k/v and gate/up
  setup.options.sequence_parallel = false;
  Built no_sp = BuildAll(setup);
  EXPECT_GE(Find(no_sp.schedule, "fwd/model.layers.0/tp_all_reduce:1"), 0);
  EXPECT_EQ(Find(no_sp.schedule, "fwd/model.layers.0/tp_all_reduce:2"), -1);
}

TEST(ScheduleBuilderTest, OffloadCopiesParamsInAndGradsOutAndStepsOnTheHost) {
  Case setup = MixedPrecisionCase();
  setup.fsdp.enable_offload = true;
  Built b = BuildAll(setup);
  const Schedule& s = b.schedule;
  EXPECT_LT(Find(s, "fwd/model.layers.0/h2d"), Find(s, "fwd/model.layers.0/copy_in"));
  EXPECT_GT(Find(s, "bwd/model.layers.0/d2h"), Find(s, "bwd/model.layers.0/reduce_scatter"));
  EXPECT_TRUE(s.ops.back().on_host);
  EXPECT_EQ(s.initial_memory[0][static_cast<int>(MemCategory::kShardedParams)], 0);
  EXPECT_EQ(s.initial_host_memory[0][static_cast<int>(MemCategory::kShardedParams)],
            b.plan.totals.sharded_bytes_per_rank);
}

TEST(ScheduleBuilderTest, RefusesWhatItDoesNotModel) {
  Built b = BuildAll(MixedPrecisionCase());
  ScheduleOptions o;
  o.world_size = 8;
  o.dp_shard = 8;
  o.pp = 2;
  o.dp_shard = 4;
  o.pp_schedule = "zero_bubble";
  Result<Schedule> pp = BuildSchedule(b.tree, b.plan, o);
  ASSERT_FALSE(pp.ok());
  EXPECT_NE(pp.status().message().find("parallelism.pp_schedule = 'zero_bubble'"),
            std::string::npos);
  EXPECT_EQ(pp.status().code(), ErrorCode::kInvalidInput);
  o.pp_schedule = "1f1b";
  o.pp_virtual_stages = 2;
  Result<Schedule> virt = BuildSchedule(b.tree, b.plan, o);
  ASSERT_FALSE(virt.ok());
  EXPECT_NE(virt.status().message().find("parallelism.pp_virtual_stages = 2"), std::string::npos);
  o.pp_virtual_stages = 1;
  o.pp_microbatches = 2;
  o.local_batch = 3;
  Result<Schedule> split = BuildSchedule(b.tree, b.plan, o);
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("training.local_batch = 3"), std::string::npos);
  o.local_batch = 1;
  o.pp_microbatches = 1;

  o.pp = 1;
  o.dp_shard = 8;
  o.optimizer = "lion";
  Result<Schedule> opt = BuildSchedule(b.tree, b.plan, o);
  ASSERT_FALSE(opt.ok());
  EXPECT_NE(opt.status().message().find("training.optimizer = 'lion'"), std::string::npos);

  o.optimizer = "adamw";
  o.dp_shard = 4;
  Result<Schedule> world = BuildSchedule(b.tree, b.plan, o);
  ASSERT_FALSE(world.ok());
  EXPECT_NE(world.status().message().find("does not equal the world size 8"), std::string::npos);

  o.dp_shard = 2;
  o.dp_replicate = 4;  // the plan shards over 8 ranks
  Result<Schedule> mismatch = BuildSchedule(b.tree, b.plan, o);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("plan and schedule options disagree"),
            std::string::npos);
}

}  // namespace
}  // namespace shardscope::testing

namespace shardscope::testing {
namespace {

// Prints the default schedule when SHARDSCOPE_DUMP_SCHEDULE is set (a debugging aid); always
// checks the listing names every op.
TEST(ScheduleBuilderTest, FormatListsEveryOp) {
  Case c = MixedPrecisionCase();
  if (const char* ac = std::getenv("SHARDSCOPE_DUMP_AC")) {
    c.options.activation_checkpoint = *ParseActivationCheckpoint(ac, "env");
  }
  if (std::getenv("SHARDSCOPE_DUMP_TP")) c.tp = 2;
  Built b = BuildAll(c, TinyShape{2});
  const std::string text = FormatSchedule(b.schedule, 0);
  EXPECT_EQ(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), b.schedule.ops.size());
  if (std::getenv("SHARDSCOPE_DUMP_SCHEDULE")) std::printf("%s", text.c_str());
}

}  // namespace
}  // namespace shardscope::testing

namespace shardscope::testing {
namespace {

Case Pipeline(const std::string& schedule, int virtual_stages) {
  Case c = MixedPrecisionCase();
  c.pp = 2;
  c.options.pp_schedule = schedule;
  c.options.pp_virtual_stages = virtual_stages;
  c.options.pp_microbatches = 4;
  c.options.local_batch = 4;
  return c;
}

TEST(SchedulePipelineTest, EverySchedulesValidatesWithOneRolePerStage) {
  for (auto [name, v] : {std::pair{"1f1b", 1}, {"gpipe", 1}, {"interleaved_1f1b", 2}}) {
    SCOPED_TRACE(name);
    Built b = BuildAll(Pipeline(name, v));
    const Schedule& s = b.schedule;
    ASSERT_EQ(s.roles.size(), 2u);
    EXPECT_EQ(s.roles[1].rank, 4);
    EXPECT_EQ(s.roles[1].ranks_like, 4);
    const Status st = ValidateSchedule(s);
    EXPECT_TRUE(st.ok()) << st.message();
    for (const ScheduleOp& op : s.ops) EXPECT_TRUE(op.id_phase.has_value()) << OpIdOf(s, op);
    int sends = 0;
    for (const ScheduleOp& op : s.ops) sends += op.type == OpType::kSend;
    // Every micro-batch crosses each of the 2·v − 1 chunk boundaries twice (fwd + bwd).
    EXPECT_EQ(sends, 4 * (2 * v - 1) * 2);
  }
}

// grad_accum passes of pp_microbatches each (torchtitan's one schedule.step() per accumulation
// step): every unit reduces its gradients at the end of each pass, not once per step.
TEST(SchedulePipelineTest, EachAccumulationStepIsAPassThatReduces) {
  Case c = Pipeline("1f1b", 1);
  c.options.grad_accum = 2;
  Built b = BuildAll(c);
  const Schedule& s = b.schedule;
  EXPECT_TRUE(ValidateSchedule(s).ok()) << ValidateSchedule(s).message();
  std::map<std::string, int> reductions;  // micro-batch of each stage-0 reduce-scatter
  for (const ScheduleOp& op : s.ops) {
    if (op.role == 0 && op.type == OpType::kReduceScatter) {
      const std::string id = OpIdOf(s, op);
      ++reductions[id.substr(0, id.find('/'))];
    }
  }
  // Stage 0's units (layers 0-1 and its chunk root) reduce after micro-batches 3 and 7.
  ASSERT_EQ(reductions.size(), 2u);
  EXPECT_EQ(reductions["mb3"], 3);
  EXPECT_EQ(reductions["mb7"], 3);
}

// A pass's last micro-batch runs its backward without sync too; the stage then calls each
// group's post_backward (torch.distributed.pipelining's run_post_backward): layer 1's
// reduction and reshard wait for the chunk root's backward (the embedding's), which runs after
// layer 0's, where FSDP2's own hooks would reduce layer 1 while layer 0 computes.
TEST(SchedulePipelineTest, ReductionsWaitForTheChunksLastBackward) {
  Built b = BuildAll(Pipeline("1f1b", 1));
  const Schedule& s = b.schedule;
  auto find = [&](const std::string& id) {
    for (size_t i = 0; i < s.ops.size(); ++i) {
      if (s.ops[i].role == 0 && OpIdOf(s, s.ops[i]) == id) return static_cast<int>(i);
    }
    return -1;
  };
  const int layer0 = find("mb3/bwd/model.layers.0/compute");
  const int root = find("mb3/bwd/root.chunk0/compute");
  const int copy_in = find("mb3/bwd/model.layers.1/reduce_copy_in");
  const int reduce = find("mb3/bwd/model.layers.1/reduce_scatter");
  ASSERT_GE(layer0, 0);
  ASSERT_GE(root, 0);
  ASSERT_GE(copy_in, 0);
  ASSERT_GE(reduce, 0);
  EXPECT_GT(root, layer0);
  EXPECT_GT(copy_in, root);  // pushed on the compute lane after the root's backward
  EXPECT_GT(reduce, copy_in);
}

TEST(SchedulePipelineTest, OneFOneBStagesSplitTheModelAndWaitOnEachOther) {
  Built b = BuildAll(Pipeline("1f1b", 1));
  const Schedule& s = b.schedule;
  auto find = [&](int role, const std::string& id) {
    for (size_t i = 0; i < s.ops.size(); ++i) {
      if (s.ops[i].role == role && OpIdOf(s, s.ops[i]) == id) return static_cast<int>(i);
    }
    return -1;
  };
  // Stage 0 runs the embedding and layers 0-1, stage 1 layers 2-3, norm, head and loss.
  EXPECT_GE(find(0, "mb0/fwd/model.layers.1/compute"), 0);
  EXPECT_EQ(find(1, "mb0/fwd/model.layers.1/compute"), -1);
  EXPECT_GE(find(1, "mb0/fwd/model.layers.2/compute"), 0);
  // The loss is an op of its own (the loss region), after the norm and head's.
  bool stage1_has_loss = false;
  const int loss = find(1, "mb0/fwd/root.chunk1/compute:1");
  ASSERT_GE(loss, 0);
  for (const ComputeItem& item : s.ops[loss].items) {
    stage1_has_loss = stage1_has_loss || item.kind == OpKind::kLoss;
  }
  EXPECT_TRUE(stage1_has_loss);
  // Stage 1's first forward waits for stage 0's send through its receive.
  const int recv = find(1, "mb0/fwd/chunk1/recv");
  ASSERT_GE(recv, 0);
  const std::span<const int> recv_deps = DepsOf(s, s.ops[recv]);
  EXPECT_EQ(std::vector<int>(recv_deps.begin(), recv_deps.end()),
            (std::vector<int>{find(0, "mb0/fwd/chunk0/send")}));
  // 1F1B on stage 0: two forwards before the first backward.
  EXPECT_LT(find(0, "mb1/fwd/model.layers.0/compute"), find(0, "mb0/bwd/model.layers.0/compute"));
  EXPECT_GT(find(0, "mb2/fwd/model.layers.0/compute"), find(0, "mb0/bwd/model.layers.1/compute"));
  // Gradients are reduced once, after the last micro-batch.
  EXPECT_EQ(find(0, "mb0/bwd/model.layers.0/reduce_scatter"), -1);
  EXPECT_GE(find(0, "mb3/bwd/model.layers.0/reduce_scatter"), 0);
  // Stage 0 keeps more micro-batches in flight, so it holds more activations at its peak.
  const int act = static_cast<int>(MemCategory::kActivations);
  EXPECT_GT(IssueOrderPeak(s, 0).max_by_category[act], IssueOrderPeak(s, 1).max_by_category[act]);
  // The plan's per-rank figure is a rank's own: the stage holding the most (it was the sum of
  // the stages, pp times a rank's on an even split).
  int64_t sharded = 0;
  for (const auto& m : s.initial_memory)
    sharded = std::max(sharded, m[static_cast<int>(MemCategory::kShardedParams)]);
  EXPECT_EQ(sharded, b.plan.totals.sharded_bytes_per_rank);
}

}  // namespace
}  // namespace shardscope::testing

namespace shardscope::testing {
namespace {

TEST(ScheduleBuilderTest, ExpertUnitsShardOverTheExpertMeshWithAllToAlls) {
  Case c = MixedPrecisionCase();
  c.ep = 4;
  c.fsdp.edp_shard_size = 2;
  Built b = BuildTree(c, TinyMoe());
  ASSERT_GE(b.plan.FindUnit("model.layers.0.mlp.experts"), 0);
  const Schedule& s = b.schedule;
  const Status st = ValidateSchedule(s);
  EXPECT_TRUE(st.ok()) << st.message();
  const int ag = Find(s, "fwd/model.layers.0.mlp.experts/all_gather");
  ASSERT_GE(ag, 0);
  EXPECT_EQ(s.groups[s.ops[ag].group].ranks, (std::vector<int>{0, 4}));
  const int dense = Find(s, "fwd/model.layers.0/all_gather");
  EXPECT_EQ(s.groups[s.ops[dense].group].size(), 8);
  const int dispatch = Find(s, "fwd/model.layers.0.mlp.experts/ep_dispatch");
  ASSERT_GE(dispatch, 0);
  EXPECT_EQ(s.ops[dispatch].type, OpType::kAllToAll);
  EXPECT_EQ(s.groups[s.ops[dispatch].group].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_GE(Find(s, "bwd/model.layers.1.mlp.experts/ep_combine"), 0);
  // The experts unit runs inside its block: the block's compute is split around it.
  EXPECT_LT(Find(s, "fwd/model.layers.0/compute"), dispatch);
  EXPECT_GT(Find(s, "fwd/model.layers.1/compute"), dispatch);
}

// torchtitan's op-level SAC keeps aten.mm outputs, not the experts' aten._grouped_mm: under
// selective_op the experts' backward recomputes their forward first; without checkpointing
// it does not.
TEST(ScheduleBuilderTest, SelectiveOpRecomputesTheRoutedExperts) {
  for (const char* ac : {"none", "selective_op"}) {
    SCOPED_TRACE(ac);
    Case c = MixedPrecisionCase();
    c.ep = 4;
    c.fsdp.edp_shard_size = 2;
    c.options.activation_checkpoint = *ParseActivationCheckpoint(ac, "test");
    Built b = BuildTree(c, TinyMoe());
    const int bwd = Find(b.schedule, "bwd/model.layers.0.mlp.experts/compute");
    ASSERT_GE(bwd, 0);
    int recomputed = 0;
    for (const ComputeItem& item : b.schedule.ops[bwd].items) {
      recomputed += item.kind == OpKind::kExperts && item.recompute ? 1 : 0;
    }
    EXPECT_EQ(recomputed, std::string(ac) == "none" ? 0 : 1);
  }
}

}  // namespace
}  // namespace shardscope::testing

namespace shardscope::testing {
namespace {

TEST(ScheduleBuilderTest, ReplicateParamsAreAllReducedWholeOverTheDataParallelGroup) {
  Case c = MixedPrecisionCase();
  c.dp_replicate = 2;
  c.fsdp.replicate_params = {"model.norm.weight"};
  Built b = BuildAll(c);
  const Schedule& s = b.schedule;
  const Status st = ValidateSchedule(s);
  EXPECT_TRUE(st.ok()) << st.message();
  const int ar = Find(s, "bwd/root/all_reduce_replicate");
  ASSERT_GE(ar, 0);
  EXPECT_EQ(s.groups[s.ops[ar].group].size(), 8);
  EXPECT_EQ(s.ops[ar].bytes, 256 * 4);  // the whole norm weight in the fp32 reduce dtype
  // Kept whole on every rank: persistent params exceed the plan's sharded bytes by it.
  EXPECT_EQ(s.initial_memory[0][static_cast<int>(MemCategory::kShardedParams)],
            b.plan.totals.sharded_bytes_per_rank + 256 * 4);
}

}  // namespace
}  // namespace shardscope::testing
