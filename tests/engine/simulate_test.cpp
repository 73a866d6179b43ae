// The whole prediction pipeline on small jobs: invariants of the timed step, memory
// conservation, monotonicity, fit checks, summary fields and trace determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/trace/trace_io.h"
#include "sim/engine/memory_tracker.h"
#include "sim/engine/simulator.h"
#include "sim/hardware/hardware.h"
#include "tests/engine/small_job.h"

namespace shardscope::sim {
namespace {

using nlohmann::json;

// Llama-shaped, 4 blocks, small enough to simulate in milliseconds.
json SmallJob() { return testing::SmallJob(4); }

Result<Simulation> RunJob(const json& doc, const std::vector<std::string>& sets = {}) {
  SS_ASSIGN_OR_RETURN(Scenario sc, ParseScenario(doc, "<test>", SHARDSCOPE_SOURCE_DIR, sets));
  return SimulateScenario(sc);
}

Simulation MustRun(const json& doc, const std::vector<std::string>& sets = {}) {
  auto r = RunJob(doc, sets);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) std::abort();
  return std::move(r).value();
}

int64_t MaxOverSamples(const RoleMemory& m, MemCategory c) {
  int64_t best = 0;
  for (const MemorySample& s : m.samples)
    best = std::max(best, s.category_bytes[static_cast<int>(c)]);
  return best;
}

TEST(SimulateTest, DefaultScenarioGivesConsistentFigures) {
  const Simulation sim = MustRun(DefaultScenarioJson());
  const Summary& s = sim.summary;
  EXPECT_GT(s.step_time_s, 0.1);
  EXPECT_EQ(s.world_size, 8);
  EXPECT_EQ(s.tokens_per_step, 8 * 1 * 8192);  // torchtitan llama3_8b.toml: local_batch 1
  EXPECT_TRUE(s.fits);
  EXPECT_NEAR(s.tokens_per_s_per_gpu, 8.0 * 1 * 8192 / s.step_time_s / 8, 1e-6);
  EXPECT_GT(s.mfu, 0.05);
  EXPECT_LT(s.mfu, 0.9);
  EXPECT_NEAR(s.tflops_per_gpu, s.mfu * s.peak_tflops, 1e-6);
  EXPECT_GE(s.peak_memory_reserved_gib, s.peak_memory_allocated_gib);
  double sum = 0;
  for (double g : s.memory_at_peak_gib) sum += g;
  EXPECT_NEAR(sum, s.peak_memory_allocated_gib, 1e-9);
  EXPECT_LE(s.compute_s + s.exposed_comm_s + s.idle_s, s.step_time_s + 1e-9);
  EXPECT_NEAR(s.compute_s + s.exposed_comm_s + s.idle_s, s.step_time_s, 1e-6);
}

TEST(SimulateTest, TimedStepRespectsLanesGroupsAndDeps) {
  const Simulation sim =
      MustRun(SmallJob(), {"parallelism.dp_replicate=2", "parallelism.dp_shard=4"});
  const Schedule& s = sim.schedule;
  std::map<std::pair<int, int>, int64_t> lane_end;
  std::map<std::pair<int, int>, int64_t> group_start;
  std::map<std::pair<int, int>, int64_t> group_end;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const ScheduleOp& op = s.ops[i];
    const OpTiming& t = sim.timeline.ops[i];
    const std::string op_id = OpIdOf(s, op);
    ASSERT_GE(t.start_ns, 0) << op_id;
    for (int d : DepsOf(s, op)) ASSERT_GE(t.start_ns, sim.timeline.ops[d].end_ns) << op_id;
    int64_t& end = lane_end[{op.role, static_cast<int>(op.lane)}];
    ASSERT_GE(t.start_ns, end) << "lane overlap at " << op_id;
    end = t.end_ns;
    if (op.group >= 0) {
      int64_t& start = group_start[{op.role, op.group}];
      ASSERT_GE(t.start_ns, start) << "group order at " << op_id;
      start = t.start_ns;
      if (op.type != OpType::kSend && op.type != OpType::kRecv) {
        // One communicator runs one collective at a time.
        int64_t& busy_until = group_end[{op.role, op.group}];
        ASSERT_GE(t.start_ns, busy_until) << "communicator overlap at " << op_id;
        busy_until = t.end_ns;
      }
    }
  }
}

