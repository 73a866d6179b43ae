#include "sim/engine/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "core/model/model_source.h"
#include "core/plan/planner.h"
#include "core/schedule/op_kind.h"
#include "core/schedule/schedule_options.h"
#include "core/timeline/make_trace.h"
#include "core/timeline/op_accounting.h"
#include "core/util/units.h"
#include "sim/cost/calibration.h"
#include "sim/engine/reserve_splice.h"
#include "sim/engine/run_parts.h"
#include "sim/engine/summary_comm.h"
#include "sim/hardware/hardware.h"

namespace shardscope::sim {
namespace {

// The warnings that the timeline alone gives (BuildSummary adds them after the fit's).
std::vector<std::string> TimingWarnings(const Simulation& sim, const StepAccount& m) {
  std::vector<std::string> out;
  const int role = sim.reported_role;
  const std::vector<UnitExposure> ag = ExposedAllGathers(sim.schedule, sim.timeline, role);
  if (!ag.empty() && m.step_ns > 0 && ag.front().exposed_ns * 100 > m.step_ns) {
    const UnitExposure& u = ag.front();
    // One of the step's first all-gathers (summary_comm.h edges): prefetch cannot hide it,
    // so advising a deeper prefetch would send the user after a knob that changes nothing.
    const StepEdges edges = FindStepEdges(sim.schedule, sim.timeline, role, m.end_ns);
    int64_t first_start = -1;
    for (size_t i = 0; i < sim.schedule.ops.size(); ++i) {
      const ScheduleOp& op = sim.schedule.ops[i];
      if (op.role == role && UnitOf(sim.schedule, op) == u.unit && op.type == OpType::kAllGather &&
          sim.timeline.ops[i].start_ns >= 0) {
        first_start = sim.timeline.ops[i].start_ns;
        break;
      }
    }
    const bool at_head = first_start >= 0 && first_start < edges.head_end_ns;
    out.push_back(fmt::format(
        "the all-gather of unit '{}' is exposed most: {:.3f} ms of its {:.3f} ms run while no "
        "compute does ({:.1f}% of the step); {}",
        u.unit.empty() ? "root" : u.unit, NsToSeconds(u.exposed_ns) * 1e3,
        NsToSeconds(u.all_gather_ns) * 1e3,
        100.0 * static_cast<double>(u.exposed_ns) / static_cast<double>(m.step_ns),
        at_head ? "it is one of the step's first all-gathers, before the forward reaches its "
                  "second unit, which no prefetch depth can hide"
                : "deeper fsdp.forward_prefetch_depth or backward_prefetch_depth may hide it"));
  }
  if (m.step_ns > 0 && m.exposed_comm_ns * 5 > m.step_ns) {
    out.push_back(fmt::format(
        "communication is exposed for {:.1f}% of the step",
        100.0 * static_cast<double>(m.exposed_comm_ns) / static_cast<double>(m.step_ns)));
  }
  return out;
}

// The fit's warning, ahead of the timing's (it is the one that matters first).
void AddFitWarning(Summary* s) {
  if (!s->fits) {
    s->warnings.insert(
        s->warnings.begin(),
        fmt::format(
            "does not fit: peak reserved {:.2f} GiB (estimate) vs {:.2f} GiB usable; the last "
            "allocation, the one that crossed the line, was {} (the fit advice names the cause)",
            s->peak_memory_reserved_gib, s->usable_gib,
            s->overflow_category.empty() ? "(reserved over capacity)" : s->overflow_category));
  }
}

// The summary's compute kinds, in the order ComputeByKind accumulates them.
enum class ComputeKind { kOverhead, kFsdpCopy, kOptimizer, kGemm, kAttention, kLoss, kElementwise };
constexpr int kNumComputeKinds = 7;
constexpr std::array<std::string_view, kNumComputeKinds> kComputeKindNames = {
    "overhead", "fsdp_copy", "optimizer", "gemm", "attention", "loss", "elementwise"};

ComputeKind ComputeKindOf(const ComputeItem& item) {
  if (std::holds_alternative<FsdpCopyWork>(item.work)) return ComputeKind::kFsdpCopy;
  if (std::holds_alternative<OptimizerWork>(item.work)) return ComputeKind::kOptimizer;
  switch (item.kind) {
    case OpKind::kLinear:
    case OpKind::kRouter:
    case OpKind::kExperts:
      return ComputeKind::kGemm;
    case OpKind::kAttention:
      return ComputeKind::kAttention;
    case OpKind::kLoss:
      return ComputeKind::kLoss;
    default:
      return ComputeKind::kElementwise;
  }
}

// Where the reported role's GPU compute time goes, as the cost model prices it. Sums per kind
// in op order, as a map keyed by name would, without a string per item.
std::map<std::string, double> ComputeByKind(const Schedule& s, const CostModel& cost, int role) {
  std::array<double, kNumComputeKinds> sum{};
  std::array<bool, kNumComputeKinds> seen{};
  // Ops share item lists (compute_items.h): each list's figures are worked out once, then
  // added for every op that runs it, item by item in op order as before (the same sums).
  std::unordered_map<const void*, std::vector<std::pair<int, double>>> lists;
  for (const ScheduleOp& op : s.ops) {
    if (op.role != role || op.on_host || op.items.empty()) continue;
    if (op.type != OpType::kCompute && op.type != OpType::kOptimizer) continue;
    auto [it, inserted] = lists.try_emplace(op.items.identity());
    std::vector<std::pair<int, double>>& figures = it->second;
    if (inserted) {
      figures.reserve(op.items.size() + 1);
      figures.emplace_back(static_cast<int>(ComputeKind::kOverhead),
                           NsToSeconds(cost.OpOverheadNs(op.items)));
      for (const ComputeItem& item : op.items) {
        figures.emplace_back(static_cast<int>(ComputeKindOf(item)),
                             NsToSeconds(cost.ComputeNs(item)));
      }
    }
    for (const auto& [k, seconds] : figures) {
      sum[k] += seconds;
      seen[k] = true;
    }
  }
  std::map<std::string, double> out;
  for (int k = 0; k < kNumComputeKinds; ++k) {
    if (seen[k]) out.emplace(kComputeKindNames[k], sum[k]);
  }
  return out;
}

// What a summary says of the job whether or not it ran: scenario, role, size and capacity.
Summary SummaryHead(const Schedule& schedule, int role, const StepContext& ctx) {
  Summary s;
  s.scenario = ctx.scenario;
  s.role = schedule.roles[role].name;
  s.world_size = schedule.world_size;
  s.tokens_per_step = schedule.tokens_per_step;
  s.model_flops_per_token = ctx.model_flops.flops_per_token;
  s.peak_tflops = ctx.peak_flops / 1e12;
  s.hbm_gib = ToGiB(ctx.hbm_bytes);
  s.usable_gib = ToGiB(ctx.usable_bytes);
  return s;
}

void SetDevice(const CostModel& cost, Simulation* sim) {
  sim->gpu_name = cost.hardware().gpu.name;
  sim->gpu_description = cost.hardware().gpu.description;
  sim->nodes = cost.hardware().nodes;
}

// The summary's timing half: what the timeline, the prices and the reported role's accounting
// give (no memory), and the warnings they raise; with `cost`, the compute by kind too. Its
// per-op passes read nothing of each other's: with threads they run at once.
Summary TimingSummary(const Simulation& sim, const StepContext& ctx, const CostModel* cost,
                      const RankAccounting& accounting, int threads) {
  const StepAccount& m = sim.role_metrics[sim.reported_role];
  Summary s = SummaryHead(sim.schedule, sim.reported_role, ctx);
  s.step_time_s = NsToSeconds(m.step_ns);
  SetStepRates(ctx.peak_flops, &s);
  s.compute_s = NsToSeconds(m.compute_ns);
  s.exposed_comm_s = NsToSeconds(m.exposed_comm_ns);
  s.idle_s = NsToSeconds(m.idle_ns);
  s.exposed_copy_s = NsToSeconds(m.exposed_copy_ns);
  s.host_compute_s = NsToSeconds(m.host_ns);
  s.overlap_ratio = m.overlap_ratio();
  for (int k = 0; k < kNumWorkKinds; ++k) {
    const WorkKind kind = static_cast<WorkKind>(k);
    if (kind == WorkKind::kCompute || kind == WorkKind::kHost || m.busy_by_kind_ns[k] == 0)
      continue;
    const std::string name(WorkKindName(kind));
    s.comm_s[name] = NsToSeconds(m.busy_by_kind_ns[k]);
    s.exposed_comm_by_kind_s[name] = NsToSeconds(m.exposed_by_kind_ns[k]);
  }
  if (ctx.figures_only) return s;
  // Each part writes fields of its own.
  RunParts(3, threads, [&](int part) {
    if (part == 0) {
      AddCommBreakdown(sim.schedule, sim.timeline, sim.reported_role, m, accounting, &s);
    } else if (part == 1) {
      s.warnings = TimingWarnings(sim, m);
    } else {
      int64_t stretch_ns = 0;
      for (size_t i = 0; i < sim.schedule.ops.size(); ++i) {
        const ScheduleOp& op = sim.schedule.ops[i];
        if (op.role != sim.reported_role || WorkKindOf(op) != WorkKind::kCompute) continue;
        if (i >= sim.prices.ns.size() || sim.timeline.ops[i].start_ns < 0) continue;
        stretch_ns += sim.timeline.ops[i].duration_ns() - sim.prices.ns[i];
      }
      s.overlap_stretch_s = NsToSeconds(stretch_ns);
      if (cost != nullptr) {
        s.compute_by_kind_s = ComputeByKind(sim.schedule, *cost, sim.reported_role);
      }
    }
  });
  return s;
}

// The memory half, from sim.memory, onto the timing half `s`; the fit's warning goes first.
void AddMemorySummary(const Simulation& sim, const StepContext& ctx, Summary* out) {
  Summary& s = *out;
  // Memory: the worst role.
  int peak_role = 0;
  int64_t peak_reserved = 0;
  bool oom = false;
  for (size_t r = 0; r < sim.memory.size(); ++r) {
    const RoleMemory& rm = sim.memory[r];
    if (rm.peak_allocated_bytes > sim.memory[peak_role].peak_allocated_bytes)
      peak_role = static_cast<int>(r);
    peak_reserved = std::max(peak_reserved, rm.peak_reserved_bytes);
    if (rm.oom && !oom) {
      oom = true;
      s.overflow_category = std::string(MemCategoryName(rm.oom_category));
    }
  }
  if (!sim.memory.empty()) {
    const RoleMemory& rm = sim.memory[peak_role];
    s.peak_memory_allocated_gib = ToGiB(rm.peak_allocated_bytes);
    s.peak_memory_time_s = NsToSeconds(rm.peak_allocated_time_ns);
    s.peak_memory_role = sim.schedule.roles[static_cast<size_t>(peak_role)].name;
    s.peak_memory_op = rm.peak_allocated_op >= 0
                           ? OpIdOf(sim.schedule, sim.schedule.ops[rm.peak_allocated_op])
                           : "(initial state)";
    for (int c = 0; c < kNumMemCategories; ++c)
      s.memory_at_peak_gib[c] = ToGiB(rm.at_peak_allocated[c]);
    for (int c = 0; c < kNumMemCategories; ++c)
      s.memory_max_by_category_gib[c] = ToGiB(rm.max_bytes[c]);
    for (int p = 0; p < kNumStepPhases; ++p) {
      const PhasePeak& peak = rm.phase_peaks[p];
      s.phase_peaks[p] = {
          ToGiB(peak.allocated_bytes), NsToSeconds(peak.time_ns),
          peak.op >= 0 ? OpIdOf(sim.schedule, sim.schedule.ops[peak.op]) : std::string()};
    }
  }
  s.peak_memory_reserved_gib = ToGiB(peak_reserved);
  // Host memory is reported apart from HBM: it never counts against the GPU's capacity.
  for (const RoleMemory& rm : sim.memory) {
    if (ToGiB(rm.host_total_bytes()) <= s.host_memory_gib) continue;
    s.host_memory_gib = ToGiB(rm.host_total_bytes());
    for (int c = 0; c < kNumMemCategories; ++c)
      s.host_memory_by_category_gib[c] = ToGiB(rm.host_bytes[c]);
  }
  s.fits = !oom && (ctx.usable_bytes <= 0 || peak_reserved <= ctx.usable_bytes);
  if (!s.fits && s.overflow_category.empty()) {
    // Over capacity without a single overflowing allocation: name the largest category.
    const auto& at = s.memory_at_peak_gib;
    s.overflow_category = std::string(MemCategoryName(
        static_cast<MemCategory>(std::max_element(at.begin(), at.end()) - at.begin())));
  }
  AddFitWarning(&s);
}

Summary BuildSummary(const Simulation& sim, const StepContext& ctx) {
  const RankAccounting accounting(RoleWork(sim.schedule, sim.timeline, sim.reported_role));
  Summary s = TimingSummary(sim, ctx, nullptr, accounting, 1);
  AddMemorySummary(sim, ctx, &s);
  return s;
}

bool CalibrationSets(const Calibration& cal, const char* section, const char* key) {
  const nlohmann::json& o = cal.overrides;
  return o.contains(section) && o[section].is_object() && o[section].contains(key);
}

// The cuDNN backend's figures (from the catalog, or a calibration's gpu section), unless the
// calibration sets attention's rate itself: what a user measured wins.
Status ApplyCudnnAttention(const Hardware& hw, const Calibration& cal, CostParams* params) {
  const bool rate_given = CalibrationSets(cal, "compute", "attention_efficiency") ||
                          CalibrationSets(cal, "gpu", "attention_efficiency");
  const bool ratio_given = CalibrationSets(cal, "compute", "attention_backward_ratio");
  if (rate_given && ratio_given) return Status::Ok();
  CostParams cudnn = *params;
  if (Status s = UseCudnnAttention(hw, &cudnn); !s.ok()) return rate_given ? Status::Ok() : s;
  if (!rate_given) params->attention_efficiency = cudnn.attention_efficiency;
  if (!ratio_given) params->attention_backward_ratio = cudnn.attention_backward_ratio;
  return Status::Ok();
}

}  // namespace

Result<Simulation> SimulateSchedule(Schedule schedule, const CostModel& cost,
                                    const StepContext& ctx) {
  if (schedule.roles.empty()) return InvalidInput("schedule: no roles to simulate");
  Simulation sim;
  sim.schedule = std::move(schedule);
  SS_ASSIGN_OR_RETURN(sim.prices, PriceSchedule(sim.schedule, cost, ctx.gpus_per_node));
  sim.overlap = cost.Overlap();
  EngineOptions engine_options;
  OverlapContention contention;
  if (sim.overlap.uniform_slowdown >= 1.0) {
    engine_options.overlap_slowdown = sim.overlap.uniform_slowdown;
  } else {
    contention.sm_count = sim.overlap.sm_count;
    contention.hbm_gbps = sim.overlap.hbm_gbps;
    contention.sm_share = sim.prices.sm_share;
    contention.hbm_share = sim.prices.hbm_share;
    contention.comm_blocks = sim.prices.comm_blocks;
    contention.comm_hbm_gbps = sim.prices.comm_hbm_gbps;
    engine_options.contention = &contention;
  }
  SS_ASSIGN_OR_RETURN(sim.timeline, RunEngine(sim.schedule, sim.prices.ns, engine_options));
  // The memory replay and the timing accounting read the timeline and nothing of each other:
  // with threads to spare they run at once, each split further (the replay by roles).
  const int threads = std::max(1, ctx.threads);
  for (int r = 0; r < static_cast<int>(sim.schedule.roles.size()); ++r) {
    if (sim.timeline.role_end_ns[r] > sim.timeline.role_end_ns[sim.reported_role])
      sim.reported_role = r;
  }
  MemoryOptions memory_options{ctx.usable_bytes, ctx.keep_memory_samples};
  memory_options.threads = threads;
  memory_options.allocator = ctx.allocator;
  Result<std::vector<RoleMemory>> memory = std::vector<RoleMemory>{};
  Summary timing;
  RunParts(2, threads, [&](int part) {
    if (part == 0) {
      memory = TrackMemory(sim.schedule, sim.timeline, memory_options,
                           ctx.keep_allocator_calls ? &sim.allocator_calls : nullptr);
    } else if (threads > 1 || memory.ok()) {  // alone, a replay error ends the run first
      std::optional<RankAccounting> reported;
      sim.role_metrics.assign(sim.schedule.roles.size(), StepAccount{});
      sim.role_metrics[sim.reported_role] =
          AccountRole(sim.schedule, sim.timeline, sim.reported_role, &reported);
      timing = TimingSummary(sim, ctx, &cost, *reported, threads);
    }
  });
  if (!memory.ok()) return memory.status();
  sim.memory = std::move(memory).value();
  SetDevice(cost, &sim);
  sim.summary = std::move(timing);
  AddMemorySummary(sim, ctx, &sim.summary);
  return sim;
}

namespace {

AllocatorConfig AllocatorFor(const Scenario& sc, int64_t hbm_bytes) {
  AllocatorConfig config;
  config.expandable_segments = sc.training.expandable_segments;
  config.address_space_bytes = hbm_bytes + hbm_bytes / 8;
  return config;
}

}  // namespace

Result<ScenarioPricing> PriceScenario(const Scenario& sc, const ModelTree& tree,
                                      const SimulateOptions& options) {
  Result<Hardware> hw_or =
      LookupHardware(sc.cluster.gpu, sc.cluster.gpus_per_node, sc.cluster.nodes);
  if (!hw_or.ok()) return hw_or.status().WithContext(sc.source + ": cluster.gpu");
  Hardware hw = std::move(hw_or).value();
  CostParams params = DefaultCostParams(hw);
  Calibration cal;
  if (!sc.cluster.cost_model.empty()) {
    SS_ASSIGN_OR_RETURN(cal, LoadCalibration(sc.cluster.cost_model));
    SS_RETURN_IF_ERROR(ApplyCalibration(cal, &hw, &params));
  }
  if (sc.training.attention_backend == AttentionBackend::kCudnn) {
    SS_RETURN_IF_ERROR(ApplyCudnnAttention(hw, cal, &params).WithContext(sc.source));
  }
  ScenarioPricing p;
  p.cost = MakeDefaultCostModel(hw, params);
  StepContext& ctx = p.ctx;
  ctx.gpus_per_node = sc.cluster.gpus_per_node;
  ctx.usable_bytes = hw.gpu.usable_bytes();
  ctx.hbm_bytes = hw.gpu.hbm_bytes;
  ctx.allocator = AllocatorFor(sc, hw.gpu.hbm_bytes);
  ctx.peak_flops = hw.gpu.peak_bf16_flops;
  ctx.model_flops = ModelFlopsPerToken(tree, sc.training.seq_len);
  ctx.scenario = sc.resolved;
  ctx.keep_memory_samples = options.keep_memory_samples;
  ctx.figures_only = options.figures_only;
  ctx.threads = options.threads > 0
                    ? options.threads
                    : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  return p;
}

namespace {

// The scenario's schedule as BuildScenarioSchedule builds it, less what only a backend reads
// (the gradient buffers' parameter names); its basis from `bases` when given.
Result<Schedule> BuildSimulatedSchedule(const Scenario& sc,
                                        const std::shared_ptr<const ModelTree>& tree,
                                        const std::shared_ptr<const Plan>& plan,
                                        StepBasisCache* bases) {
  ScheduleOptions options = ScheduleOptionsFromScenario(sc);
  options.grad_param_names = false;
  if (bases != nullptr) return BuildSchedule(tree, plan, options, *bases);
  return BuildSchedule(*tree, *plan, options);
}

// The plan and the schedules of one prediction: built here, or copied from a memo that keeps
// them for the next scenario differing only in what the cost model prices (schedule_memo.h).
class StepSchedules {
 public:
  StepSchedules(const Scenario& sc, std::shared_ptr<const ModelTree> tree, ScheduleMemo* memo,
                PlanCache* plans, StepBasisCache* bases)
      : sc_(sc), tree_(std::move(tree)), memo_(memo), plans_(plans), bases_(bases) {
    if (memo_ != nullptr) memo_->Bind(ScheduleMemo::KeyOf(sc));
  }

