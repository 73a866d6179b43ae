#include "sim/calibrate/sample.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "core/model/model_source.h"
#include "core/plan/planner.h"
#include "core/schedule/op_kind.h"
#include "core/schedule/schedule_options.h"
#include "core/util/count_text.h"
#include "sim/cost/calibration.h"
#include "sim/cost/cost_model.h"

namespace shardscope::calibrate {
namespace {

struct Built {
  ModelTree tree;
  Schedule schedule;
};

// A run table's scenario predicted to need more than this many times the usable memory cannot
// be what ran; between 1 and this it is noted, as the memory estimate's own error.
constexpr double kImplausibleMemoryRatio = 1.5;

// The scenario key a model loaded from `m` is named by.
std::string ModelKey(const ModelSource& m) {
  switch (m.kind) {
    case ModelSource::Kind::kHfConfigFile:
      return "model.hf_config";
    case ModelSource::Kind::kModuleTreeFile:
      return "model.module_tree";
    case ModelSource::Kind::kHfInline:
      return "model.hf";
    case ModelSource::Kind::kBuiltin:
      break;
  }
  return "model";
}

// The schedule `shardscope run` executes for `rank` (rank < 0: the simulator's own roles).
// `where` names the scenario in errors ("runs.json: runs[0] (id "a").scenario"): a model file
// that cannot be read says only its own path, which leaves the user to guess which run of
// which input named it.
Result<Built> BuildFor(const Scenario& sc, int rank, const std::string& where) {
  Built b;
  Result<ModelTree> tree = LoadModel(sc.model, ScenarioModelOptions(sc));
  if (!tree.ok()) return tree.status().WithContext(where + "." + ModelKey(sc.model));
  b.tree = std::move(tree).value();
  Result<Plan> plan = PlanScenario(sc, b.tree);
  if (!plan.ok()) return plan.status().WithContext(where);
  Result<Schedule> schedule = Schedule();
  if (rank < 0) {
    schedule = BuildScenarioSchedule(sc, b.tree, *plan);
  } else {
    ScheduleOptions so = ScheduleOptionsFromScenario(sc);
    so.rank = rank;
    schedule = BuildSchedule(b.tree, *plan, so);
  }
  if (!schedule.ok()) return schedule.status().WithContext(where);
  b.schedule = std::move(schedule).value();
  return b;
}

// A run's scenario in messages: its JSON path in the table, and its file when it has one.
std::string ScenarioWhere(const RunInput& r) {
  const std::string where = r.source + ".scenario";
  return r.scenario_file.empty() ? where : fmt::format("{} ({})", where, r.scenario_file);
}

// Catalog hardware and default figures of the scenario; calibration files the scenario names
// are left out: a fit starts from, and is regularised towards, the catalog.
Status FillPricing(const Scenario& sc, const ModelTree& tree, const std::string& where, Sample* s) {
  Result<Hardware> hw = LookupHardware(sc.cluster.gpu, sc.cluster.gpus_per_node, sc.cluster.nodes);
  if (!hw.ok()) return hw.status().WithContext(sc.source + ": cluster.gpu");
  s->hw = *hw;
  // The catalog's spelling, which groups the inputs: "H100-SXM" and "h100-sxm" are one GPU
  // (they were fitted apart, into two files).
  s->gpu = hw->gpu.name;
  s->defaults = DefaultCostParams(s->hw);
  if (sc.training.attention_backend == AttentionBackend::kCudnn) {
    SS_RETURN_IF_ERROR(UseCudnnAttention(s->hw, &s->defaults).WithContext(sc.source));
  }
  // The file is not used (the fit starts from the catalog), but a scenario naming one that
  // cannot be read is wrong, and PriceScenario's error would name neither the run nor the key.
  if (!sc.cluster.cost_model.empty()) {
    const Result<Calibration> cal = LoadCalibration(sc.cluster.cost_model);
    if (!cal.ok()) return cal.status().WithContext(where + ".cluster.cost_model");
  }
  Result<sim::ScenarioPricing> priced = sim::PriceScenario(sc, tree);
  if (!priced.ok()) return priced.status().WithContext(where);
  sim::ScenarioPricing pricing = std::move(priced).value();
  s->ctx = pricing.ctx;
  s->ctx.keep_memory_samples = false;
  return Status::Ok();
}

// A measured run ran, so it fit in memory. A scenario the simulator puts far over the capacity
// is not the scenario that was measured (a wrong GPU, batch or parallelism), and fitting its
// step time would bend every figure towards a job that never existed. Just over is the memory
// estimate's error as much as the user's, so that is only noted. The same holds for a trace's
// scenario (its metadata, or the one given beside a PyTorch trace) as for a run table's. The
// schedule goes through the simulation and back, not copied.
Status CheckItRanInMemory(const Sample& s, const std::string& gpu, Built& b,
                          std::vector<std::string>* notes) {
  std::unique_ptr<CostModel> cost = MakeDefaultCostModel(s.hw, s.defaults);
  SS_ASSIGN_OR_RETURN(sim::Simulation sim,
                      sim::SimulateSchedule(std::move(b.schedule), *cost, s.ctx));
  b.schedule = std::move(sim.schedule);
  const double over = sim.summary.usable_gib > 0
                          ? sim.summary.peak_memory_reserved_gib / sim.summary.usable_gib
                          : 0.0;
  if (!sim.summary.fits && over > kImplausibleMemoryRatio) {
    return InvalidInput(fmt::format(
        "{}: the simulator predicts that this scenario does not fit in memory ({:.1f} GiB "
        "reserved at the peak vs {:.1f} GiB usable on {}, {:.1f}x), so it cannot be the "
        "scenario of a measured run (expected the GPU, parallelism, batch and checkpointing "
        "that ran)",
        s.source, sim.summary.peak_memory_reserved_gib, sim.summary.usable_gib, gpu, over));
  }
  if (!sim.summary.fits) {
    notes->push_back(fmt::format(
        "{}: predicted {:.1f} GiB reserved at the peak, over the {:.1f} GiB usable, though it "
        "ran; fitted anyway (the memory estimate is off, or the run used allocator settings "
        "the model does not have)",
        s.source, sim.summary.peak_memory_reserved_gib, sim.summary.usable_gib));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<double>> Sample::Predict(const CostParams& params) const {
  std::unique_ptr<CostModel> cost = MakeDefaultCostModel(hw, params);
  SS_ASSIGN_OR_RETURN(sim::Simulation sim, sim::SimulateSchedule(schedule, *cost, ctx));
  std::vector<double> out;
  if (figure == Figure::kOpDuration) {
    for (int op : op_index) {
      out.push_back(static_cast<double>(sim.timeline.ops[op].duration_ns()));
    }
    if (step_observed) out.push_back(sim.summary.step_time_s);
  } else if (figure == Figure::kStepTime) {
    out.push_back(sim.summary.step_time_s);
  } else {
    out.push_back(sim.summary.tokens_per_s_per_gpu);
  }
  return out;
}

namespace {

// One collective of one run, as each rank of its group saw it: (run, op_id, occurrence, the
// group's ranks).
using CollectiveKey = std::tuple<std::string, std::string, int, std::vector<int>>;

// A rank's collective lasts from its own call to the end of the transfer, so it holds the
// rank's wait for the last of its group to arrive: on a GPU its NCCL kernel spins until then,
// on CPU ranks sharing cores the others may not be running. The cost model prices the
// transfer alone, which the last to arrive measures. So every rank's observation of a
// collective takes the shortest duration among the ranks of its run (joined by run_id) that
// recorded it; they form one cross-validation group, as one measurement. Returns how many
// observations changed.
int TakeLastArrivals(const std::map<CollectiveKey, std::vector<int>>& seen,
                     std::vector<Observation>* observations) {
  int changed = 0;
  for (const auto& [key, obs] : seen) {
    if (obs.size() < 2) continue;
    double shortest = (*observations)[obs.front()].measured;
    for (int o : obs) shortest = std::min(shortest, (*observations)[o].measured);
    const int group = (*observations)[obs.front()].group;
    for (int o : obs) {
      Observation& x = (*observations)[o];
      if (x.measured != shortest) ++changed;
      x.measured = shortest;
      x.group = group;
    }
  }
  return changed;
}

}  // namespace

Result<PreparedInputs> PrepareSamples(const CalibrationInputs& inputs) {
  PreparedInputs p;
  int group = 0;
  std::map<CollectiveKey, std::vector<int>> collectives;
  for (const TraceInput& t : inputs.traces) {
    Sample s;
    s.source = fmt::format("{} rank {}", t.path, t.rank);
    SS_ASSIGN_OR_RETURN(Built b, BuildFor(t.scenario, t.rank, t.scenario.source));
    SS_RETURN_IF_ERROR(FillPricing(t.scenario, b.tree, t.scenario.source, &s));
    SS_RETURN_IF_ERROR(CheckItRanInMemory(s, t.scenario.cluster.gpu, b, &p.notes));
    // (op_id, occurrence) → op of the rank's one role.
    std::map<std::pair<std::string, int>, int> index;
    std::map<std::string, int> seen;
    for (size_t i = 0; i < b.schedule.ops.size(); ++i) {
      const ScheduleOp& op = b.schedule.ops[i];
      std::string op_id = OpIdOf(b.schedule, op);
      if (op.type == OpType::kWait || op_id.empty()) continue;
      const int occurrence = seen[op_id]++;
      index[{std::move(op_id), occurrence}] = static_cast<int>(i);
    }
    int unmatched = 0;
    std::map<std::pair<int, std::pair<int, int>>, int64_t> shapes;
    for (const MeasuredOp& m : t.ops) {
      auto it = index.find({m.op_id, m.occurrence});
      if (it == index.end()) {
        ++unmatched;
        continue;
      }
      const ScheduleOp& op = b.schedule.ops[it->second];
      s.op_index.push_back(it->second);
      s.observations.push_back(static_cast<int>(p.observations.size()));
      p.observations.push_back(
          {static_cast<int>(p.samples.size()), fmt::format("{} {}", s.source, m.op_id),
           static_cast<double>(m.dur_ns), group++, 1.0, true, s.hw.gpu.timing_jitter_ns});
      // A group collective (SerializesOnCommunicator: not a pipeline send or receive).
      if (!t.run_id.empty() && SerializesOnCommunicator(op.type) && op.group >= 0 &&
          b.schedule.groups[op.group].size() > 1) {
        collectives[{t.run_id, m.op_id, m.occurrence, b.schedule.groups[op.group].ranks}].push_back(
            static_cast<int>(p.observations.size()) - 1);
      }
      if (IsCollective(op.type) && op.group >= 0 && op.bytes > 0) {
        const GroupShape g =
            GroupShapeOf(b.schedule.groups[op.group], s.ctx.gpus_per_node, s.hw.node.nvlink_domain);
        if (g.size > 1) {
          int64_t& largest = shapes[{static_cast<int>(op.type), {g.ranks_per_node, g.nodes}}];
          largest = std::max(largest, op.bytes);
        }
      }
    }
    for (const auto& [key, bytes] : shapes) {
      s.observed_shapes.push_back(
          {{static_cast<OpType>(key.first), key.second.first, key.second.second}, bytes});
    }
    if (s.op_index.empty()) {
      return InvalidInput(fmt::format(
          "{}: no operation matches the scenario's schedule by op_id (is metadata.scenario the "
          "scenario this trace ran?)",
          s.source));
    }
    if (unmatched > 0) {
      p.notes.push_back(
          fmt::format("{}: {} of {} operations have no op_id in the schedule; left out", s.source,
                      unmatched, t.ops.size()));
    }
    if (t.zero_duration_ops > 0) {
      p.notes.push_back(
          fmt::format("{}: {} with an op_id and a zero duration (under 1 ns) left out", s.source,
                      CountOf(t.zero_duration_ops, "operation")));
    }
    if (t.step_time_s > 0) {
      s.step_observed = true;
      s.observations.push_back(static_cast<int>(p.observations.size()));
      p.observations.push_back({static_cast<int>(p.samples.size()),
                                fmt::format("{} step_time_s", s.source), t.step_time_s, group++,
                                std::sqrt(static_cast<double>(s.op_index.size()))});
    }
    s.schedule = std::move(b.schedule);
    p.samples.push_back(std::move(s));
  }
  if (const int changed = TakeLastArrivals(collectives, &p.observations); changed > 0) {
    p.notes.push_back(fmt::format(
        "{} of the ranks' collective durations are the shortest of their run's ranks (the last "
        "to arrive waits for no one; traces of one run are joined by metadata.run_id)",
        changed));
  }
  // A job measured several times is one prediction: each scenario (and figure) is built and
  // simulated once, its repeats sharing it (a table of 2,000 runs of one job took 2.6 minutes,
  // each row simulated on its own at every step of the fit).
  std::map<std::string, int> first_sample;  // figure and resolved scenario → sample
  for (const RunInput& r : inputs.runs) {
    Sample s;
    s.source = r.source;
    double measured = 0;
    if (r.step_time_s) {
      s.figure = Sample::Figure::kStepTime;
      measured = *r.step_time_s;
    } else if (r.tokens_per_s_per_gpu) {
      s.figure = Sample::Figure::kTokensPerS;
      measured = *r.tokens_per_s_per_gpu;
    } else {
      p.notes.push_back(r.source + ": peak memory only: not a cost-model figure, not fitted");
      continue;
    }
    const std::string key =
        fmt::format("{}:{}", static_cast<int>(s.figure), r.scenario.resolved.dump());
    const auto [earlier, first] = first_sample.emplace(key, static_cast<int>(p.samples.size()));
    if (!first) {
      const Sample& same = p.samples[static_cast<size_t>(earlier->second)];
      s.gpu = same.gpu;
      s.hw = same.hw;
      s.defaults = same.defaults;
      s.same_as = earlier->second;
    } else {
      const std::string where = ScenarioWhere(r);
      SS_ASSIGN_OR_RETURN(Built b, BuildFor(r.scenario, -1, where));
      SS_RETURN_IF_ERROR(FillPricing(r.scenario, b.tree, where, &s));
      SS_RETURN_IF_ERROR(CheckItRanInMemory(s, r.scenario.cluster.gpu, b, &p.notes));
      s.schedule = std::move(b.schedule);
    }
    if (r.peak_memory_reserved_gib) {
      p.notes.push_back(r.source + ": peak memory read, not fitted (no free figure moves it)");
    }
    s.observations.push_back(static_cast<int>(p.observations.size()));
    p.observations.push_back(
        {static_cast<int>(p.samples.size()),
         fmt::format(
             "{} {}", r.source,
             s.figure == Sample::Figure::kStepTime ? "step_time_s" : "tokens_per_s_per_gpu"),
         measured, group++});
    p.samples.push_back(std::move(s));
  }
  if (p.observations.empty()) {
    return InvalidInput("calibrate: the inputs hold no step time, tokens/s or operation to fit");
  }
  return p;
}

}  // namespace shardscope::calibrate