TEST(SimulateTest, OverlapStretchIsWhatCommunicationAddsToCompute) {
  const Simulation sim = MustRun(DefaultScenarioJson());
  const Summary& s = sim.summary;
  EXPECT_GT(s.overlap_stretch_s, 0.0);
  EXPECT_LT(s.overlap_stretch_s, 0.2 * s.compute_s);
  double priced = 0;
  for (const auto& [kind, seconds] : s.compute_by_kind_s) priced += seconds;
  EXPECT_NEAR(s.compute_s, priced + s.overlap_stretch_s, 1e-6);
  // A calibration's uniform factor of 1 turns contention off: nothing is stretched, and the
  // step is never slower.
  const Simulation off = MustRun(DefaultScenarioJson(),
                                 {"cluster.cost_model=tests/engine/data/no_overlap_slowdown.json"});
  EXPECT_EQ(off.summary.overlap_stretch_s, 0.0);
  EXPECT_LT(off.summary.step_time_s, s.step_time_s);
  EXPECT_NEAR(off.summary.compute_s, priced, 1e-6);
}

TEST(SimulateTest, EveryTransientAllocationIsFreedByTheStepEnd) {
  for (const char* ac : {"none", "full", "selective_op", "selective_layer:2"}) {
    const Simulation sim =
        MustRun(SmallJob(), {std::string("training.activation_checkpoint=") + ac});
    for (const RoleMemory& m : sim.memory) {
      EXPECT_EQ(m.final_bytes, m.initial_bytes) << ac;
      EXPECT_EQ(m.live_buffers_at_end, 0) << ac;
    }
  }
}

TEST(SimulateTest, MoreBandwidthIsNeverSlower) {
  // Two nodes, so the all-gathers cross the network and matter.
  const std::vector<std::string> base = {"cluster.nodes=2"};
  std::vector<std::string> fast = base;
  fast.push_back("cluster.cost_model=tests/engine/data/fast_network.json");
  const Simulation slow_sim = MustRun(SmallJob(), base);
  const Simulation fast_sim = MustRun(SmallJob(), fast);
  EXPECT_LE(fast_sim.summary.step_time_s, slow_sim.summary.step_time_s);
  EXPECT_LE(fast_sim.summary.exposed_comm_s, slow_sim.summary.exposed_comm_s);
  EXPECT_LT(fast_sim.summary.comm_s.at("all_gather"), slow_sim.summary.comm_s.at("all_gather"));
}

TEST(SimulateTest, DeeperPrefetchNeverLowersPeakMemory) {
  int64_t previous = 0;
  for (int depth = 0; depth <= 3; ++depth) {
    const Simulation sim =
        MustRun(SmallJob(), {"fsdp.forward_prefetch_depth=" + std::to_string(depth),
                             "fsdp.backward_prefetch_depth=" + std::to_string(depth)});
    const int64_t peak = sim.memory[0].peak_allocated_bytes;
    EXPECT_GE(peak, previous) << "depth " << depth;
    previous = peak;
  }
}

TEST(SimulateTest, PhasePeaksShowWhatTheGlobalPeakHides) {
  const auto peaks = [](std::vector<std::string> sets) {
    sets.push_back("training.activation_checkpoint=full");
    json job = SmallJob();
    job["model"]["hf"]["vocab_size"] = 4096;  // the blocks, not the root, dominate forward
    return MustRun(job, sets).summary;
  };
  const Summary base = peaks({});
  // The global peak is the highest phase peak, and every phase allocates something.
  double highest = 0;
  for (const Summary::PhasePeakFigures& p : base.phase_peaks) {
    EXPECT_FALSE(p.op.empty());
    EXPECT_LE(p.allocated_gib, base.peak_memory_allocated_gib + 1e-9);
    highest = std::max(highest, p.allocated_gib);
  }
  EXPECT_DOUBLE_EQ(highest, base.peak_memory_allocated_gib);
  EXPECT_EQ(base.phase_peaks[static_cast<int>(StepPhase::kOptimizer)].op, "step/optimizer");
  // Keeping the blocks gathered after forward: the forward phase ends with the loss forward
  // (as FSDPMemTracker's reference counts it), where all four blocks are still gathered (each
  // one block's bf16 parameters: q, k, v, o; gate, up, down; two norms), so the forward peak
  // rises by four blocks; the optimizer's peak does not move.
  const Summary deeper = peaks({"fsdp.reshard_after_forward=false"});
  const double unit_gib =
      (1024.0 * (1024 + 512 + 512 + 1024) + 3.0 * 1024 * 3584 + 2 * 1024) * 2 / (1 << 30);
  const int fwd = static_cast<int>(StepPhase::kForward);
  const int opt = static_cast<int>(StepPhase::kOptimizer);
  EXPECT_EQ(base.phase_peaks[fwd].op, "fwd/root/compute:2");
  EXPECT_EQ(deeper.phase_peaks[fwd].op, "fwd/root/compute:2");
  const double rise = deeper.phase_peaks[fwd].allocated_gib - base.phase_peaks[fwd].allocated_gib;
  EXPECT_NEAR(rise, 4 * unit_gib, 1e-6);
  EXPECT_DOUBLE_EQ(deeper.phase_peaks[opt].allocated_gib, base.phase_peaks[opt].allocated_gib);
  const json out = SummaryToJson(base);
  for (const char* phase : {"forward", "loss", "backward", "optimizer"}) {
    ASSERT_TRUE(out["peak_memory_by_phase"].contains(phase)) << phase;
    EXPECT_TRUE(out["peak_memory_by_phase"][phase]["allocated_gib"].is_number()) << phase;
  }
}

