#include "sim/advisor/fit_advisor.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

namespace shardscope::sim {
namespace {

// One change to the job: the --set flags that make it and how to say it.
struct Change {
  std::vector<std::string> sets;
  std::string label;
};

Change Combine(const Change& a, const Change& b) {
  Change c = a;
  c.sets.insert(c.sets.end(), b.sets.begin(), b.sets.end());
  c.label += (c.label.empty() || b.label.empty() ? "" : " + ") + b.label;
  return c;
}

// The checkpoint modes of runtime.md plus torchtitan's selective_op:2, except the current one.
std::vector<Change> CheckpointChanges(const Scenario& sc) {
  std::vector<Change> out;
  for (const char* name : {"none", "selective_op", "selective_op:2", "selective_layer:2", "full"}) {
    Result<ActivationCheckpoint> ac = ParseActivationCheckpoint(name, "advisor");
    if (!ac.ok() || *ac == sc.training.activation_checkpoint) continue;
    out.push_back({{fmt::format("training.activation_checkpoint={}", name)},
                   fmt::format("activation_checkpoint {}", name)});
  }
  return out;
}

// The same global batch in smaller micro-batches: local_batch / k, grad_accum · k.
std::vector<Change> BatchSplits(const Scenario& sc) {
  std::vector<Change> out;
  const int64_t batch = sc.training.local_batch;
  for (int k : {2, 4, 8}) {
    if (batch % k != 0) continue;
    const int64_t b = batch / k;
    const int accum = sc.training.grad_accum * k;
    out.push_back(
        {{fmt::format("training.local_batch={}", b), fmt::format("training.grad_accum={}", accum)},
         fmt::format("local_batch {} x grad_accum {} (same global batch)", b, accum)});
  }
  return out;
}

// Changes to where the state lives: each shrinks memory without touching the batch.
std::vector<Change> StateChanges(const Scenario& sc) {
  std::vector<Change> out;
  const ParallelismConfig& p = sc.parallelism;
  // The caching allocator's setting first: it allocates the same tensors and costs no time in
  // the model, but caches less beside them (memory.md), and the advice is what PyTorch users
  // try first. It can also reserve more near the capacity; the re-simulation decides.
  if (!sc.training.expandable_segments) {
    out.push_back({{"training.expandable_segments=true"},
                   "expandable_segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the "
                   "same allocations, less cached beside them)"});
  }
  if (p.tp > 1 && !p.loss_parallel) {
    out.push_back(
        {{"parallelism.loss_parallel=true"}, "loss_parallel (logits stay vocab-sharded)"});
  }
  // Fold replication into sharding: the same GPUs, the state spread over more of them.
  for (int r = p.dp_replicate; r > 1;) {
    r = r % 2 == 0 ? r / 2 : 1;
    const int shard = p.dp_shard * (p.dp_replicate / r);
    out.push_back({{fmt::format("parallelism.dp_replicate={}", r),
                    fmt::format("parallelism.dp_shard={}", shard)},
                   fmt::format("dp_replicate {} x dp_shard {} (state sharded over {} GPUs)", r,
                               shard, shard * p.cp)});
  }
  // Experts: shard their state over more of the expert data-parallel ranks (edp =
  // dp_replicate·dp_shard·cp·tp / ep) instead of replicating it.
  if (p.ep > 1) {
    const int64_t edp = int64_t{p.dp_replicate} * p.dp_shard * p.cp * p.tp / p.ep;
    for (int64_t e = int64_t{p.edp_shard} * 2; e <= edp; e *= 2) {
      if (edp % e != 0) continue;
      out.push_back({{fmt::format("parallelism.edp_shard={}", e)},
                     fmt::format("edp_shard {} (expert state sharded over {} ranks, not "
                                 "replicated)",
                                 e, e)});
    }
  }
  // Reshard after forward, to a node-local slice (FSDP2's int form: backward all-gathers over
  // d ranks of NVLink) or fully: each keeps less of the parameters between the passes than the
  // current setting (1 = never resharded, the shard group = fully).
  const int shard = p.dp_shard;
  const int kept = !sc.fsdp.reshard_after_forward            ? 1
                   : sc.fsdp.reshard_after_forward_ranks > 0 ? sc.fsdp.reshard_after_forward_ranks
                                                             : shard;
  if (kept < shard) {
    for (int d = 2; d < shard && d <= sc.cluster.gpus_per_node; d *= 2) {
      // Expert units reshard over their own shard group, which d must divide too.
      if (d <= kept || shard % d != 0 || (p.ep > 1 && p.edp_shard % d != 0)) continue;
      out.push_back({{fmt::format("fsdp.reshard_after_forward={}", d)},
                     fmt::format("reshard_after_forward {} (1/{} of each unit's parameters kept "
                                 "after forward, re-gathered over {} ranks)",
                                 d, d, d)});
    }
    out.push_back({{"fsdp.reshard_after_forward=true"}, "reshard_after_forward"});
  }
  if (!sc.fsdp.enable_offload) {
    out.push_back({{"fsdp.enable_offload=true"},
                   "CPU offload (params, grads, optimizer state in pinned host memory)"});
  }
  return out;
}

// More GPUs of the same kind, the extra ones sharding the state. It changes the global batch
// and the hardware, so it is tried only when nothing on the job's own GPUs is good enough.
Change MoreNodes(const Scenario& sc) {
  const int shard = sc.parallelism.dp_shard * 2;
  return {{fmt::format("cluster.nodes={}", sc.cluster.nodes * 2),
           fmt::format("parallelism.dp_shard={}", shard)},
          fmt::format("{} nodes, dp_shard {} (2x the GPUs; the global batch doubles)",
                      sc.cluster.nodes * 2, shard)};
}

// Single changes first, then pairs, so the bound on simulations cuts the farthest variants.
std::vector<Change> Variants(const Scenario& sc) {
  const std::vector<Change> modes = CheckpointChanges(sc);
  const std::vector<Change> splits = BatchSplits(sc);
  const std::vector<Change> states = StateChanges(sc);
  std::vector<Change> out;
  for (const auto* group : {&modes, &splits, &states})
    out.insert(out.end(), group->begin(), group->end());
  for (const Change& s : splits) {
    for (const Change& m : modes) out.push_back(Combine(s, m));
  }
  for (const Change& s : states) {
    for (const Change& m : modes) out.push_back(Combine(s, m));
  }
  return out;
}

std::vector<Change> MoreNodesVariants(const Scenario& sc) {
  std::vector<Change> out = {MoreNodes(sc)};
  for (const Change& m : CheckpointChanges(sc)) out.push_back(Combine(out.front(), m));
  return out;
}

// What a variant changes besides the checkpoint mode: variants that differ only in the mode are
// one idea, of which the fastest (and, when that one is thin, the fastest with the margin) is
// worth showing.
std::string GroupKey(const std::vector<std::string>& sets) {
  std::string key;
  for (const std::string& s : sets) {
    if (s.rfind("training.activation_checkpoint=", 0) != 0) key += s + ";";
  }
  return key;
}

// Whether every change of `fewer` is also in `more`.
bool SetsWithin(const std::vector<std::string>& fewer, const std::vector<std::string>& more) {
  return std::all_of(fewer.begin(), fewer.end(), [&](const std::string& s) {
    return std::find(more.begin(), more.end(), s) != more.end();
  });
}

// Fastest first; per group the fastest, plus the fastest with the margin when that differs.
// A variant that adds changes to one shown before (so at least as fast) without more headroom
// is left out: its extra change buys nothing (expandable segments on top of full checkpointing
// can reserve more, not less).
std::vector<FitSuggestion> Rank(std::vector<FitSuggestion> fitting, int max_suggestions) {
  std::stable_sort(fitting.begin(), fitting.end(),
                   [](const FitSuggestion& a, const FitSuggestion& b) {
                     if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) {
                       return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
                     }
                     return a.sets.size() < b.sets.size();
                   });
  std::vector<FitSuggestion> out;
  std::map<std::string, std::pair<bool, bool>> seen;  // group → (any shown, one with margin)
  for (FitSuggestion& s : fitting) {
    auto& [any, safe] = seen[GroupKey(s.sets)];
    if (any && (safe || s.thin)) continue;
    const bool adds_nothing = std::any_of(out.begin(), out.end(), [&](const FitSuggestion& o) {
      return o.sets.size() < s.sets.size() && SetsWithin(o.sets, s.sets) &&
             o.headroom_gib >= s.headroom_gib;
    });
    if (adds_nothing) continue;
    any = true;
    safe = safe || !s.thin;
    out.push_back(std::move(s));
    if (static_cast<int>(out.size()) == max_suggestions) break;
  }
  return out;
}

}  // namespace