  // The plan: the memo's, the cache's (plan_cache.h) or planned here, in that order.
  Result<const Plan*> plan() {
    if (!plan_ && memo_ != nullptr) plan_ = memo_->plan();
    if (!plan_) {
      if (plans_ != nullptr) {
        SS_ASSIGN_OR_RETURN(plan_, plans_->Get(sc_, tree_));
      } else {
        SS_ASSIGN_OR_RETURN(Plan built, PlanScenario(sc_, *tree_));
        plan_ = std::make_shared<const Plan>(std::move(built));
      }
      if (memo_ != nullptr) memo_->KeepPlan(plan_);
    }
    return plan_.get();
  }

  // The plan is made before (plan()): the two runs of a steady state may build at once.
  Result<Schedule> Build(int run) {
    if (memo_ != nullptr) {
      std::lock_guard<std::mutex> lock(mu_);
      if (std::optional<Schedule> kept = memo_->Use(run)) return std::move(*kept);
    }
    if (!plan_) return RuntimeError("StepSchedules: Build before plan() (internal error)");
    SS_ASSIGN_OR_RETURN(
        Schedule built,
        BuildSimulatedSchedule(run == ScheduleMemo::kWholeStep ? sc_ : WithMicroBatches(sc_, run),
                               tree_, plan_, bases_));
    if (memo_ == nullptr) return built;
    std::lock_guard<std::mutex> lock(mu_);
    return memo_->Keep(run, std::move(built)).schedule;
  }

