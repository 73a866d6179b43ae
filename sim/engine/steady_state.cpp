#include "sim/engine/steady_state.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/trace/op_id.h"

namespace shardscope::sim {
namespace {

// Peaks are sums of the same buffers in both runs, so "equal" is equal to rounding.
bool Same(double x, double y) { return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(y)); }

// The affine extension through (a, x_a) and (b, x_b), at M.
struct Line {
  double a, b, m;
  double operator()(double xa, double xb) const { return xb + (xb - xa) * (m - b) / (b - a); }
};

std::map<std::string, double> Extend(const std::map<std::string, double>& a,
                                     const std::map<std::string, double>& b, const Line& at) {
  std::map<std::string, double> out;
  for (const auto& [k, vb] : b) {
    const auto it = a.find(k);
    out[k] = std::max(0.0, at(it == a.end() ? 0.0 : it->second, vb));
  }
  return out;
}

// A peak that happens at the same time in both runs is in the warm-up and stays there; one
// that moves is past the periodic middle and moves with it.
bool SameCollectives(const std::vector<Summary::ExposedCollective>& a,
                     const std::vector<Summary::ExposedCollective>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].op_id != b[i].op_id || !Same(a[i].exposed_s, b[i].exposed_s)) return false;
  }
  return true;
}

double PeakTime(double ta, double tb, const Line& at) { return Same(ta, tb) ? tb : at(ta, tb); }

// The op at a peak that moves with the count: in the longer run it is micro-batch k, in the
// step k + (M − b) (the peak moves by the periodic middle's M − b micro-batches), so the op_id
// names one of the step's ops, not the short run's (mb4 where --exact says mb31).
std::string PeakOp(double ta, double tb, const std::string& op, const SteadyStateRuns& runs) {
  if (Same(ta, tb)) return op;
  Result<OpId> id = ParseOpId(op);
  if (!id.ok() || id->micro < 0) return op;
  id->micro += runs.total - runs.b;
  return FormatOpId(*id);
}

}  // namespace

std::optional<SteadyStateRuns> PlanSteadyState(const Scenario& sc) {
  const ParallelismConfig& p = sc.parallelism;
  SteadyStateRuns runs;
  if (p.pp > 1) {
    if (p.pp_schedule == PpSchedule::kGPipe || sc.training.grad_accum != 1) return std::nullopt;
    // 1F1B repeats per micro-batch once the pipeline is full (pp in flight): the step time is
    // affine in M from a = pp + 1 on. The caching allocator's reserve can still grow for a while
    // after that (its blocks split and coalesce differently), and a run past it must show the
    // growth: b = 2·pp + 1, as the pair (2·pp, 2·pp + 1) this replaced, so a reserve that grows
    // between the two runs makes them disagree and the whole step runs. Measured on Llama 3
    // 70B-sized stages (bench/explore_benchmark, BM_Grid70b_SteadyStateAgreement): with M =
    // 4·pp, 5·pp and 8·pp this pair and the old one left the same single reserve 0.69% low
    // (an interleaved job) and every step time exact; b = pp + 2 left 12 more 1F1B jobs'
    // reserves 0.3-0.9% low. With M = 4·pp, 8·pp and 12·pp and the threshold below: 91 jobs
    // take the fast path, that one deviation.
    // The interleaved schedule has no fast path: its runs of 2·pp and 3·pp (whole rounds) can
    // still be filling, and no spacing inside so short a run tells. 16 blocks on 4 stages of
    // TP 2 with full checkpointing add 6.67 ms a micro-batch from 8 to 12 and 8.33 from 16 on,
    // so a 40-micro-batch step came out 5% fast; Llama 3 70B-sized stages on 8, 6.5%
    // (BM_Grid70b_SteadyStateAgreement found 14 such jobs of 71). The first stage's forwards
    // of the last round are no test: on a job whose time is affine from 4 micro-batches on
    // (8 blocks on 2 stages), they start 0.6% off the slope.
    if (p.pp_schedule != PpSchedule::k1F1B) return std::nullopt;
    runs = {p.pp_microbatches, p.pp + 1, 2 * p.pp + 1, /*period_span=*/p.pp - 1};
  } else {
    // The first accumulation step allocates the sharded gradients and the caching allocator's
    // reserve settles in the third (its blocks split and coalesce differently before).
    runs = {sc.training.grad_accum, 3, 4};
  }
  // Worth it only when the two short runs together are at most half the step. The runs cost
  // about their share of the step's micro-batches, and a pair that disagrees (the reserve still
  // growing between them) costs its first run or both on top of the whole step: on the 70B
  // grid (bench/explore_benchmark, M = 4·pp, runs of 3.25·pp) 18 of 46 PP 8 jobs took the fast
  // path at 40 ms against about 49 for their whole step, and 10 fell back at 68 ms.
  if (2 * (runs.a + runs.b) > runs.total) return std::nullopt;
  return runs;
}

