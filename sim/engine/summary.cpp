#include "sim/engine/summary.h"

namespace shardscope::sim {

void SetStepRates(double peak_flops, Summary* s) {
  s->tokens_per_s_per_gpu = 0;
  if (s->step_time_s > 0 && s->world_size > 0) {
    s->tokens_per_s_per_gpu =
        static_cast<double>(s->tokens_per_step) / s->step_time_s / s->world_size;
  }
  s->tflops_per_gpu = s->model_flops_per_token * s->tokens_per_s_per_gpu / 1e12;
  s->mfu = peak_flops > 0 ? s->tflops_per_gpu * 1e12 / peak_flops : 0.0;
}

nlohmann::json SummaryToJson(const Summary& s) {
  using nlohmann::json;
  json j = json::object();
  j["scenario"] = s.scenario;
  j["step_time_s"] = s.step_time_s;
  j["tokens_per_s_per_gpu"] = s.tokens_per_s_per_gpu;
  j["tflops_per_gpu"] = s.tflops_per_gpu;
  j["mfu"] = s.mfu;
  j["compute_s"] = s.compute_s;
  j["exposed_comm_s"] = s.exposed_comm_s;
  j["idle_s"] = s.idle_s;
  j["overlap_ratio"] = s.overlap_ratio;
  json comm = json::object();
  // The three kinds formats.md lists are always present; others only when they occur.
  for (const char* k : {"all_gather", "reduce_scatter", "all_reduce"}) comm[k] = 0.0;
  for (const auto& [k, v] : s.comm_s) comm[k] = v;
  j["comm_s"] = comm;
  j["peak_memory_allocated_gib"] = s.peak_memory_allocated_gib;
  j["peak_memory_reserved_gib"] = s.peak_memory_reserved_gib;
  json at_peak = json::object();
  for (int c = 0; c < kNumMemCategories; ++c) {
    at_peak[std::string(MemCategoryName(static_cast<MemCategory>(c)))] = s.memory_at_peak_gib[c];
  }
  j["memory_at_peak_gib"] = at_peak;
  json max_by_category = json::object();
  for (int c = 0; c < kNumMemCategories; ++c) {
    max_by_category[std::string(MemCategoryName(static_cast<MemCategory>(c)))] =
        s.memory_max_by_category_gib[c];
  }
  j["memory_max_by_category_gib"] = max_by_category;
  json by_phase = json::object();
  for (int p = 0; p < kNumStepPhases; ++p) {
    const Summary::PhasePeakFigures& f = s.phase_peaks[p];
    by_phase[std::string(StepPhaseName(static_cast<StepPhase>(p)))] = {
        {"allocated_gib", f.allocated_gib}, {"time_s", f.time_s}, {"op", f.op}};
  }
  j["peak_memory_by_phase"] = by_phase;
  j["hbm_gib"] = s.hbm_gib;
  j["fits"] = s.fits;
  j["warnings"] = s.warnings;
  // Additions (formats.md allows new fields).
  j["exposed_comm_by_kind_s"] = s.exposed_comm_by_kind_s;
  j["comm_by_purpose_s"] = s.comm_by_purpose_s;
  j["exposed_comm_by_purpose_s"] = s.exposed_comm_by_purpose_s;
  json exposed = json::array();
  for (const Summary::ExposedCollective& e : s.exposed_collectives) {
    exposed.push_back({{"op_id", e.op_id},
                       {"purpose", e.purpose},
                       {"duration_s", e.duration_s},
                       {"exposed_s", e.exposed_s},
                       {"edge_exposed_s", e.edge_exposed_s}});
  }
  j["exposed_collectives"] = exposed;
  j["edge_exposed_comm_s"] = s.edge_exposed_comm_s;
  j["usable_gib"] = s.usable_gib;
  j["host_compute_s"] = s.host_compute_s;
  j["compute_by_kind_s"] = s.compute_by_kind_s;
  j["overlap_stretch_s"] = s.overlap_stretch_s;
  j["exposed_copy_s"] = s.exposed_copy_s;
  j["host_memory_gib"] = s.host_memory_gib;
  json host = json::object();
  for (int c = 0; c < kNumMemCategories; ++c) {
    host[std::string(MemCategoryName(static_cast<MemCategory>(c)))] =
        s.host_memory_by_category_gib[c];
  }
  j["host_memory_by_category_gib"] = host;
  j["overflow_category"] = s.overflow_category.empty() ? json(nullptr) : json(s.overflow_category);
  j["peak_memory_time_s"] = s.peak_memory_time_s;
  j["peak_memory_op"] = s.peak_memory_op;
  j["peak_memory_role"] = s.peak_memory_role;
  j["role"] = s.role;
  j["world_size"] = s.world_size;
  j["tokens_per_step"] = s.tokens_per_step;
  j["model_flops_per_token"] = s.model_flops_per_token;
  j["peak_tflops"] = s.peak_tflops;
  j["extrapolated_from_micro_batches"] = s.extrapolated_from_micro_batches.empty()
                                             ? json(nullptr)
                                             : json(s.extrapolated_from_micro_batches);
  j["conventions"] = {
      {"mfu",
       "model FLOPs per token = 6*N (parameters without the embedding; routed experts at "
       "top_k/experts) + 12*sum(heads*head_dim)*seq_len, over the catalog's dense bf16 peak"},
      {"comm_s",
       "busy time per kind (union of that kind's ops): collectives on any lane by what they "
       "are (all_gather with its copy-in), h2d / d2h copies"},
      {"compute_s", "GPU work that is not a collective or a copy, on any lane (union)"},
      {"compute_by_kind_s",
       "priced GPU compute of the reported role by kind, before the overlap slowdown"},
      {"exposed_comm_s",
       "time some collective runs while no compute runs, on any lane (TP/CP/EP collectives on "
       "the compute stream included; exact interval arithmetic); the figure `stats` computes "
       "from this run's trace"},
      {"idle_s", "step time no GPU work (compute, collective, copy) covers"},
      {"exposed_copy_s",
       "h2d / d2h copies while neither compute nor a collective runs; compute_s + "
       "exposed_comm_s + exposed_copy_s + idle_s = step_time_s"},
      {"overlap_stretch_s",
       "compute time added by communication running beside it (SMs and HBM bandwidth it takes)"},
      {"peak_memory_allocated_gib", "allocated bytes as the step's memory model gives them"},
      {"peak_memory_reserved_gib",
       "estimate of PyTorch caching-allocator reserved bytes (rounded blocks, cached per stream)"},
      {"memory_at_peak_gib", "allocated bytes per category at the allocated peak"},
      {"memory_max_by_category_gib", "each category's own maximum over the step"},
      {"comm_by_purpose_s",
       "busy time per purpose: fsdp_all_gather (with its copy-in), fsdp_reduce_scatter, "
       "hsdp_all_reduce (data-parallel all-reduce), tp, cp, ep, pp, from the collective's group"},
      {"exposed_collectives",
       "the reported role's collectives with the most time no compute covers, by op_id"},
      {"edge_exposed_comm_s",
       "exposed communication before the forward's second unit starts computing or after the "
       "backward's second-to-last unit ends: the first all-gathers and last reduce-scatters, "
       "which no prefetch depth can hide"},
      {"peak_memory_by_phase",
       "the same role's allocated peak within forward (to the end of the loss forward), loss "
       "(the loss backward), backward and optimizer (the end-of-backward wait and the step), "
       "with when and at which op"},
      {"host_memory_gib", "pinned host memory (CPU offload), not included in the HBM figures"},
      {"host_compute_s", "CPU work (offloaded optimizer step); the GPU counts it as idle"},
      {"fits", "peak reserved estimate <= usable HBM (HBM minus CUDA context and NCCL reserve)"},
      {"gib", "2^30 bytes"}};
  return j;
}

}  // namespace shardscope::sim