TEST(SimulateTest, FullCheckpointingNeverUsesMoreActivationMemory) {
  const auto activations = [](const char* ac) {
    const Simulation sim =
        MustRun(SmallJob(), {std::string("training.activation_checkpoint=") + ac});
    return MaxOverSamples(sim.memory[0], MemCategory::kActivations);
  };
  const int64_t none = activations("none");
  const int64_t selective = activations("selective_op");
  const int64_t full = activations("full");
  EXPECT_GT(none, 0);
  EXPECT_LE(full, selective);
  EXPECT_LE(selective, none);
  EXPECT_LT(full, none);
}

TEST(SimulateTest, AJobThatCannotFitSaysSoAndNamesTheCategory) {
  json j = DefaultScenarioJson();
  j["cluster"]["gpu"] = "a100-40g";
  j["training"]["local_batch"] = 8;
  j["training"]["activation_checkpoint"] = "none";
  const Simulation sim = MustRun(j);
  EXPECT_FALSE(sim.summary.fits);
  EXPECT_FALSE(sim.summary.overflow_category.empty());
  EXPECT_GT(sim.summary.peak_memory_allocated_gib, sim.summary.usable_gib);
  ASSERT_FALSE(sim.summary.warnings.empty());
  EXPECT_NE(sim.summary.warnings.front().find("does not fit"), std::string::npos);
  const json out = SummaryToJson(sim.summary);
  EXPECT_EQ(out["fits"], false);
  EXPECT_TRUE(out["overflow_category"].is_string());
}

TEST(SimulateTest, SummaryJsonHasEveryFormatsField) {
  const json out = SummaryToJson(MustRun(SmallJob()).summary);
  for (const char* key :
       {"scenario", "step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "compute_s",
        "exposed_comm_s", "idle_s", "overlap_ratio", "comm_s", "peak_memory_allocated_gib",
        "peak_memory_reserved_gib", "memory_at_peak_gib", "hbm_gib", "fits", "warnings"}) {
    EXPECT_TRUE(out.contains(key)) << key;
  }
  for (const char* kind : {"all_gather", "reduce_scatter", "all_reduce"}) {
    EXPECT_TRUE(out["comm_s"].contains(kind)) << kind;
  }
  EXPECT_EQ(out["memory_at_peak_gib"].size(), static_cast<size_t>(kNumMemCategories));
  EXPECT_EQ(out["scenario"]["training"]["seq_len"], 2048);
}

TEST(SimulateTest, SameInputGivesAByteIdenticalTrace) {
  const std::string a = SerializeTrace(SimulationTrace(MustRun(SmallJob()), "shardscope test"));
  const std::string b = SerializeTrace(SimulationTrace(MustRun(SmallJob()), "shardscope test"));
  EXPECT_EQ(a, b);
  EXPECT_NE(a.find("\"peak_memory\""), std::string::npos);
  EXPECT_NE(a.find("\"step_begin\""), std::string::npos);
  EXPECT_NE(a.find("allocated_bytes"), std::string::npos);
  EXPECT_NE(a.find("reserved_bytes"), std::string::npos);
  EXPECT_NE(a.find("busbw_GBps"), std::string::npos);
  // The trace reads back as ours with the same number of work events.
  auto back = ParseTrace(a, "<predicted>");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->metadata.kind, "predicted");
}

