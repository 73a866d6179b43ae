// The schedule as a backend executes it: the buffer table, typed collectives, and one rank's
// own schedule (ScheduleOptions::rank) checked against the device meshes of core/mesh and
// across the ranks of every group.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/mesh/mesh_context.h"
#include "core/schedule/schedule_builder.h"
#include "core/schedule/schedule_check.h"
#include "tests/schedule/test_model.h"

namespace shardscope::testing {
namespace {

const ScheduleOp& Op(const Schedule& s, const std::string& op_id) {
  for (const ScheduleOp& op : s.ops) {
    if (OpIdOf(s, op) == op_id) return op;
  }
  ADD_FAILURE() << "no op " << op_id;
  static const ScheduleOp none;
  return none;
}

int64_t ShardNumel(const Plan& plan, const std::string& fqn) {
  int64_t n = 0;
  for (const ParamPlan& p : plan.units[plan.FindUnit(fqn)].params) n += p.sharded_numel;
  return n;
}

TEST(BufferTableTest, EveryBufferKnowsItsDtypeElementsOwnerAndSites) {
  Built b = BuildAll(MixedPrecisionCase());
  const Schedule& s = b.schedule;
  ASSERT_TRUE(ValidateSchedule(s).ok()) << ValidateSchedule(s).message();
  const int64_t shard = ShardNumel(b.plan, "model.layers.0");
  ASSERT_GT(shard, 0);

  const ScheduleOp& ag = Op(s, "fwd/model.layers.0/all_gather");
  EXPECT_EQ(ag.collective.dtype, DType::kBFloat16);
  EXPECT_EQ(ag.collective.count, shard);
  EXPECT_EQ(ag.collective.reduce, CollectiveReduce::kNone);
  ASSERT_GE(ag.collective.output_buffer, 0);
  EXPECT_EQ(ag.collective.input_buffer, ag.collective.output_buffer);  // in place, as FSDP2
  const Buffer& gathered = s.buffers[ag.collective.output_buffer];
  EXPECT_EQ(gathered.category, MemCategory::kUnshardedParams);
  EXPECT_EQ(gathered.dtype, DType::kBFloat16);
  EXPECT_EQ(gathered.numel, 8 * shard);
  EXPECT_EQ(gathered.unit, "model.layers.0");
  // Allocated where the host allocates it, in program order: at the end of the compute-lane op
  // before layer 0's pre-forward hook (the root's embedding), not when the copy-in runs.
  EXPECT_EQ(OpIdOf(s, s.ops[gathered.alloc_op]), "fwd/root/compute");
  EXPECT_EQ(gathered.alloc_when, MemoryEffect::When::kEnd);
  ASSERT_GE(gathered.free_op, 0);  // resharded after forward

  const ScheduleOp& rs = Op(s, "bwd/model.layers.0/reduce_scatter");
  EXPECT_EQ(rs.collective.dtype, DType::kFloat32);
  EXPECT_EQ(rs.collective.count, shard);
  const Buffer& in = s.buffers[rs.collective.input_buffer];
  const Buffer& out = s.buffers[rs.collective.output_buffer];
  EXPECT_EQ(in.category, MemCategory::kCommBuffers);
  EXPECT_EQ(in.dtype, DType::kFloat32);
  EXPECT_EQ(in.numel, 8 * shard);
  EXPECT_EQ(out.numel, shard);
  EXPECT_EQ(OpIdOf(s, s.ops[in.free_op]), OpIdOf(s, rs));

  int grads = 0, activations = 0, persistent = 0;
  for (const Buffer& buf : s.buffers) {
    if (buf.category == MemCategory::kUnshardedGrads && buf.unit == "model.layers.0") {
      ++grads;
      EXPECT_EQ(buf.dtype, DType::kBFloat16);  // autograd's gradients in param_dtype
      EXPECT_EQ(buf.numel, 8 * shard);
    }
    if (buf.category == MemCategory::kActivations) {
      ++activations;
      EXPECT_EQ(buf.dtype, DType::kBFloat16) << buf.unit;
    }
    if (buf.alloc_op < 0) {
      ++persistent;
      EXPECT_EQ(buf.free_op, -1);
      if (buf.unit == "model.layers.0" && buf.category == MemCategory::kShardedParams) {
        EXPECT_EQ(buf.dtype, DType::kFloat32);
        EXPECT_EQ(buf.numel, shard);
      }
    }
  }
  EXPECT_EQ(grads, 1);
  EXPECT_GT(activations, 0);
  // Per unit: its sharded params and AdamW's two moments.
  EXPECT_EQ(persistent, 3 * static_cast<int>(b.plan.units.size()));
}

TEST(CollectiveSpecTest, GradientReductionFollowsFsdp2) {
  {  // HSDP in bf16: ncclAvg on both reductions, the mean over all 8 ranks.
    Case c = MixedPrecisionCase();
    c.dp_replicate = 2;
    c.fsdp.mix_precision.reduce_dtype.reset();
    Built b = BuildAll(c);
    const ScheduleOp& rs = Op(b.schedule, "bwd/model.layers.1/reduce_scatter");
    const ScheduleOp& ar = Op(b.schedule, "bwd/model.layers.1/all_reduce");
    EXPECT_EQ(rs.collective.dtype, DType::kBFloat16);
    EXPECT_EQ(rs.collective.reduce, CollectiveReduce::kAvg);
    EXPECT_EQ(ar.collective.reduce, CollectiveReduce::kAvg);
    EXPECT_EQ(ar.collective.count, rs.collective.count);
    EXPECT_EQ(ar.collective.input_buffer, rs.collective.output_buffer);  // in place
    EXPECT_EQ(ar.collective.output_buffer, rs.collective.output_buffer);
    EXPECT_EQ(b.schedule.groups[ar.group].dims, (std::vector<std::string>{"fsdp_replicate"}));
    EXPECT_EQ(b.schedule.groups[rs.group].dims, (std::vector<std::string>{"fsdp_shard"}));
  }
  {  // fp16 over 8 ranks: sum, divided by 4 before and by 2 after (FSDP2's divide factors).
    Case c = MixedPrecisionCase();
    c.fsdp.mix_precision.param_dtype = DType::kFloat16;
    c.fsdp.mix_precision.reduce_dtype.reset();
    Built b = BuildAll(c);
    const ScheduleOp& rs = Op(b.schedule, "bwd/model.layers.1/reduce_scatter");
    EXPECT_EQ(rs.collective.dtype, DType::kFloat16);
    EXPECT_EQ(rs.collective.reduce, CollectiveReduce::kSum);
    EXPECT_DOUBLE_EQ(rs.collective.pre_scale, 0.25);
    EXPECT_DOUBLE_EQ(rs.collective.post_scale, 0.5);
  }
  {  // A sum-reduced unit with the plan's scaling factor: premultiplied before the sum.
    Case c = MixedPrecisionCase();
    c.dp_replicate = 2;
    Built b = BuildAll(c);
    for (UnitPlan& u : b.plan.units) {
      u.reduce_op = ReduceOp::kSum;
      u.gradient_scaling_factor = 0.125;
    }
    c.Layout();  // the mesh fields of c.options
    Result<Schedule> s = BuildSchedule(b.tree, b.plan, c.options);
    ASSERT_TRUE(s.ok()) << s.status().message();
    const ScheduleOp& rs = Op(*s, "bwd/model.layers.1/reduce_scatter");
    const ScheduleOp& ar = Op(*s, "bwd/model.layers.1/all_reduce");
    EXPECT_EQ(rs.collective.reduce, CollectiveReduce::kSum);
    EXPECT_DOUBLE_EQ(rs.collective.pre_scale, 0.125);
    EXPECT_DOUBLE_EQ(rs.collective.post_scale, 1.0);
    EXPECT_EQ(ar.collective.reduce, CollectiveReduce::kSum);
    EXPECT_DOUBLE_EQ(ar.collective.pre_scale, 1.0);
  }
  {  // TP: partial sums reduced, activations gathered, in the compute dtype, per rank.
    Case c = MixedPrecisionCase();
    c.tp = 2;
    Built b = BuildAll(c);
    const ScheduleOp& ag = Op(b.schedule, "fwd/model.layers.0/tp_all_gather");
    EXPECT_EQ(ag.collective.dtype, DType::kBFloat16);
    EXPECT_EQ(ag.collective.reduce, CollectiveReduce::kNone);
    EXPECT_EQ(ag.collective.count * 2 * 2, ag.bytes);
    const ScheduleOp& rs = Op(b.schedule, "fwd/model.layers.0/tp_reduce_scatter");
    EXPECT_EQ(rs.collective.reduce, CollectiveReduce::kSum);
    EXPECT_EQ(b.schedule.groups[rs.group].dims, (std::vector<std::string>{"tp"}));
  }
}

// ----- one rank's own schedule -----

// The ranks core/mesh gives for `rank`'s group over `g.dims`.
std::vector<int> MeshRanks(const MeshLayout& layout, const ProcessGroup& g, int rank) {
  const int stage_size = layout.world_size / layout.pp;
  if (g.dims == std::vector<std::string>{"pp"}) return g.ranks;  // checked by the caller
  Result<MeshContext> m = BuildMeshContext(layout, rank / stage_size);
  EXPECT_TRUE(m.ok()) << m.status().message();
  const bool expert = g.dims[0].rfind("edp", 0) == 0 || g.dims[0] == "ep";
  const DeviceMesh& mesh = expert ? *m->expert : (g.dims[0] == "cp" ? m->world : m->fsdp);
  Result<std::vector<int>> ranks = mesh.GroupRanks(rank, g.dims);
  EXPECT_TRUE(ranks.ok()) << ranks.status().message();
  return ranks.ok() ? *ranks : std::vector<int>{};
}

struct Call {
  OpType type;
  int64_t count;
  DType dtype;
  CollectiveReduce reduce;
  bool operator==(const Call&) const = default;
};

void CheckEveryRank(Case c, ModelTree tree) {
  const MeshLayout layout = c.Layout();
  Built b = BuildTree(c, std::move(tree));
  const int stage_size = c.world / c.pp;
  // (group name, member ranks) → per member rank, its calls on that communicator in order.
  std::map<std::pair<std::string, std::vector<int>>, std::map<int, std::vector<Call>>> calls;
  int checked_groups = 0;
  for (int r = 0; r < c.world; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ScheduleOptions o = c.options;
    o.rank = r;
    Result<Schedule> built = BuildSchedule(b.tree, b.plan, o);
    ASSERT_TRUE(built.ok()) << built.status().message();
    const Schedule& s = *built;
    const Status st = ValidateSchedule(s);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(s.roles.size(), 1u);
    EXPECT_EQ(s.roles[0].rank, r);
    EXPECT_EQ(s.roles[0].ranks_like, 1);
    for (const ProcessGroup& g : s.groups) {
      SCOPED_TRACE(g.name);
      ASSERT_FALSE(g.dims.empty());
      EXPECT_TRUE(std::binary_search(g.ranks.begin(), g.ranks.end(), r));
      if (g.dims == std::vector<std::string>{"pp"}) {
        ASSERT_EQ(g.ranks.size(), 2u);
        EXPECT_EQ(g.ranks[0] % stage_size, g.ranks[1] % stage_size);  // same place per stage
        EXPECT_NE(g.ranks[0] / stage_size, g.ranks[1] / stage_size);
      } else {
        EXPECT_EQ(g.ranks, MeshRanks(layout, g, r));
      }
      ++checked_groups;
    }
    for (const ScheduleOp& op : s.ops) {
      if (!IsCollective(op.type)) continue;
      const ProcessGroup& g = s.groups[op.group];
      calls[{g.name, g.ranks}][r].push_back({op.type == OpType::kRecv ? OpType::kSend : op.type,
                                             op.collective.count, op.collective.dtype,
                                             op.collective.reduce});
    }
  }
  EXPECT_GT(checked_groups, c.world);
  // Every member of a communicator issues the same calls in the same order (a receive
  // matches its send), which is what keeps a real backend from deadlocking.
  for (const auto& [key, per_rank] : calls) {
    SCOPED_TRACE(key.first);
    EXPECT_EQ(per_rank.size(), key.second.size()) << "not every member rank uses the group";
    const std::vector<Call>& first = per_rank.begin()->second;
    EXPECT_FALSE(first.empty());
    for (const auto& [rank, list] : per_rank) {
      EXPECT_TRUE(list == first) << "rank " << rank << " issues " << list.size() << " calls, rank "
                                 << per_rank.begin()->first << " " << first.size();
    }
  }
}

TEST(RankScheduleTest, Hsdp2x4) {
  Case c = MixedPrecisionCase();
  c.dp_replicate = 2;
  CheckEveryRank(c, TinyLlama());
}

TEST(RankScheduleTest, Tp2Fsdp4) {
  Case c = MixedPrecisionCase();
  c.tp = 2;
  CheckEveryRank(c, TinyLlama());
}

TEST(RankScheduleTest, Tp2Cp2Fsdp4) {
  Case c = MixedPrecisionCase();
  c.world = 16;
  c.tp = 2;
  c.cp = 2;
  CheckEveryRank(c, TinyLlama());
}

TEST(RankScheduleTest, Pipeline2) {
  for (auto [name, v] : {std::pair{"1f1b", 1}, {"interleaved_1f1b", 2}}) {
    SCOPED_TRACE(name);
    Case c = MixedPrecisionCase();
    c.pp = 2;
    c.options.pp_schedule = name;
    c.options.pp_virtual_stages = v;
    c.options.pp_microbatches = 4;
    c.options.local_batch = 4;
    CheckEveryRank(c, TinyLlama());
  }
}

TEST(RankScheduleTest, ExpertParallel) {
  Case c = MixedPrecisionCase();
  c.ep = 4;
  c.fsdp.edp_shard_size = 2;
  CheckEveryRank(c, TinyMoe());
}

TEST(RankScheduleTest, OneRankModeMatchesTheRoleItStandsFor) {
  Case c = MixedPrecisionCase();
  c.dp_replicate = 2;
  Built b = BuildAll(c);
  c.Layout();  // the mesh fields of c.options
  ScheduleOptions o = c.options;
  o.rank = 0;
  Result<Schedule> one = BuildSchedule(b.tree, b.plan, o);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->ops.size(), b.schedule.ops.size());
  for (size_t i = 0; i < one->ops.size(); ++i) {
    EXPECT_EQ(OpIdOf(*one, one->ops[i]), OpIdOf(b.schedule, b.schedule.ops[i]));
    const std::span<const int> mine = DepsOf(*one, one->ops[i]);
    const std::span<const int> all = DepsOf(b.schedule, b.schedule.ops[i]);
    EXPECT_EQ(std::vector<int>(mine.begin(), mine.end()), std::vector<int>(all.begin(), all.end()));
  }
  EXPECT_EQ(one->initial_memory, b.schedule.initial_memory);
  o.rank = 8;
  Result<Schedule> bad = BuildSchedule(b.tree, b.plan, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("schedule rank 8: expected a global rank in [0, 8)"),
            std::string::npos);
}

TEST(PipelineChunksTest, TheScheduleRunsThePlansChunkRoots) {
  Case c = MixedPrecisionCase();
  c.pp = 2;
  c.options.pp_microbatches = 2;
  c.options.local_batch = 2;
  Built b = BuildAll(c);
  ASSERT_EQ(b.plan.pipeline_chunks.size(), 2u);
  EXPECT_EQ(b.plan.pipeline_chunks[1].units,
            (std::vector<std::string>{"model.layers.2", "model.layers.3"}));
  c.Layout();  // the mesh fields of c.options
  auto role_of = [](const Schedule& s, const std::string& op_id) {
    for (const ScheduleOp& op : s.ops) {
      if (OpIdOf(s, op) == op_id) return op.role;
    }
    return -1;
  };
  EXPECT_EQ(role_of(b.schedule, "mb0/fwd/model.layers.1/all_gather"), 0);
  EXPECT_EQ(role_of(b.schedule, "mb0/fwd/root.chunk1/all_gather"), 1);
  // Move a block to the second chunk in the plan: the second stage runs it.
  Plan moved = b.plan;
  moved.pipeline_chunks[0].units = {"model.layers.0"};
  moved.pipeline_chunks[1].units = {"model.layers.1", "model.layers.2", "model.layers.3"};
  Result<Schedule> s = BuildSchedule(b.tree, moved, c.options);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(ValidateSchedule(*s).ok()) << ValidateSchedule(*s).message();
  EXPECT_EQ(role_of(*s, "mb0/fwd/model.layers.1/all_gather"), 1);
  Plan none = b.plan;
  none.pipeline_chunks.clear();
  Result<Schedule> refused = BuildSchedule(b.tree, none, c.options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("plan: 0 pipeline chunk roots, but pp · "
                                            "pp_virtual_stages = 2 model chunks"),
            std::string::npos);
}

// An embedding tied to the head under a pipeline: the last stage gathers, reduces and steps
// its own copy of the weight, as it gathers a separate head's (planner_chunks.cpp), and every
// member of each communicator still issues the same calls.
TEST(PipelineChunksTest, TiedHeadIsGatheredOnTheLastStage) {
  Case c = MixedPrecisionCase();
  c.pp = 2;
  c.options.pp_microbatches = 2;
  c.options.local_batch = 2;
  ModelTree tied = TinyLlama();
  for (Module& m : tied.modules) {
    if ((m.name == "embed_tokens" || m.name == "lm_head") && !m.params.empty()) {
      m.params[0].id = "embedding";
    }
  }
  const Built untied_build = BuildAll(c);
  const Built tied_build = BuildTree(c, tied);
  auto gathered = [](const Schedule& s, const std::string& op_id) -> int64_t {
    for (const ScheduleOp& op : s.ops) {
      if (OpIdOf(s, op) == op_id) return op.collective.count;
    }
    return -1;
  };
  for (const char* id : {"mb0/fwd/root.chunk0/all_gather", "mb0/fwd/root.chunk1/all_gather"}) {
    SCOPED_TRACE(id);
    EXPECT_GT(gathered(tied_build.schedule, id), 0);
    EXPECT_EQ(gathered(tied_build.schedule, id), gathered(untied_build.schedule, id));
  }
  CheckEveryRank(c, std::move(tied));
}

}  // namespace
}  // namespace shardscope::testing
