// The result of one predicted step as formats.md §2 defines it, plus what the CLI prints.
//
// Contents:
//   Summary        every figure of the summary JSON (+ additions: per-kind and per-purpose
//                  exposure, the most exposed collectives and the step's unhideable edges
//                  (summary_comm.h), the op at the peak, the peak of each step phase, each
//                  category's step maximum, the overflowing category, which memory figure is
//                  which)
//   SetStepRates   tokens/s/GPU, TFLOP/s and MFU from the step time and the batch
//   SummaryToJson  formats.md §2 (field names fixed; extra fields added, never renamed)
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/timeline/step_phase.h"

namespace shardscope::sim {

struct Summary {
  nlohmann::json scenario;  // resolved scenario
  std::string role;         // the role whose step is reported (the slowest)
  int world_size = 1;
  int64_t tokens_per_step = 0;
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double tflops_per_gpu = 0;  // model FLOPs convention (model_flops.h)
  double mfu = 0;             // over the catalog's dense bf16 peak
  double peak_tflops = 0;     // that peak
  double model_flops_per_token = 0;
  // Time figures: the reported role's StepAccount (core/trace/accounting.h), what `stats`
  // reports for that rank of this run's trace.
  double compute_s = 0;
  double exposed_comm_s = 0;
  double idle_s = 0;
  // h2d / d2h copies (offload) while neither compute nor communication runs: compute_s +
  // exposed_comm_s + exposed_copy_s + idle_s = step_time_s.
  double exposed_copy_s = 0;
  double host_compute_s = 0;  // CPU work (offloaded optimizer step), GPU idle meanwhile
  double overlap_ratio = 0;
  // GPU compute time the reported role lost to communication running beside it (SMs its
  // blocks hold, HBM bandwidth it moves): compute_s minus the same work unslowed.
  double overlap_stretch_s = 0;
  // Priced (unslowed) GPU compute time of the reported role by what it is: "gemm" (linears,
  // routers, experts), "attention", "elementwise" (norms, activations, embedding), "loss",
  // "optimizer", "overhead" (per-op framework overhead); recomputation counted in its kind.
  std::map<std::string, double> compute_by_kind_s;
  std::map<std::string, double> comm_s;  // busy time per kind (collectives, h2d / d2h copies)
  std::map<std::string, double> exposed_comm_by_kind_s;  // that kind's busy time − compute
  // The same two figures by what the collectives are for (core/trace/comm_purpose.h:
  // fsdp_all_gather, fsdp_reduce_scatter, hsdp_all_reduce, tp, cp, ep, pp), purposes present.
  std::map<std::string, double> comm_by_purpose_s;
  std::map<std::string, double> exposed_comm_by_purpose_s;
  // The reported role's collectives with the most exposed time (at most 5, most first), and
  // how much of it lies at the step's edges (summary_comm.h): before the forward reaches its
  // second unit or after the backward leaves its second-to-last one, where no prefetch depth
  // gives the collective compute to hide under.
  struct ExposedCollective {
    std::string op_id;
    std::string purpose;
    double duration_s = 0;
    double exposed_s = 0;
    double edge_exposed_s = 0;
  };
  std::vector<ExposedCollective> exposed_collectives;
  double edge_exposed_comm_s = 0;  // exposed communication at those edges (all collectives)
  double peak_memory_allocated_gib = 0;
  double peak_memory_reserved_gib = 0;
  double peak_memory_time_s = 0;  // when allocated memory peaked
  std::string peak_memory_op;     // the op whose allocation reached the peak
  // The role those allocated figures are of: the one with the highest allocated peak (the
  // reserved peak is the highest over the roles). May differ from `role` under a pipeline.
  std::string peak_memory_role;
  std::array<double, kNumMemCategories> memory_at_peak_gib{};  // allocated, at that peak
  // Each category's own maximum over the step (same role), beside its value at the peak.
  std::array<double, kNumMemCategories> memory_max_by_category_gib{};
  // The same role's allocated peak within each step phase (StepPhase order), where a knob's
  // effect shows even when the global peak sits elsewhere; op "" for a phase without memory
  // effects.
  struct PhasePeakFigures {
    double allocated_gib = 0;
    double time_s = 0;
    std::string op;
  };
  std::array<PhasePeakFigures, kNumStepPhases> phase_peaks{};
  double hbm_gib = 0;
  // Pinned host memory of the role with the most (offload), by category; not part of the HBM
  // figures above.
  double host_memory_gib = 0;
  std::array<double, kNumMemCategories> host_memory_by_category_gib{};
  double usable_gib = 0;
  bool fits = true;
  std::string overflow_category;  // when it does not fit: the allocation that overflowed
  std::vector<std::string> warnings;
  // The micro-batch counts simulated when the figures were extrapolated from two shorter runs
  // (steady_state.h): {a, b}; empty when the whole step ran.
  std::vector<int> extrapolated_from_micro_batches;
};

// Fills tokens_per_s_per_gpu, tflops_per_gpu and mfu from step_time_s, tokens_per_step,
// world_size and model_flops_per_token; `peak_flops` is the dense bf16 peak (0: no MFU).
void SetStepRates(double peak_flops, Summary* s);

nlohmann::json SummaryToJson(const Summary& s);

}  // namespace shardscope::sim