// One prediction's threads (the memory replay beside the accounting, its roles split over
// threads, the summary's passes, the two short runs of an extrapolated step) change nothing:
// byte-identical traces with 1, 2 and 4 threads, for pipelines (1F1B, interleaved, and one
// extrapolated from its steady state), an offloaded job (host memory) and a job that does not
// fit (whose summary leads with the fit's warning).
// Jobs that take every path of a prediction: a pipeline, an interleaved pipeline, the
// steady-state extrapolation (exact = false), an offloaded optimizer, and a job that does not fit.
struct VariedJob {
  json doc;
  std::vector<std::string> sets;
  bool exact = true;
  bool fits = true;
};
std::vector<VariedJob> VariedJobs() {
  json over = DefaultScenarioJson();
  over["cluster"]["gpu"] = "a100-40g";
  over["training"]["local_batch"] = 8;
  over["training"]["activation_checkpoint"] = "none";
  return {
      {SmallJob(), {"parallelism.pp=4", "parallelism.pp_microbatches=8", "training.local_batch=8"}},
      {SmallJob(),
       {"parallelism.pp=2", "parallelism.pp_schedule=interleaved_1f1b",
        "parallelism.pp_virtual_stages=2", "parallelism.pp_microbatches=4",
        "training.local_batch=4"}},
      {SmallJob(),
       {"parallelism.pp=2", "parallelism.pp_microbatches=24", "training.local_batch=24"},
       false},
      {SmallJob(), {"fsdp.enable_offload=true"}},
      {over, {}, true, false}};
}

TEST(SimulateTest, ThreadsChangeNothing) {
  for (const VariedJob& job : VariedJobs()) {
    Result<Scenario> sc = ParseScenario(job.doc, "<test>", SHARDSCOPE_SOURCE_DIR, job.sets);
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    const std::string name = job.sets.empty() ? "over" : job.sets.front();
    std::string one;
    for (int threads : {1, 2, 4}) {
      SimulateOptions o;
      o.threads = threads;
      o.exact = job.exact;
      Result<Simulation> sim = SimulateScenario(*sc, o);
      ASSERT_TRUE(sim.ok()) << name << ": " << sim.status().message();
      EXPECT_EQ(sim->summary.fits, job.fits) << name;
      EXPECT_EQ(sim->steady_state.has_value(), !job.exact) << name;
      const std::string trace = SerializeTrace(SimulationTrace(*sim, "shardscope test"));
      if (threads == 1) {
        one = trace;
        continue;
      }
      EXPECT_EQ(trace, one) << name << ", " << threads << " threads";
    }
  }
}

// SimulateOptions::figures_only (sweeps) keeps every figure a sweep reads, bit for bit, on
// VariedJobs (the steady state where it applies).
TEST(SimulateTest, FiguresOnlyKeepsEveryFigureASweepReads) {
  for (const VariedJob& job : VariedJobs()) {
    const json& doc = job.doc;
    const std::vector<std::string>& sets = job.sets;
    Result<Scenario> sc = ParseScenario(doc, "<test>", SHARDSCOPE_SOURCE_DIR, sets);
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    SimulateOptions whole;
    whole.keep_memory_samples = false;
    whole.exact = false;
    whole.threads = 1;
    SimulateOptions figures = whole;
    figures.figures_only = true;
    Result<Simulation> a = SimulateScenario(*sc, whole);
    Result<Simulation> b = SimulateScenario(*sc, figures);
    ASSERT_TRUE(a.ok() && b.ok());
    const std::string name = sets.empty() ? "over" : sets.front();
    const Summary& x = a->summary;
    const Summary& y = b->summary;
    EXPECT_EQ(x.role, y.role) << name;
    EXPECT_EQ(x.step_time_s, y.step_time_s) << name;
    EXPECT_EQ(x.tokens_per_s_per_gpu, y.tokens_per_s_per_gpu) << name;
    EXPECT_EQ(x.mfu, y.mfu) << name;
    EXPECT_EQ(x.compute_s, y.compute_s) << name;
    EXPECT_EQ(x.exposed_comm_s, y.exposed_comm_s) << name;
    EXPECT_EQ(x.idle_s, y.idle_s) << name;
    EXPECT_EQ(x.overlap_ratio, y.overlap_ratio) << name;
    EXPECT_EQ(x.comm_s, y.comm_s) << name;
    EXPECT_EQ(x.peak_memory_reserved_gib, y.peak_memory_reserved_gib) << name;
    EXPECT_EQ(x.peak_memory_allocated_gib, y.peak_memory_allocated_gib) << name;
    EXPECT_EQ(x.usable_gib, y.usable_gib) << name;
    EXPECT_EQ(x.fits, y.fits) << name;
    EXPECT_EQ(a->steady_state.has_value(), b->steady_state.has_value()) << name;
    const StepAccount& ma = a->role_metrics[a->reported_role];
    const StepAccount& mb = b->role_metrics[b->reported_role];
    EXPECT_EQ(ma.step_ns, mb.step_ns) << name;
    EXPECT_EQ(ma.exposed_comm_ns, mb.exposed_comm_ns) << name;
    EXPECT_EQ(ma.comm_ns, mb.comm_ns) << name;
    // What it leaves out.
    EXPECT_TRUE(y.comm_by_purpose_s.empty()) << name;
    EXPECT_TRUE(y.compute_by_kind_s.empty()) << name;
  }
}

