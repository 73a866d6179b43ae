// The steady-state fast path (sim/engine/steady_state.h) against the whole step: within 0.1%
// in step time and peak memory (allocated and reserved) on random pipeline / accumulation jobs
// and on every golden scenario with its micro-batches raised until the fast path applies; and
// the fast path is really taken there, and never for GPipe or a job with few micro-batches.
#include "sim/engine/steady_state.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/config/scenario.h"
#include "sim/engine/simulator.h"
#include "sim/engine/summary.h"
#include "tests/engine/small_job.h"

namespace shardscope::sim {
namespace {

using nlohmann::json;

// Llama-shaped, 8 blocks (so pp 4 × 2 virtual stages has a block per chunk).
json SmallJob() {
  json j = testing::SmallJob(8);
  j["cluster"]["nodes"] = 2;
  return j;
}

Result<Simulation> Simulate(const Scenario& sc, bool exact) {
  SimulateOptions o;
  o.keep_memory_samples = false;
  o.exact = exact;
  return SimulateScenario(sc, o);
}

void ExpectClose(double fast, double exact, const std::string& what, const std::string& job) {
  EXPECT_NEAR(fast, exact, 1e-3 * std::abs(exact)) << what << " of " << job;
}

// Runs `sc` both ways; the fast path must be taken and agree. With `fell_back`, a 1F1B job
// whose longer run had not reached the steady state may fall back (ReachedSteadyState): then
// its summary must be the whole step's, and *fell_back says so. With `fast_out` / `exact_out`,
// the two summaries.
void ExpectSameStep(const Scenario& sc, const std::string& job, bool* fell_back = nullptr,
                    Summary* fast_out = nullptr, Summary* exact_out = nullptr) {
  ASSERT_TRUE(PlanSteadyState(sc).has_value()) << job;
  Result<Simulation> exact = Simulate(sc, true);
  ASSERT_TRUE(exact.ok()) << job << ": " << exact.status().message();
  Result<Simulation> fast = Simulate(sc, false);
  ASSERT_TRUE(fast.ok()) << job << ": " << fast.status().message();
  if (fast_out != nullptr) *fast_out = fast->summary;
  if (exact_out != nullptr) *exact_out = exact->summary;
  EXPECT_FALSE(exact->steady_state.has_value());
  if (fell_back != nullptr) {
    *fell_back = !fast->steady_state.has_value();
    if (*fell_back) {
      EXPECT_GT(PlanSteadyState(sc)->period_span, 0) << job;
      EXPECT_EQ(SummaryToJson(fast->summary).dump(), SummaryToJson(exact->summary).dump()) << job;
      return;
    }
  }
  ASSERT_TRUE(fast->steady_state.has_value()) << job << ": fell back to the whole step";
  const Summary& e = exact->summary;
  const Summary& f = fast->summary;
  // The summary says which runs it was extrapolated from (its JSON's
  // extrapolated_from_micro_batches); the whole step's, that it was not.
  EXPECT_EQ(f.extrapolated_from_micro_batches,
            (std::vector<int>{fast->steady_state->a, fast->steady_state->b}))
      << job;
  EXPECT_TRUE(e.extrapolated_from_micro_batches.empty()) << job;
  EXPECT_EQ(SummaryToJson(f)["extrapolated_from_micro_batches"],
            nlohmann::json(f.extrapolated_from_micro_batches))
      << job;
  EXPECT_TRUE(SummaryToJson(e)["extrapolated_from_micro_batches"].is_null()) << job;
  ExpectClose(f.step_time_s, e.step_time_s, "step time", job);
  ExpectClose(f.peak_memory_allocated_gib, e.peak_memory_allocated_gib, "peak allocated", job);
  ExpectClose(f.peak_memory_reserved_gib, e.peak_memory_reserved_gib, "peak reserved", job);
  ExpectClose(f.compute_s, e.compute_s, "compute", job);
  ExpectClose(f.tokens_per_s_per_gpu, e.tokens_per_s_per_gpu, "tokens/s/GPU", job);
  ExpectClose(f.exposed_comm_s, e.exposed_comm_s, "exposed communication", job);
  ExpectClose(f.edge_exposed_comm_s, e.edge_exposed_comm_s, "edge exposure", job);
  for (const auto& [purpose, seconds] : e.comm_by_purpose_s) {
    ExpectClose(f.comm_by_purpose_s.at(purpose), seconds, purpose + " busy time", job);
  }
  EXPECT_EQ(f.comm_by_purpose_s.size(), e.comm_by_purpose_s.size()) << job;
  for (int c = 0; c < kNumMemCategories; ++c) {
    ExpectClose(f.memory_max_by_category_gib[c], e.memory_max_by_category_gib[c],
                "category maximum", job);
  }
  // An extrapolated list of exposed collectives is either the whole step's or none.
  if (!f.exposed_collectives.empty()) {
    ASSERT_EQ(f.exposed_collectives.size(), e.exposed_collectives.size()) << job;
    for (size_t i = 0; i < e.exposed_collectives.size(); ++i) {
      EXPECT_EQ(f.exposed_collectives[i].op_id, e.exposed_collectives[i].op_id) << job;
    }
  }
  EXPECT_EQ(f.tokens_per_step, e.tokens_per_step) << job;
  EXPECT_EQ(f.fits, e.fits) << job;
  EXPECT_EQ(f.role, e.role) << job;
  EXPECT_EQ(f.peak_memory_role, e.peak_memory_role) << job;
  // The ops at the peaks are the whole step's: one at a peak that moves with the count is in
  // the step's last micro-batches, not the short run's (mb4 for mb31 before).
  EXPECT_EQ(f.peak_memory_op, e.peak_memory_op) << job;
  for (int p = 0; p < kNumStepPhases; ++p) {
    EXPECT_EQ(f.phase_peaks[p].op, e.phase_peaks[p].op) << job << " phase " << p;
    ExpectClose(f.phase_peaks[p].time_s, e.phase_peaks[p].time_s, "phase peak time", job);
  }
  EXPECT_EQ(f.scenario, e.scenario) << job;
}

// A job without a fast path: the summary `exact = false` gives is the whole step's.
void ExpectWholeStep(const Scenario& sc, const std::string& job) {
  EXPECT_FALSE(PlanSteadyState(sc).has_value()) << job;
  Result<Simulation> exact = Simulate(sc, true);
  ASSERT_TRUE(exact.ok()) << job << ": " << exact.status().message();
  Result<Simulation> fast = Simulate(sc, false);
  ASSERT_TRUE(fast.ok()) << job << ": " << fast.status().message();
  EXPECT_FALSE(fast->steady_state.has_value()) << job;
  EXPECT_EQ(SummaryToJson(fast->summary).dump(), SummaryToJson(exact->summary).dump()) << job;
}

TEST(SteadyStateTest, RandomPipelinesAndAccumulationMatchTheWholeStep) {
  std::mt19937 rng(14);
  auto pick = [&](std::vector<int> v) { return v[rng() % v.size()]; };
  int fast = 0;
  for (int trial = 0; trial < 10; ++trial) {
    const int pp = pick({1, 2, 4});
    const bool interleaved = pp > 1 && rng() % 2 == 0;
    const int micro = pp > 1 ? pp * pick({10, 11, 12}) : pick({14, 15, 18});  // ≥ 2 (a + b)
    std::vector<std::string> sets = {
        "parallelism.pp=" + std::to_string(pp),
        "parallelism.tp=" + std::to_string(pick({1, 2})),
        "training.activation_checkpoint=" + std::string(pick({0, 1}) ? "selective_op" : "full"),
        "fsdp.forward_prefetch_depth=" + std::to_string(pick({1, 2})),
    };
    if (pp > 1) {
      sets.push_back(std::string("parallelism.pp_schedule=") +
                     (interleaved ? "interleaved_1f1b" : "1f1b"));
      sets.push_back("parallelism.pp_virtual_stages=" + std::to_string(interleaved ? 2 : 1));
      sets.push_back("parallelism.pp_microbatches=" + std::to_string(micro));
      sets.push_back("training.local_batch=" + std::to_string(micro));
    } else {
      sets.push_back("training.grad_accum=" + std::to_string(micro));
    }
    std::string job;
    for (const std::string& s : sets) job += s + " ";
    Result<Scenario> sc = ParseScenario(SmallJob(), "<test>", SHARDSCOPE_SOURCE_DIR, sets);
    ASSERT_TRUE(sc.ok()) << job << ": " << sc.status().message();
    if (interleaved) {
      ExpectWholeStep(*sc, job);
      continue;
    }
    bool fell_back = false;
    ExpectSameStep(*sc, job, &fell_back);
    fast += fell_back ? 0 : 1;
  }
  // SmallJob's 8 blocks on 4 stages split [2, 3, 2, 1] (torchtitan's split): its 1F1B jobs
  // fill later than their runs of pp + 1 and 2·pp + 1 and fall back; the interleaved ones have
  // no fast path; the others extrapolate.
  EXPECT_GE(fast, 4);
}

// Short runs that reserve differently no longer send a job to the whole step: their allocator
// calls, spliced (reserve_splice.h), are the step's, and so is the reserve they replay to. This
// job reserves 16.174 GiB with 5 micro-batches and 16.096 with 9 (its short runs), 16.088 with
// 30 and 16.127 with 31; with expandable segments 15.861, 15.900 and 15.881 with 30.
TEST(SteadyStateTest, AReserveThatMovesWithTheCountIsTheWholeSteps) {
  for (const auto& [micro, expandable] : {std::pair{30, false}, {31, false}, {30, true}}) {
    const std::string job = "MovingReserveJob(" + std::to_string(micro) + ")" +
                            (expandable ? " with expandable segments" : "");
    json j = testing::MovingReserveJob(micro);
    j["training"]["expandable_segments"] = expandable;
    Result<Scenario> sc = ParseScenario(j, "<test>", SHARDSCOPE_SOURCE_DIR);
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    Summary fast, exact;
    ExpectSameStep(*sc, job, nullptr, &fast, &exact);
    EXPECT_EQ(fast.peak_memory_reserved_gib, exact.peak_memory_reserved_gib) << job;
    // Neither short run's reserve is the step's (31 has 30's short runs).
    if (micro == 31) continue;
    const SteadyStateRuns runs = PlanSteadyState(*sc).value();
    std::vector<std::vector<int64_t>> role_reserves;
    for (int k : {runs.a, runs.b}) {
      Result<Simulation> short_run = Simulate(WithMicroBatches(*sc, k), true);
      ASSERT_TRUE(short_run.ok()) << job;
      EXPECT_NE(short_run->summary.peak_memory_reserved_gib, exact.peak_memory_reserved_gib)
          << job << ": the run of " << k;
      role_reserves.emplace_back();
      for (const RoleMemory& rm : short_run->memory)
        role_reserves.back().push_back(rm.peak_reserved_bytes);
    }
    // Some stages reserve alike in both runs and keep that reserve; the others are replayed
    // (simulator.cpp, SplicedReserve): both kinds meet in this step.
    ASSERT_EQ(role_reserves[0].size(), role_reserves[1].size());
    int alike = 0;
    for (size_t r = 0; r < role_reserves[0].size(); ++r)
      alike += role_reserves[0][r] == role_reserves[1][r] ? 1 : 0;
    EXPECT_GT(alike, 0) << job;
    EXPECT_LT(alike, static_cast<int>(role_reserves[0].size())) << job;
  }
}

// The interleaved schedule is never extrapolated: 16 blocks on 4 stages of TP 2 with full
// checkpointing add 6.67 ms a micro-batch from 8 to 12 (its short runs of 2·pp and 3·pp) and
// 8.33 from 16 on, and the extrapolation put a 40-micro-batch step 5% low.
TEST(SteadyStateTest, AnInterleavedPipelineRunsTheWholeStep) {
  json j = testing::SmallJob(16);
  j["cluster"]["nodes"] = 4;
  Result<Scenario> sc = ParseScenario(
      j, "<test>", SHARDSCOPE_SOURCE_DIR,
      {"parallelism.pp=4", "parallelism.tp=2", "parallelism.pp_schedule=interleaved_1f1b",
       "parallelism.pp_virtual_stages=2", "parallelism.pp_microbatches=40",
       "training.local_batch=40", "training.activation_checkpoint=full"});
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  ExpectWholeStep(*sc, "16 blocks, interleaved 1F1B on 4 stages, 40 micro-batches");
  // What the extrapolation would have met: the step is not affine in the micro-batch count
  // from 2·pp on.
  double t[3];
  for (int k = 0; k < 3; ++k) {
    Result<Simulation> run = Simulate(WithMicroBatches(*sc, 8 + 4 * k), true);
    ASSERT_TRUE(run.ok()) << run.status().message();
    t[k] = run->summary.step_time_s;
  }
  EXPECT_GT((t[2] - t[1]) / (t[1] - t[0]), 1.01);
}

// The job above that fell back: runs of 5 and 9 micro-batches put its 48-micro-batch step
// 0.45% low (3.876 ms a micro-batch from 5 to 9, 3.898 from 9 on), and the longer run's first
// stage starts its forwards 3.898 ms apart, which tells; the whole step runs.
TEST(SteadyStateTest, ALongerRunStillFillingRunsTheWholeStep) {
  Result<Scenario> sc = ParseScenario(
      SmallJob(), "<test>", SHARDSCOPE_SOURCE_DIR,
      {"parallelism.pp=4", "parallelism.pp_schedule=1f1b", "parallelism.pp_microbatches=48",
       "training.local_batch=48", "training.activation_checkpoint=selective_op",
       "fsdp.forward_prefetch_depth=2"});
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  ASSERT_TRUE(PlanSteadyState(*sc).has_value());
  Result<Simulation> fast = Simulate(*sc, false);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  EXPECT_FALSE(fast->steady_state.has_value());
  Result<Simulation> exact = Simulate(*sc, true);
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  EXPECT_DOUBLE_EQ(fast->summary.step_time_s, exact->summary.step_time_s);
}

TEST(SteadyStateTest, GoldenScenariosWithMoreMicroBatchesMatchTheWholeStep) {
  const std::filesystem::path traces = std::filesystem::path(SHARDSCOPE_SOURCE_DIR) / "traces";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(traces)) {
    const std::filesystem::path file = entry.path() / "scenario.json";
    if (!std::filesystem::exists(file)) continue;
    Result<Scenario> base = LoadScenario(file.string());
    ASSERT_TRUE(base.ok()) << base.status().message();
    // Raise the micro-batch count past the fast path's threshold (pp 1: accumulation steps).
    const int pp = base->parallelism.pp;
    const std::vector<std::string> sets =
        pp > 1 ? std::vector<std::string>{"parallelism.pp_microbatches=" + std::to_string(10 * pp),
                                          "training.local_batch=" + std::to_string(10 * pp)}
               : std::vector<std::string>{"training.grad_accum=14"};
    Result<Scenario> sc = LoadScenario(file.string(), sets);
    ASSERT_TRUE(sc.ok()) << file << ": " << sc.status().message();
    ExpectSameStep(*sc, file.string());
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

// Llama 3 70B on 128 nodes of 8 H100s (the rest of the mesh in dp_shard), with `sets`.
Result<Scenario> Llama70bOn1024H100(std::vector<std::string> sets) {
  json j = DefaultScenarioJson();
  j["model"] = "llama3-70b";
  j["cluster"]["nodes"] = 128;
  sets.push_back("parallelism.dp_shard=-1");
  return ParseScenario(j, "<test>", SHARDSCOPE_SOURCE_DIR, sets);
}

// Llama 3 70B, TP 4 × PP 2 on 1,024 H100s, 16 micro-batches of 7,680 tokens: the shorter run
// (3) stays just under the 78.1 GiB usable by meeting the capacity (the allocator releases its
// cache and re-segments; 78.09 GiB reserved), and the whole step does not fit (82.67 GiB
// reserved). A run that meets the capacity must fall back.
TEST(SteadyStateTest, AJobWhoseShortRunsMeetTheCapacityRunsTheWholeStep) {
  Result<Scenario> sc = Llama70bOn1024H100(
      {"parallelism.tp=4", "parallelism.pp=2", "parallelism.pp_microbatches=16",
       "training.local_batch=16", "training.activation_checkpoint=selective_op:2",
       "fsdp.forward_prefetch_depth=1", "fsdp.backward_prefetch_depth=1", "training.seq_len=7680"});
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  ASSERT_TRUE(PlanSteadyState(*sc).has_value());
  Result<Simulation> exact = Simulate(*sc, true);
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  Result<Simulation> fast = Simulate(*sc, false);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  EXPECT_FALSE(fast->steady_state.has_value());
  EXPECT_TRUE(fast->summary.extrapolated_from_micro_batches.empty());
  EXPECT_FALSE(exact->summary.fits);
  EXPECT_EQ(fast->summary.fits, exact->summary.fits);
  EXPECT_DOUBLE_EQ(fast->summary.peak_memory_reserved_gib, exact->summary.peak_memory_reserved_gib);
  // What sets it off: the shorter run met the capacity.
  Result<Simulation> short_run = Simulate(WithMicroBatches(*sc, PlanSteadyState(*sc)->a), true);
  ASSERT_TRUE(short_run.ok()) << short_run.status().message();
  int hits = 0;
  for (const RoleMemory& rm : short_run->memory) hits += rm.capacity_hits;
  EXPECT_GT(hits, 0);
  EXPECT_TRUE(short_run->summary.fits);
}

// Llama 3 70B, TP 2 × PP 4 (1F1B) on 1,024 H100s, full checkpointing, 32 micro-batches: both
// short runs reserve 78.05 of the 78.10 GiB usable without meeting the capacity, and agree; the
// whole step meets it, releases its cache and reserves 77.15. Near the capacity the reserve is
// not extrapolated: the whole step runs.
TEST(SteadyStateTest, AReserveNearTheCapacityRunsTheWholeStep) {
  Result<Scenario> sc =
      Llama70bOn1024H100({"parallelism.tp=2", "parallelism.pp=4", "parallelism.pp_microbatches=32",
                          "training.local_batch=32", "training.activation_checkpoint=full",
                          "fsdp.forward_prefetch_depth=2", "fsdp.backward_prefetch_depth=2"});
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  const std::optional<SteadyStateRuns> runs = PlanSteadyState(*sc);
  ASSERT_TRUE(runs.has_value());
  Result<Simulation> exact = Simulate(*sc, true);
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  Result<Simulation> fast = Simulate(*sc, false);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  EXPECT_FALSE(fast->steady_state.has_value());
  EXPECT_EQ(SummaryToJson(fast->summary).dump(), SummaryToJson(exact->summary).dump());
  // What sets it off: the short runs agree, meet no capacity, and hold more than the whole step.
  double reserved[2];
  for (int k = 0; k < 2; ++k) {
    Result<Simulation> run = Simulate(WithMicroBatches(*sc, k == 0 ? runs->a : runs->b), true);
    ASSERT_TRUE(run.ok()) << run.status().message();
    for (const RoleMemory& rm : run->memory) EXPECT_EQ(rm.capacity_hits, 0);
    reserved[k] = run->summary.peak_memory_reserved_gib;
    EXPECT_GT(reserved[k], 0.95 * run->summary.usable_gib);
  }
  EXPECT_DOUBLE_EQ(reserved[0], reserved[1]);
  EXPECT_GT(reserved[1], exact->summary.peak_memory_reserved_gib * 1.005);
}

// One prediction runs its two short runs at once, a sweep one after the other (with its
// floor check): the same summary either way, and the whole step's.
TEST(SteadyStateTest, ConcurrentShortRunsGiveTheSequentialRunsSummary) {
  for (const bool pipeline : {true, false}) {
    const std::string job = pipeline ? "1F1B on 2 stages" : "14 accumulation steps";
    SCOPED_TRACE(job);
    const std::vector<std::string> sets =
        pipeline
            ? std::vector<std::string>{"parallelism.pp=2", "parallelism.pp_schedule=1f1b",
                                       "parallelism.pp_microbatches=24", "training.local_batch=24"}
            : std::vector<std::string>{"training.grad_accum=14"};
    Result<Scenario> sc = ParseScenario(SmallJob(), "<test>", SHARDSCOPE_SOURCE_DIR, sets);
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    SimulateOptions o;
    o.keep_memory_samples = false;
    o.exact = false;
    o.threads = 4;
    Result<Simulation> concurrent = SimulateScenario(*sc, o);
    o.stop_when_not_fitting = true;
    o.threads = 1;
    Result<Simulation> sequential = SimulateScenario(*sc, o);
    ASSERT_TRUE(concurrent.ok() && sequential.ok());
    ASSERT_TRUE(concurrent->steady_state.has_value());
    ASSERT_TRUE(sequential->steady_state.has_value());
    EXPECT_EQ(SummaryToJson(concurrent->summary).dump(), SummaryToJson(sequential->summary).dump());
    ExpectSameStep(*sc, job);
  }
}

TEST(SteadyStateTest, NoFastPathForGPipeOrFewMicroBatches) {
  auto plan = [](std::vector<std::string> sets) {
    Result<Scenario> sc = ParseScenario(SmallJob(), "<test>", SHARDSCOPE_SOURCE_DIR, sets);
    EXPECT_TRUE(sc.ok()) << sc.status().message();
    return sc.ok() ? PlanSteadyState(*sc) : std::nullopt;
  };
  EXPECT_FALSE(plan({"parallelism.pp=2", "parallelism.pp_schedule=gpipe",
                     "parallelism.pp_microbatches=16", "training.local_batch=16"}));
  // pp 2: the runs of 3 and 5 micro-batches are more than half a step of 15.
  EXPECT_FALSE(
      plan({"parallelism.pp=2", "parallelism.pp_microbatches=15", "training.local_batch=15"}));
  const std::optional<SteadyStateRuns> sixteen =
      plan({"parallelism.pp=2", "parallelism.pp_microbatches=16", "training.local_batch=16"});
  ASSERT_TRUE(sixteen);
  EXPECT_EQ(sixteen->a, 3);
  EXPECT_EQ(sixteen->b, 5);
  EXPECT_EQ(sixteen->total, 16);
  EXPECT_LT(sixteen->a, sixteen->b);
  EXPECT_LT(sixteen->b, 16);
  EXPECT_FALSE(plan({"training.grad_accum=13"}));
  EXPECT_TRUE(plan({"training.grad_accum=14"}));
  // Interleaved: none, whatever the count.
  auto interleaved = [&](int micro) {
    return plan({"cluster.nodes=2", "cluster.gpus_per_node=8", "parallelism.pp=16",
                 "parallelism.pp_schedule=interleaved_1f1b", "parallelism.pp_virtual_stages=2",
                 "parallelism.pp_microbatches=" + std::to_string(micro),
                 "training.local_batch=" + std::to_string(micro)});
  };
  EXPECT_FALSE(interleaved(170));
  EXPECT_FALSE(interleaved(160));
}

TEST(SteadyStateTest, WithMicroBatchesKeepsTheMicroBatchSize) {
  Result<Scenario> sc = ParseScenario(
      SmallJob(), "<test>", SHARDSCOPE_SOURCE_DIR,
      {"parallelism.pp=2", "parallelism.pp_microbatches=8", "training.local_batch=16"});
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  const Scenario s = WithMicroBatches(*sc, 4);
  EXPECT_EQ(s.parallelism.pp_microbatches, 4);
  EXPECT_EQ(s.training.local_batch, 8);
  Result<Scenario> flat = ParseScenario(SmallJob(), "<test>", SHARDSCOPE_SOURCE_DIR,
                                        {"training.grad_accum=8", "training.local_batch=2"});
  ASSERT_TRUE(flat.ok());
  const Scenario f = WithMicroBatches(*flat, 3);
  EXPECT_EQ(f.training.grad_accum, 3);
  EXPECT_EQ(f.training.local_batch, 2);
}

}  // namespace
}  // namespace shardscope::sim