// Stages of unequal work fill later: 8 blocks on 4 stages as torchtitan splits them
// ([2, 3, 2, 1]) add 3.876 ms a micro-batch from 5 to 9 and 3.898 from 9 on, and runs of 5 and 9
// put a 48-micro-batch step 0.45% low; their first stage's forwards start 3.898 ms apart, which
// tells. Without a pipeline the accumulation steps follow one another.
bool ReachedSteadyState(const Schedule& longer, const Timeline& timeline,
                        const SteadyStateRuns& runs, double shorter_step_s, double longer_step_s) {
  const int pp = static_cast<int>(longer.roles.size());
  if (runs.period_span <= 0 || pp <= 1 || runs.b <= runs.period_span) return true;
  // Forwards issued after a backward of the steady state: the first stage's forward of
  // micro-batch pp waits on micro-batch 0's backward, whose post-backward differs (without
  // gradient sync it casts the gradients into the accumulator, later ones add them).
  const int last = runs.b - 1, first = last - runs.period_span;
  int64_t start_last = -1, start_first = -1;
  for (size_t i = 0; i < longer.ops.size(); ++i) {
    const ScheduleOp& op = longer.ops[i];
    // Its forward compute: collectives and copies of a micro-batch start where prefetch lets.
    if (op.role != 0 || op.type != OpType::kCompute || op.id_phase != OpPhase::kForward ||
        (op.micro_step != last && op.micro_step != first)) {
      continue;
    }
    int64_t& at = op.micro_step == last ? start_last : start_first;
    const int64_t t = timeline.ops[i].start_ns;
    if (at < 0 || t < at) at = t;
  }
  if (start_last < 0 || start_first < 0) return false;
  const double slope_s = (longer_step_s - shorter_step_s) / (runs.b - runs.a);
  const double period_s = static_cast<double>(start_last - start_first) * 1e-9 / (last - first);
  // The extrapolation's promise is 0.1% of the step; a period 0.01% off the slope is a run
  // still filling.
  return std::abs(period_s - slope_s) <= 1e-4 * std::abs(slope_s) + 1e-9;
}

Scenario WithMicroBatches(const Scenario& sc, int micro_batches) {
  Scenario out = sc;
  if (sc.parallelism.pp > 1) {
    const int64_t per_micro = sc.training.local_batch / sc.parallelism.pp_microbatches;
    out.parallelism.pp_microbatches = micro_batches;
    out.training.local_batch = per_micro * micro_batches;
  } else {
    out.training.grad_accum = micro_batches;
  }
  return out;
}