// A schedule with bad frees in two roles reports the same error, the first in time, however
// many threads its roles replay on.
TEST(SimulateTest, TheMemoryReplaysFirstErrorIsTheSameOnAnyThreadCount) {
  Result<Scenario> sc = ParseScenario(
      SmallJob(), "<test>", SHARDSCOPE_SOURCE_DIR,
      {"parallelism.pp=4", "parallelism.pp_microbatches=8", "training.local_batch=8"});
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  SimulateOptions o;
  o.threads = 1;
  Result<Simulation> sim = SimulateScenario(*sc, o);
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  Schedule& s = sim->schedule;
  // The first free of role 3 and the last of role 1 free one byte too few.
  int first3 = -1, last1 = -1;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    for (const MemoryEffect& e : EffectsOf(s, s.ops[i])) {
      if (e.bytes >= 0) continue;
      if (s.ops[i].role == 3 && first3 < 0) first3 = static_cast<int>(i);
      if (s.ops[i].role == 1) last1 = static_cast<int>(i);
    }
  }
  ASSERT_GE(first3, 0);
  ASSERT_GE(last1, 0);
  for (int op : {first3, last1}) {
    for (MemoryEffect& e : MutableEffectsOf(s, s.ops[op])) {
      if (e.bytes < 0) {
        e.bytes += 1;
        break;
      }
    }
  }
  std::vector<std::string> errors;
  for (int threads : {1, 2, 4}) {
    MemoryOptions mo;
    mo.threads = threads;
    Result<std::vector<RoleMemory>> mem = TrackMemory(s, sim->timeline, mo);
    ASSERT_FALSE(mem.ok());
    errors.push_back(mem.status().message());
  }
  EXPECT_NE(errors[0].find("frees buffer"), std::string::npos) << errors[0];
  EXPECT_EQ(errors[1], errors[0]);
  EXPECT_EQ(errors[2], errors[0]);
}

// CPU offload: the optimizer step runs on the host at the host's rate (not HBM's), its time is
// not GPU compute, and the pinned host memory is reported apart from HBM.
TEST(SimulateTest, OffloadedOptimizerRunsOnTheHostAndHostMemoryIsReported) {
  json doc = SmallJob();
  doc["fsdp"]["enable_offload"] = true;
  const Simulation sim = MustRun(doc);
  const Schedule& s = sim.schedule;
  ASSERT_TRUE(s.ops.back().on_host);
  Result<Hardware> hw = LookupHardware("h100-sxm", 8, 1);
  ASSERT_TRUE(hw.ok());
  const auto cost = MakeDefaultCostModel(*hw, DefaultCostParams(*hw));
  const int64_t host_ns = cost->HostComputeOpNs(s.ops.back().items);
  EXPECT_EQ(sim.prices.ns.back(), host_ns);
  EXPECT_GT(host_ns, 2 * cost->ComputeOpNs(s.ops.back().items));  // HBM would be far faster
  EXPECT_EQ(sim.timeline.ops.back().duration_ns(), host_ns);      // never stretched
  const Summary& sum = sim.summary;
  EXPECT_NEAR(sum.host_compute_s, static_cast<double>(host_ns) / 1e9, 1e-9);
  // The offload copies are neither compute nor communication: they have their own term.
  EXPECT_GT(sum.comm_s.at("h2d"), 0);
  EXPECT_NEAR(sum.compute_s + sum.exposed_comm_s + sum.exposed_copy_s + sum.idle_s, sum.step_time_s,
              1e-6);
  int64_t host_bytes = 0;
  for (int64_t b : s.initial_host_memory[0]) host_bytes += b;
  EXPECT_GT(host_bytes, 0);
  EXPECT_NEAR(sum.host_memory_gib, static_cast<double>(host_bytes) / (1 << 30), 1e-9);
  const int params = static_cast<int>(MemCategory::kShardedParams);
  EXPECT_GT(sum.host_memory_by_category_gib[params], 0);
  EXPECT_EQ(sim.memory[0].initial_bytes[params], 0);  // not on the device
  const json j = SummaryToJson(sum);
  EXPECT_DOUBLE_EQ(j["host_memory_gib"].get<double>(), sum.host_memory_gib);
  // Without offload: no host memory, no host time.
  const Simulation plain = MustRun(SmallJob());
  EXPECT_EQ(plain.summary.host_memory_gib, 0);
  EXPECT_EQ(plain.summary.host_compute_s, 0);
}