  // The memory floor of `run`'s schedule (`schedule`, as Build gave it: the kept one's copy, or
  // the kept one itself once handed over).
  MemoryFloor Floor(int run, const Schedule& schedule) {
    if (memo_ == nullptr) return ScheduleMemoryFloor(schedule);
    std::lock_guard<std::mutex> lock(mu_);
    ScheduleMemo::Run* kept = memo_->Find(run);
    if (kept == nullptr) return ScheduleMemoryFloor(schedule);
    if (!kept->floor) kept->floor = ScheduleMemoryFloor(schedule);
    return *kept->floor;
  }

 private:
  std::mutex mu_;  // the memo, for the two runs of one steady state
  const Scenario& sc_;
  std::shared_ptr<const ModelTree> tree_;
  ScheduleMemo* memo_;
  PlanCache* plans_;
  StepBasisCache* bases_;
  std::shared_ptr<const Plan> plan_;
};

// The whole step's reserve (the highest of its roles'), from the runs of runs.a (each role's
// allocator calls `a_calls`, initial memory `a_initial` and reserve `a_reserves`) and runs.b
// (`b`). A role whose two runs reserve alike keeps that reserve, the rule the fast path follows
// for a whole step whose runs agree (steady_state.h); each other role's calls are spliced
// (reserve_splice.h) and replayed. On TP 8 x PP 8 x 64 three of the eight stages differ, and the
// replays were a third of the prediction's instructions. nullopt where a spliced role's calls do
// not splice, or its replay meets the capacity (the allocator then releases its cache and
// re-segments, which the whole step must show).
std::optional<int64_t> SplicedReserve(const std::vector<AllocatorCalls>& a_calls,
                                      const std::vector<CategoryBytes>& a_initial,
                                      const std::vector<int64_t>& a_reserves, const Simulation& b,
                                      const SteadyStateRuns& runs, const StepContext& ctx) {
  const size_t roles = b.allocator_calls.size();
  if (roles == 0 || a_calls.size() != roles || a_initial.size() != roles ||
      a_reserves.size() != roles || b.memory.size() != roles ||
      b.schedule.initial_memory.size() != roles) {
    return std::nullopt;
  }
  for (size_t r = 0; r < roles; ++r) {
    if (a_initial[r] != b.schedule.initial_memory[r]) return std::nullopt;
  }
  MemoryOptions options{ctx.usable_bytes, false};
  options.allocator = ctx.allocator;
  // Per role, its reserve; -1 where it has none (its calls do not splice, or met the capacity).
  std::vector<int64_t> reserves(roles, -1);
  std::vector<int> spliced;
  for (size_t r = 0; r < roles; ++r) {
    if (a_reserves[r] == b.memory[r].peak_reserved_bytes) {
      reserves[r] = a_reserves[r];
    } else {
      spliced.push_back(static_cast<int>(r));
    }
  }
  RunParts(static_cast<int>(spliced.size()), ctx.threads, [&](int k) {
    const size_t r = static_cast<size_t>(spliced[k]);
    const std::optional<AllocatorCalls> calls =
        SpliceAllocatorCalls(a_calls[r], b.allocator_calls[r], runs.a, runs.b, runs.total);
    if (!calls) return;
    const ReplayedReserve replayed = ReplayAllocatorCalls(*calls, a_initial[r], options);
    if (replayed.capacity_hits == 0 && replayed.oom_count == 0)
      reserves[r] = replayed.peak_reserved_bytes;
  });
  if (std::find(reserves.begin(), reserves.end(), -1) != reserves.end()) return std::nullopt;
  return *std::max_element(reserves.begin(), reserves.end());
}

// The runs of `runs.a` and `runs.b` micro-batches and the summary extrapolated from them;
// nullopt when either fails or they disagree (the whole step then runs and reports).
// With SimulateOptions::stop_when_not_fitting (sweeps): the runs one after the other, and give
// up before pricing anything when the shorter run's schedule alone holds more than the capacity
// (memory_floor.h), so that the whole step's schedule is built and its own floor stops it:
// simulating two short runs of a job that cannot fit would cost more than that. Otherwise (one
// prediction: `simulate`, StepContext::threads > 1) the two runs are independent and run at
// once, the longer on the calling thread and the shorter as a task beside it: the same figures,
// in the longer run's time.
std::optional<Simulation> SimulateSteadyState(StepSchedules& schedules,
                                              const ScenarioPricing& pricing,
                                              const SteadyStateRuns& runs,
                                              const SimulateOptions& options) {
  const bool floor_check = options.stop_when_not_fitting;
  // Once a new segment meets the capacity, the allocator releases what it has cached and
  // re-segments: what it reserves from then on grows with the step's length even where the two
  // short runs agree (70B grid: 79 of 483 fast-path variants, nearly all at or over the capacity,
  // up to 5% below the whole step's reserve, and one called fitting that does not fit). Only the
  // whole step tells, so a run that met it ends the fast path there.
  auto met_capacity = [](const Simulation& run) {
    for (const RoleMemory& rm : run.memory) {
      if (rm.capacity_hits > 0) return true;
    }
    return false;
  };
  // What the extrapolation reads of the shorter run (the rest is dropped on its own thread),
  // and the longer run, which the result is.
  struct Figures {
    Summary summary;
    StepAccount account;
    std::vector<AllocatorCalls> calls;
    std::vector<CategoryBytes> initial_memory;
    std::vector<int64_t> reserves;  // each role's peak reserve
  };
  std::optional<Figures> shorter_figures;
  std::optional<Simulation> longer_run;
  const int counts[2] = {runs.a, runs.b};
  // Run k; false where the fast path ends (its result stays empty). The shorter run, beside
  // the longer one, gets one thread; the longer run what the options allow.
  auto run = [&](int k, int threads) {
    Result<Schedule> schedule = schedules.Build(counts[k]);
    if (!schedule.ok()) return false;
    if (k == 0 && floor_check && pricing.ctx.usable_bytes > 0 &&
        schedules.Floor(counts[k], *schedule).bytes > pricing.ctx.usable_bytes) {
      return false;
    }
    StepContext ctx = pricing.ctx;
    ctx.threads = threads;
    ctx.keep_allocator_calls = true;
    Result<Simulation> sim = SimulateSchedule(std::move(schedule).value(), *pricing.cost, ctx);
    if (!sim.ok() || met_capacity(*sim)) return false;
    if (k == 0) {
      std::vector<int64_t> reserves;
      for (const RoleMemory& rm : sim->memory) reserves.push_back(rm.peak_reserved_bytes);
      shorter_figures = Figures{std::move(sim->summary), sim->role_metrics[sim->reported_role],
                                std::move(sim->allocator_calls),
                                std::move(sim->schedule.initial_memory), std::move(reserves)};
    } else {
      longer_run = std::move(sim).value();
    }
    return true;
  };
  const int threads = pricing.ctx.threads;
  if (floor_check || threads <= 1) {
    if (!run(0, threads) || !run(1, threads)) return std::nullopt;
  } else {
    RunParts(2, threads, [&](int k) { k == 0 ? run(1, threads) : run(0, 1); });
    if (!shorter_figures || !longer_run) return std::nullopt;
  }
  const Figures& a = *shorter_figures;
  Simulation& b = *longer_run;
  if (!ReachedSteadyState(b.schedule, b.timeline, runs, a.summary.step_time_s,
                          b.summary.step_time_s)) {
    return std::nullopt;
  }
  // Where the short runs reserve differently, the step's own allocator calls tell its reserve.
  std::optional<double> step_reserve_gib;
  if (a.summary.peak_memory_reserved_gib != b.summary.peak_memory_reserved_gib) {
    const std::optional<int64_t> reserve =
        SplicedReserve(a.calls, a.initial_memory, a.reserves, b, runs, pricing.ctx);
    if (!reserve) return std::nullopt;
    step_reserve_gib = ToGiB(*reserve);
  }
  std::optional<Summary> summary =
      ExtrapolateSummary(a.summary, a.account, b.summary, b.role_metrics[b.reported_role], runs,
                         pricing.ctx.peak_flops, step_reserve_gib);
  if (!summary) return std::nullopt;
  b.summary = std::move(*summary);
  b.allocator_calls = {};  // read only here
  b.summary.extrapolated_from_micro_batches = {runs.a, runs.b};
  b.steady_state = runs;
  // The schedule's notes describe the run simulated; name the job's micro-batch count instead.
  const std::string from = fmt::format("with {} micro-batches per step", runs.b);
  for (std::string& note : b.schedule.notes) {
    if (const size_t at = note.find(from); at != std::string::npos)
      note.replace(at, from.size(), fmt::format("with {} micro-batches per step", runs.total));
  }
  b.schedule.notes.push_back(fmt::format(
      "step figures extrapolated from the steady state of {} and {} of the {} micro-batches "
      "(--exact simulates them all)",
      runs.a, runs.b, runs.total));
  return std::move(b);
}

// A job stopped before it runs (SimulateOptions::stop_when_not_fitting): what the schedule
// alone says, and the summary's fit verdict.
Simulation NotFitting(Schedule schedule, const MemoryFloor& floor, const CostModel& cost,
                      const StepContext& ctx) {
  Simulation sim;
  sim.schedule = std::move(schedule);
  sim.floor_over_capacity = floor;
  sim.reported_role = floor.role;
  SetDevice(cost, &sim);
  sim.summary = SummaryHead(sim.schedule, floor.role, ctx);
  Summary& s = sim.summary;
  s.fits = false;
  s.warnings.push_back(fmt::format(
      "does not fit: role '{}' holds at least {:.2f} GiB at {} whatever the timing, of {:.2f} "
      "GiB usable (not simulated further)",
      s.role, ToGiB(floor.bytes),
      floor.op >= 0 ? "op '" + OpIdOf(sim.schedule, sim.schedule.ops[floor.op]) + "'"
                    : "the step's start",
      s.usable_gib));
  return sim;
}

}  // namespace

Result<Simulation> SimulateScenario(const Scenario& sc, const SimulateOptions& options) {
  std::shared_ptr<const ModelTree> shared;
  if (options.trees != nullptr) {
    Result<std::shared_ptr<const ModelTree>> cached =
        options.trees->Get(sc.model, ScenarioModelOptions(sc));
    if (!cached.ok()) return InScenario(cached.status(), sc);
    shared = std::move(cached).value();
  } else {
    SS_ASSIGN_OR_RETURN(ModelTree loaded, LoadScenarioModel(sc));
    shared = std::make_shared<const ModelTree>(std::move(loaded));
  }
  const ModelTree& tree = *shared;
  // Plan and basis caches key on the tree's address: only trees from a tree cache recur.
  StepSchedules schedules(sc, shared, options.schedules,
                          options.trees != nullptr ? options.plans : nullptr,
                          options.trees != nullptr ? options.bases : nullptr);
  SS_RETURN_IF_ERROR(schedules.plan().status());
  // Any error of the fast path falls through to the whole step, which reports it as always.
  if (const std::optional<SteadyStateRuns> runs =
          options.exact ? std::nullopt : PlanSteadyState(sc)) {
    if (Result<ScenarioPricing> pricing = PriceScenario(sc, tree, options); pricing.ok()) {
      if (std::optional<Simulation> fast = SimulateSteadyState(schedules, *pricing, *runs, options))
        return std::move(*fast);
    }
  }
  // The scenario → builder options bridge lives in core (schedule_options.h), shared with the
  // backend, so a prediction and an execution of one scenario build the same schedule (less
  // the gradient buffers' parameter names, which only a backend reads).
  Result<Schedule> built = schedules.Build(ScheduleMemo::kWholeStep);
  if (!built.ok()) return InScenario(built.status(), sc);
  Schedule schedule = std::move(built).value();
  SS_ASSIGN_OR_RETURN(ScenarioPricing pricing, PriceScenario(sc, tree, options));
  if (options.stop_when_not_fitting && pricing.ctx.usable_bytes > 0) {
    const MemoryFloor floor = schedules.Floor(ScheduleMemo::kWholeStep, schedule);
    if (floor.bytes > pricing.ctx.usable_bytes) {
      return NotFitting(std::move(schedule), floor, *pricing.cost, pricing.ctx);
    }
  }
  return SimulateSchedule(std::move(schedule), *pricing.cost, pricing.ctx);
}

Summary SummarizeStep(const Simulation& sim, const StepContext& ctx) {
  return BuildSummary(sim, ctx);
}

Trace SimulationTrace(const Simulation& sim, const std::string& tool_version) {
  TraceInfo info;
  info.kind = "predicted";
  info.tool_version = tool_version;
  info.scenario = sim.summary.scenario;
  info.summary = SummaryToJson(sim.summary);
  info.device = {{"gpu", sim.gpu_name},
                 {"description", sim.gpu_description},
                 {"nodes", sim.nodes},
                 {"world_size", sim.schedule.world_size}};
  // How overlapped compute was slowed: one calibrated factor, or the contention model's figures.
  if (sim.overlap.uniform_slowdown >= 1.0) {
    info.extra["overlap_slowdown"] = sim.overlap.uniform_slowdown;
  } else {
    info.extra["overlap_contention"] = {{"sm_count", sim.overlap.sm_count},
                                        {"hbm_gbps", sim.overlap.hbm_gbps}};
  }
  return MakeTrace(sim.schedule, sim.timeline, sim.memory, info);
}

// torchtitan's llama3_8b.toml training settings: one 8192-token sequence per GPU and its
// op-level selective activation checkpointing (every second matmul recomputed).
nlohmann::json DefaultScenarioJson() {
  return nlohmann::json::parse(R"({
    "model": "llama3-8b",
    "cluster": {"gpu": "h100-sxm", "nodes": 1, "gpus_per_node": 8},
    "parallelism": {"dp_shard": -1, "dp_replicate": 1, "tp": 1, "cp": 1, "pp": 1, "ep": 1},
    "fsdp": {"reshard_after_forward": true, "forward_prefetch_depth": 1,
             "backward_prefetch_depth": 1,
             "mix_precision": {"param_dtype": "bfloat16", "reduce_dtype": "float32"}},
    "training": {"local_batch": 1, "seq_len": 8192, "grad_accum": 1,
                 "activation_checkpoint": "selective_op:2", "optimizer": "adamw"}
  })");
}

ScenarioDocument DefaultScenarioDocument() {
  return {DefaultScenarioJson(), std::string(kDefaultScenarioSource),
          std::filesystem::current_path().string()};
}

}  // namespace shardscope::sim