std::optional<Summary> ExtrapolateSummary(const Summary& a, const StepAccount& account_a,
                                          const Summary& b, const StepAccount& account_b,
                                          const SteadyStateRuns& runs, double peak_flops,
                                          std::optional<double> step_reserve_gib) {
  // The caching allocator's reserve can still grow with the count after two runs agree on it
  // (its blocks split and coalesce differently as the step goes on): up to 4.4% on Llama 3
  // 70B-sized interleaved stages (56.62 GiB at 16 and 24 micro-batches, 59.09 at 80), and a
  // reserve of 78.05 of 78.10 GiB usable in both runs was 77.15 in a step that met the capacity
  // and released its cache. A fit verdict must not rest on that: near the capacity the whole
  // step runs.
  constexpr double kReserveShareOfUsable = 0.95;
  const double reserve_gib = step_reserve_gib.value_or(b.peak_memory_reserved_gib);
  if (b.usable_gib > 0 && std::max({a.peak_memory_reserved_gib, b.peak_memory_reserved_gib,
                                    reserve_gib}) > kReserveShareOfUsable * b.usable_gib) {
    return std::nullopt;
  }
  if (a.role != b.role || a.peak_memory_role != b.peak_memory_role || a.fits != b.fits ||
      !Same(a.peak_memory_allocated_gib, b.peak_memory_allocated_gib) ||
      (!step_reserve_gib && !Same(a.peak_memory_reserved_gib, b.peak_memory_reserved_gib))) {
    return std::nullopt;
  }
  for (int c = 0; c < kNumMemCategories; ++c) {
    if (!Same(a.memory_at_peak_gib[c], b.memory_at_peak_gib[c]) ||
        !Same(a.memory_max_by_category_gib[c], b.memory_max_by_category_gib[c])) {
      return std::nullopt;
    }
  }
  const Line at{static_cast<double>(runs.a), static_cast<double>(runs.b),
                static_cast<double>(runs.total)};
  Summary s = b;
  s.tokens_per_step = b.tokens_per_step / runs.b * runs.total;
  s.step_time_s = at(a.step_time_s, b.step_time_s);
  s.peak_memory_reserved_gib = reserve_gib;
  s.compute_s = at(a.compute_s, b.compute_s);
  s.exposed_comm_s = at(a.exposed_comm_s, b.exposed_comm_s);
  s.idle_s = at(a.idle_s, b.idle_s);
  s.exposed_copy_s = at(a.exposed_copy_s, b.exposed_copy_s);
  s.host_compute_s = at(a.host_compute_s, b.host_compute_s);
  s.overlap_stretch_s = at(a.overlap_stretch_s, b.overlap_stretch_s);
  const double comm = at(static_cast<double>(account_a.comm_ns), account_b.comm_ns);
  const double overlapped =
      at(static_cast<double>(account_a.overlapped_comm_ns), account_b.overlapped_comm_ns);
  s.overlap_ratio = comm > 0 ? overlapped / comm : 0.0;
  s.compute_by_kind_s = Extend(a.compute_by_kind_s, b.compute_by_kind_s, at);
  s.comm_s = Extend(a.comm_s, b.comm_s, at);
  s.exposed_comm_by_kind_s = Extend(a.exposed_comm_by_kind_s, b.exposed_comm_by_kind_s, at);
  s.comm_by_purpose_s = Extend(a.comm_by_purpose_s, b.comm_by_purpose_s, at);
  s.exposed_comm_by_purpose_s =
      Extend(a.exposed_comm_by_purpose_s, b.exposed_comm_by_purpose_s, at);
  s.edge_exposed_comm_s = std::max(0.0, at(a.edge_exposed_comm_s, b.edge_exposed_comm_s));
  // The most exposed collectives are named by op_id, and an op_id carries its micro-batch: a
  // list the two runs agree on (warm-up and edges) holds for the whole step; one that moves
  // with the count would name ops of the short run, so none is listed (--exact lists them).
  if (!SameCollectives(a.exposed_collectives, b.exposed_collectives)) {
    s.exposed_collectives.clear();
  }
  s.peak_memory_time_s = PeakTime(a.peak_memory_time_s, b.peak_memory_time_s, at);
  s.peak_memory_op = PeakOp(a.peak_memory_time_s, b.peak_memory_time_s, b.peak_memory_op, runs);
  for (int p = 0; p < kNumStepPhases; ++p) {
    s.phase_peaks[p].time_s = PeakTime(a.phase_peaks[p].time_s, b.phase_peaks[p].time_s, at);
    s.phase_peaks[p].op =
        PeakOp(a.phase_peaks[p].time_s, b.phase_peaks[p].time_s, b.phase_peaks[p].op, runs);
  }
  SetStepRates(peak_flops, &s);
  return s;
}

}  // namespace shardscope::sim