FitVerdict JudgeFit(const Summary& summary, double margin_gib) {
  if (!summary.fits) return FitVerdict::kDoesNotFit;
  if (ThinHeadroom(summary.usable_gib, summary.usable_gib - summary.peak_memory_reserved_gib,
                   margin_gib)) {
    return FitVerdict::kThinMargin;
  }
  return FitVerdict::kFits;
}

Result<FitAdvice> AdviseFit(const Scenario& scenario, const Simulation& sim,
                            const FitAdviceOptions& options) {
  if (options.margin_gib < 0) {
    return InvalidInput(
        fmt::format("--margin {}: expected a headroom in GiB >= 0", options.margin_gib));
  }
  FitAdvice advice;
  const Summary& s = sim.summary;
  advice.verdict = JudgeFit(s, options.margin_gib);
  advice.margin_gib = options.margin_gib;
  advice.usable_gib = s.usable_gib;
  advice.peak_reserved_gib = s.peak_memory_reserved_gib;
  advice.over_gib = s.peak_memory_reserved_gib - s.usable_gib;
  advice.tokens_per_s_per_gpu = s.tokens_per_s_per_gpu;
  advice.cause = AnalyzeFit(sim);
  if (advice.verdict == FitVerdict::kFits) return advice;

  std::vector<FitSuggestion> fitting;
  SimulateOptions peaks_only;
  peaks_only.keep_memory_samples = false;
  ModelTreeCache trees;  // the variants change the mesh and batch, rarely the model's build
  peaks_only.trees = &trees;
  auto try_all = [&](const std::vector<Change>& variants) {
    for (const Change& v : variants) {
      if (advice.variants_simulated + advice.variants_invalid >= options.max_simulations) return;
      // The resolved scenario has every default and size filled and relative paths resolved,
      // so the flags act on it as they do on the user's file.
      Result<Scenario> variant = ParseScenario(scenario.resolved, scenario.source, "", v.sets);
      if (!variant.ok()) {
        ++advice.variants_invalid;
        continue;
      }
      Result<Simulation> run = SimulateScenario(*variant, peaks_only);
      ++advice.variants_simulated;
      if (!run.ok()) {
        ++advice.variants_invalid;
        continue;
      }
      const Summary& r = run->summary;
      if (!r.fits) continue;
      FitSuggestion fs;
      fs.sets = v.sets;
      fs.change = v.label;
      fs.peak_reserved_gib = r.peak_memory_reserved_gib;
      fs.peak_allocated_gib = r.peak_memory_allocated_gib;
      fs.headroom_gib = r.usable_gib - r.peak_memory_reserved_gib;
      fs.tokens_per_s_per_gpu = r.tokens_per_s_per_gpu;
      fs.step_time_s = r.step_time_s;
      fs.thin = fs.headroom_gib < options.margin_gib;
      // A job that already fits gains nothing from a variant that is just as tight.
      if (advice.verdict == FitVerdict::kThinMargin && fs.thin) continue;
      fitting.push_back(std::move(fs));
    }
  };
  try_all(Variants(scenario));
  const bool good_enough = std::any_of(fitting.begin(), fitting.end(), [&](const FitSuggestion& f) {
    return !f.thin && 2 * f.tokens_per_s_per_gpu >= s.tokens_per_s_per_gpu;
  });
  if (!good_enough) try_all(MoreNodesVariants(scenario));
  advice.variants_fitting = static_cast<int>(fitting.size());
  advice.suggestions = Rank(std::move(fitting), std::max(options.max_suggestions, 0));
  return advice;
}

}  // namespace shardscope::sim