TEST(SimulateTest, CudnnAttentionChangesOnlyAttentionsRate) {
  // Llama 3 8B at seq 8192, where the fused kernel outweighs attention's eager side kernels.
  const Simulation flash = MustRun(DefaultScenarioJson());
  const Simulation cudnn = MustRun(DefaultScenarioJson(), {"training.attention_backend=cudnn"});
  const auto& f = flash.summary.compute_by_kind_s;
  const auto& c = cudnn.summary.compute_by_kind_s;
  EXPECT_LT(c.at("attention"), 0.75 * f.at("attention"));  // ~2x FA2's forward rate on Hopper
  EXPECT_DOUBLE_EQ(c.at("gemm"), f.at("gemm"));
  EXPECT_DOUBLE_EQ(c.at("elementwise"), f.at("elementwise"));
  EXPECT_LT(cudnn.summary.step_time_s, flash.summary.step_time_s);
}

// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True changes how the caching allocator reserves,
// nothing that is allocated or timed.
TEST(SimulateTest, ExpandableSegmentsChangeOnlyTheReserve) {
  const Simulation plain = MustRun(DefaultScenarioJson());
  const Simulation expandable =
      MustRun(DefaultScenarioJson(), {"training.expandable_segments=true"});
  EXPECT_EQ(expandable.summary.step_time_s, plain.summary.step_time_s);
  EXPECT_EQ(expandable.summary.peak_memory_allocated_gib, plain.summary.peak_memory_allocated_gib);
  EXPECT_NE(expandable.summary.peak_memory_reserved_gib, plain.summary.peak_memory_reserved_gib);
  EXPECT_GE(expandable.summary.peak_memory_reserved_gib,
            expandable.summary.peak_memory_allocated_gib);
  // Reserved grows in whole 2 MiB (small pool) and 20 MiB (large pool) units.
  const double units = expandable.summary.peak_memory_reserved_gib * 1024 / 2;
  EXPECT_DOUBLE_EQ(units, std::round(units));
  EXPECT_EQ(expandable.summary.scenario["training"]["expandable_segments"], true);
}

TEST(SimulateTest, CudnnAttentionWithoutAFigureIsAnErrorUnlessCalibrated) {
  auto r = RunJob(SmallJob(), {"training.attention_backend=cudnn", "cluster.gpu=a100-80g"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("training.attention_backend: cudnn has no catalog figure "
                                      "for a100-80g"),
            std::string::npos)
      << r.status().message();
  // A calibration that gives the rate makes it expressible.
  r = RunJob(SmallJob(), {"training.attention_backend=cudnn", "cluster.gpu=a100-80g",
                          "cluster.cost_model=tests/engine/data/a100_cudnn_attention.json"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Simulation flash = MustRun(SmallJob(), {"cluster.gpu=a100-80g"});
  EXPECT_LT(r->summary.compute_by_kind_s.at("attention"),
            flash.summary.compute_by_kind_s.at("attention"));
}

TEST(SimulateTest, UnknownGpuIsAnErrorNamingTheField) {
  json j = SmallJob();
  j["cluster"]["gpu"] = "h100-sxn";
  auto r = RunJob(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("h100-sx"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace shardscope::sim
