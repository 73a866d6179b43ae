// A step basis (core/schedule/step_basis.h) taken from a cache builds the schedule a fresh one
// builds, op for op, buffer for buffer; variants that differ only in what the basis does not
// read share one, and a variant that differs in what it reads gets its own.
#include "core/schedule/step_basis.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_check.h"
#include "core/schedule/schedule_options.h"

namespace shardscope {
namespace {

// Everything a schedule holds, as text: every role's ops (FormatSchedule), each op's name,
// unit, micro-batch and items with their figures, the buffer table, groups, module names,
// initial memory and notes.
std::string DescribeSchedule(const Schedule& s) {
  std::string out;
  for (size_t r = 0; r < s.roles.size(); ++r) {
    out += fmt::format("role {} {} rank {} x{}\n", r, s.roles[r].name, s.roles[r].rank,
                       s.roles[r].ranks_like);
    out += FormatSchedule(s, static_cast<int>(r));
  }
  for (const ScheduleOp& op : s.ops) {
    out +=
        fmt::format("{} {} mb{} host{}", NameOf(s, op), UnitOf(s, op), op.micro_step, op.on_host);
    for (const ComputeItem& it : op.items) {
      out += fmt::format(" [{} {} b{} r{} {} {} {} {} {} {}]", static_cast<int>(it.kind),
                         it.module >= 0 ? s.modules[it.module] : "-", it.backward, it.recompute,
                         it.cost.fwd_flops, it.cost.bwd_flops, it.cost.fwd_bytes,
                         it.cost.saved_bytes_none, it.cost.saved_bytes_selective,
                         it.cost.workspace_bytes);
    }
    out += '\n';
  }
  for (const Buffer& b : s.buffers) {
    out += fmt::format("buf {} r{} c{} {} {} {} {} h{} {}{} {}{}", b.id, b.role,
                       static_cast<int>(b.category), DTypeName(b.dtype), b.numel, b.bytes, b.unit,
                       b.host, b.alloc_op, static_cast<int>(b.alloc_when), b.free_op,
                       static_cast<int>(b.free_when));
    for (const std::string& g : b.grads_of) out += " " + g;
    out += '\n';
  }
  for (const ProcessGroup& g : s.groups) {
    out += fmt::format("group {} [{}] [{}]\n", g.name, fmt::join(g.ranks, ","),
                       fmt::join(g.dims, ","));
  }
  out += fmt::format("modules {}\n", fmt::join(s.modules, " "));
  for (const auto& m : s.initial_memory) out += fmt::format("initial {}\n", fmt::join(m, ","));
  for (const auto& m : s.initial_host_memory) out += fmt::format("host {}\n", fmt::join(m, ","));
  out += fmt::format("notes {}\ntokens {} world {}\n", fmt::join(s.notes, " | "), s.tokens_per_step,
                     s.world_size);
  return out;
}

struct BasisJob {
  Scenario scenario;
  std::shared_ptr<const ModelTree> tree;
  std::shared_ptr<const Plan> plan;
};

// The scenario with `sets`, on `tree` (loaded here when null) and its own plan.
BasisJob LoadJob(const nlohmann::json& doc, const std::vector<std::string>& sets,
                 std::shared_ptr<const ModelTree> tree = nullptr) {
  Result<Scenario> sc = ParseScenario(doc, "job.json", ".", sets);
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  if (tree == nullptr) {
    ModelBuildOptions build;
    build.tp = sc->parallelism.tp;
    build.ep = sc->parallelism.ep;
    Result<ModelTree> loaded = LoadModel(sc->model, build);
    EXPECT_TRUE(loaded.ok()) << loaded.status().message();
    tree = std::make_shared<const ModelTree>(std::move(*loaded));
  }
  Result<Plan> plan = PlanScenario(*sc, *tree);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return {*sc, tree, std::make_shared<const Plan>(std::move(*plan))};
}

nlohmann::json BaseJob(const std::string& model) {
  return {{"model", model},
          {"cluster", {{"nodes", 2}, {"gpus_per_node", 8}}},
          {"training", {{"local_batch", 4}, {"seq_len", 512}}}};
}

// Builds `variants` of one mesh on one tree and plan, each through `cache` and afresh, and
// expects the same schedules; returns how many bases the cache made.
size_t ExpectSameSchedules(const std::string& model, const std::vector<std::string>& mesh,
                           const std::vector<std::vector<std::string>>& variants,
                           StepBasisCache& cache) {
  const BasisJob first = LoadJob(BaseJob(model), mesh);
  for (const std::vector<std::string>& v : variants) {
    std::vector<std::string> sets = mesh;
    sets.insert(sets.end(), v.begin(), v.end());
    SCOPED_TRACE(fmt::format("{} {}", model, fmt::join(sets, " ")));
    BasisJob job = LoadJob(BaseJob(model), sets, first.tree);
    // The variants differ in nothing the plan reads: they share the first one's plan, as a
    // sweep's plan cache has them.
    EXPECT_TRUE(PlanInputsOf(job.scenario) == PlanInputsOf(first.scenario));
    ScheduleOptions options = ScheduleOptionsFromScenario(job.scenario);
    Result<Schedule> fresh = BuildSchedule(*job.tree, *first.plan, options);
    Result<Schedule> cached = BuildSchedule(job.tree, first.plan, options, cache);
    EXPECT_TRUE(fresh.ok()) << fresh.status().message();
    EXPECT_TRUE(cached.ok()) << cached.status().message();
    if (!fresh.ok() || !cached.ok()) continue;
    EXPECT_TRUE(ValidateSchedule(*cached).ok());
    EXPECT_EQ(DescribeSchedule(*cached), DescribeSchedule(*fresh));
  }
  return cache.size();
}

TEST(StepBasis, ACachedBasisBuildsTheSameScheduleAsAFreshOne) {
  // Micro-batch counts, checkpointing and the optimizer share a basis.
  const std::vector<std::vector<std::string>> variants = {
      {},
      {"training.activation_checkpoint=full"},
      {"training.activation_checkpoint=selective_op:2", "training.grad_accum=3"},
      {"training.grad_accum=2", "training.optimizer=sgd"},
  };
  {
    StepBasisCache cache;
    EXPECT_EQ(ExpectSameSchedules("llama3-8b", {"parallelism.tp=2"}, variants, cache), 1u);
  }
  {
    // A pipeline's chunks (interleaved: two per stage), with its micro-batch count varied.
    StepBasisCache cache;
    const std::vector<std::string> mesh = {"parallelism.pp=2",
                                           "parallelism.pp_schedule=interleaved_1f1b",
                                           "parallelism.pp_virtual_stages=2"};
    const std::vector<std::vector<std::string>> micro = {
        {"parallelism.pp_microbatches=2"},
        {"parallelism.pp_microbatches=4", "training.activation_checkpoint=full"},
        {"parallelism.pp_microbatches=2", "training.local_batch=2"},
    };
    // pp_microbatches 2 of local_batch 4 and 4 of 4 are micro-batches of 2 and 1 sequences:
    // two shapes, two bases; 2 of 2 is 1 sequence again, the second one's.
    EXPECT_EQ(ExpectSameSchedules("llama3-8b", mesh, micro, cache), 2u);
  }
  {
    // Experts over an expert-parallel group, and HSDP.
    StepBasisCache cache;
    EXPECT_EQ(ExpectSameSchedules("mixtral-8x7b",
                                  {"parallelism.ep=8", "parallelism.edp_shard=2",
                                   "parallelism.dp_replicate=2", "parallelism.dp_shard=-1"},
                                  variants, cache),
              1u);
  }
}

// What the basis reads keys it: a schedule of another sequence length or loss parallelism on the
// same tree and plan is built from a basis of its own, and is the fresh one's.
TEST(StepBasis, AShapeTheBasisReadsGetsItsOwn) {
  StepBasisCache cache;
  const BasisJob job = LoadJob(BaseJob("llama3-8b"), {"parallelism.tp=2"});
  std::vector<std::string> seen;
  for (const std::vector<std::string>& sets :
       std::vector<std::vector<std::string>>{{"training.seq_len=512"},
                                             {"training.seq_len=1024"},
                                             {"parallelism.loss_parallel=true"},
                                             {"training.seq_len=512"}}) {
    std::vector<std::string> all = {"parallelism.tp=2"};
    all.insert(all.end(), sets.begin(), sets.end());
    const BasisJob v = LoadJob(BaseJob("llama3-8b"), all, job.tree);
    const ScheduleOptions options = ScheduleOptionsFromScenario(v.scenario);
    Result<Schedule> cached = BuildSchedule(job.tree, job.plan, options, cache);
    Result<Schedule> fresh = BuildSchedule(*job.tree, *job.plan, options);
    ASSERT_TRUE(cached.ok() && fresh.ok());
    EXPECT_EQ(DescribeSchedule(*cached), DescribeSchedule(*fresh))
        << fmt::format("{}", fmt::join(all, " "));
    seen.push_back(DescribeSchedule(*cached));
  }
  EXPECT_NE(seen[0], seen[1]);  // the shapes do differ
  EXPECT_NE(seen[0], seen[2]);
  EXPECT_EQ(cache.size(), 3u);  // the last is the first's
}

// A basis that cannot be made (a plan unit naming no module of the tree) is an error, and the
// cache keeps nothing.
TEST(StepBasis, AnErrorIsNotKept) {
  StepBasisCache cache;
  const BasisJob job = LoadJob(BaseJob("llama3-8b"), {});
  Plan broken = *job.plan;
  broken.units.front().module = 1 << 30;
  auto plan = std::make_shared<const Plan>(std::move(broken));
  const ScheduleOptions options = ScheduleOptionsFromScenario(job.scenario);
  Result<Schedule> s = BuildSchedule(job.tree, plan, options, cache);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("outside the tree"), std::string::npos)
      << s.status().message();
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace shardscope
