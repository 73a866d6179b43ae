// The fast path of a step with many micro-batches: simulate the same job with two short
// micro-batch counts a < b, both past the warm-up (the pipeline fill, FSDP's first all-gathers
// and sharded-gradient allocations), and extrapolate the periodic middle linearly to the real
// count M. Every time figure of a summary is a sum over ops whose per-micro-batch part repeats,
// so it is affine in the micro-batch count once the schedule's steady state is reached; memory
// peaks are constant from there (1F1B and interleaved 1F1B cap the micro-batches in flight).
//
// Contents:
//   SteadyStateRuns       M and the two short counts (a, b) of a scenario's fast path
//   PlanSteadyState       whether a scenario has a fast path, and with which counts
//   WithMicroBatches      the scenario with m micro-batches of the same size
//   ReachedSteadyState    whether the longer run's first stage already runs at the two runs'
//                         slope (1F1B: stages of unequal work fill later)
//   ExtrapolateSummary    the summaries (and step accounts) of a and b → the summary of M, or
//                         nullopt when the two runs are not in the same steady state
//
// Which jobs: pp > 1 with grad_accum 1 (the micro-batches are the pipeline's): 1F1B with
// a = pp + 1, b = 2·pp + 1; interleaved 1F1B (period pp, its round; M a multiple of pp, whose
// rounds are pp long) with a = 2·pp, b = 3·pp; pp = 1
// with gradient accumulation, a = 3, b = 4. Only when a + b ≤ M / 2. GPipe is never extrapolated:
// its memory grows with M. The check behind ExtrapolateSummary's nullopt (equal peaks, role and
// fit in a and b), and the simulator's on the allocator (neither run may meet the capacity: see
// RoleMemory::capacity_hits), send anything else back to the full simulation, which `--exact`
// always runs and traces are always drawn from. tests/engine/steady_state_test.cpp holds the fast
// path to within 0.1% of the full simulation in step time and peak memory.
#pragma once

#include <optional>

#include "core/config/scenario.h"
#include "core/schedule/schedule.h"
#include "core/timeline/timeline.h"
#include "core/trace/accounting.h"
#include "sim/engine/summary.h"

namespace shardscope::sim {

struct SteadyStateRuns {
  int total = 0;  // M
  int a = 0;      // the shorter run's micro-batches
  int b = 0;      // the longer's
  // 1F1B: the longer run must show the steady state's period on the first stage (its forwards
  // one slope apart; simulator.cpp, ReachedSteadyState) before its slope is used.
  bool check_period = false;
};

std::optional<SteadyStateRuns> PlanSteadyState(const Scenario& scenario);

// Under runs.check_period, whether the longer run (its schedule and timeline) had reached the
// steady state: its first stage starts the forward compute of its last pp micro-batches one
// slope apart each, the slope being (longer − shorter step) / (b − a). Always true otherwise.
bool ReachedSteadyState(const Schedule& longer, const Timeline& timeline,
                        const SteadyStateRuns& runs, double shorter_step_s, double longer_step_s);

// `scenario` with `micro_batches` micro-batches of the same size: pipeline micro-batches under
// pp (local_batch scaled with them), gradient-accumulation steps without.
Scenario WithMicroBatches(const Scenario& scenario, int micro_batches);

// `a` and `b`: the summaries of runs.a and runs.b micro-batches, `account_a` / `account_b`
// their reported roles' step accounts (for the overlap ratio); `peak_flops` is StepContext's,
// for the MFU.
std::optional<Summary> ExtrapolateSummary(const Summary& a, const StepAccount& account_a,
                                          const Summary& b, const StepAccount& account_b,
                                          const SteadyStateRuns& runs, double peak_flops);

}  // namespace shardscope::sim
