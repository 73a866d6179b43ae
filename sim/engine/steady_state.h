// The fast path of a step with many micro-batches: simulate the same job with two short
// micro-batch counts a < b, both past the warm-up (the pipeline fill, FSDP's first all-gathers
// and sharded-gradient allocations), and extrapolate the periodic middle linearly to the real
// count M. Every time figure of a summary is a sum over ops whose per-micro-batch part repeats,
// so it is affine in the micro-batch count once the schedule's steady state is reached; memory
// peaks are constant from there (1F1B caps the micro-batches in flight).
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
// a = pp + 1, b = 2·pp + 1; pp = 1 with gradient accumulation, a = 3, b = 4. Only when
// a + b ≤ M / 2. GPipe is never extrapolated (its memory grows with M), nor the interleaved
// schedule (its short runs can still be filling, and nothing in them tells: PlanSteadyState).
// The checks behind ExtrapolateSummary's nullopt (equal allocated peaks, role and fit in a and
// b; a reserve within 5% of the usable memory), ReachedSteadyState's, and the simulator's on the
// allocator (neither run may meet the capacity: see RoleMemory::capacity_hits; where a and b
// reserve differently, each role's allocator calls must splice into the step's and replay
// without meeting it: reserve_splice.h), send anything else back to the full simulation, which
// `--exact` always runs and traces are always drawn from. tests/engine/steady_state_test.cpp holds
// the fast path to within 0.1% of the full simulation in step time and peak memory;
// bench/explore_benchmark's BM_Grid70b_SteadyStateAgreement checks it on Llama 3 70B-sized stages.
// A role whose short runs reserve alike keeps their reserve: one that grows only later in a long
// step (its blocks split and coalesce differently as it goes on) would not show in them, hence
// the margin to the capacity. A role whose runs differ gets the step's own: its calls spliced and
// replayed (TP 8 x PP 8 x 64 micro-batches of GPT-3 175B-sized stages fell back to the whole step
// before; three of its eight stages differ).
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
  // Pipelines: the longer run must show the steady state's period on the first stage before
  // its slope is used (ReachedSteadyState): the forwards of its micro-batches b − 1 − span and
  // b − 1 start span slopes apart (1F1B: pp − 1). 0: no check (accumulation steps follow one
  // another).
  int period_span = 0;
};

std::optional<SteadyStateRuns> PlanSteadyState(const Scenario& scenario);

// With runs.period_span, whether the longer run (its schedule and timeline) had reached the
// steady state: its first stage starts the forward compute of micro-batches b − 1 − span and
// b − 1 span slopes apart, the slope being (longer − shorter step) / (b − a). Always true
// otherwise.
bool ReachedSteadyState(const Schedule& longer, const Timeline& timeline,
                        const SteadyStateRuns& runs, double shorter_step_s, double longer_step_s);

// `scenario` with `micro_batches` micro-batches of the same size: pipeline micro-batches under
// pp (local_batch scaled with them), gradient-accumulation steps without.
Scenario WithMicroBatches(const Scenario& scenario, int micro_batches);

// `a` and `b`: the summaries of runs.a and runs.b micro-batches, `account_a` / `account_b`
// their reported roles' step accounts (for the overlap ratio); `peak_flops` is StepContext's,
// for the MFU. `step_reserve_gib`: the step's reserve where the two runs' differ (from their
// allocator calls, reserve_splice.h); without it they must agree.
std::optional<Summary> ExtrapolateSummary(const Summary& a, const StepAccount& account_a,
                                          const Summary& b, const StepAccount& account_b,
                                          const SteadyStateRuns& runs, double peak_flops,
                                          std::optional<double> step_reserve_gib = std::nullopt);

}  // namespace shardscope::sim
