// `recommend`: the best few ways to train a model on a global batch, searched over GPU types,
// GPU counts, meshes, micro-batching, checkpointing, prefetch and resharding, each simulated.
//
// Contents:
//   RecommendOptions   model, global batch, GPU types, bounds (GPUs, budget), objective
//   RecommendedPlan    one plan: its figures, what bounds it, the scenario that reproduces it
//   Recommendation     the plans, best first, and how much of the space each stage covered
//   Recommend          the search
//   PlanRank           a plan's rank among the best plans (0: not one of them)
//   RecommendationToJson  what `recommend --json` writes
//   PlanBound          "exposed communication" | "pipeline bubble" | "compute", why
//
// The search (docs/sweep.md has the full description):
//  1. Generate: for each GPU type, node counts 1, 2, 3, 4, 6, 8, 12, … (and whole NVLink domains
//     of several nodes: 18 GB200 trays) up to --max-gpus; tp 1..8 (within the
//     NVLink domain), cp 1-2, pp 1-8 (1F1B), ep (MoE only), dp_replicate a power of two, the rest
//     dp_shard; micro-batch 1, 2 or 4 sequences with gradient accumulation (or pipeline
//     micro-batches) making up the global batch, at most 64 micro-batches per step; checkpoint
//     none, selective_op, selective_op:2 or full. Combinations the batch does not divide into
//     are not generated. An axis pinned by a fixed setting (RecommendOptions::sets) takes that
//     value alone.
//  2. Prune, soundly: a plan whose sharded parameters, gradients and optimizer state alone
//     (4 × the stored parameter bytes over dp_shard·cp·tp·pp, AdamW's or Adam's state on the
//     GPU; with SGD or CPU offload (--set) no plan is pruned so) leave less than the margin of
//     the usable HBM, or whose
//     GPUs cost more per hour than the budget, is never simulated. Then, best bound first and in
//     fixed chunks (so the result does not depend on thread count), a plan whose upper bound —
//     model FLOPs (plus full checkpointing's recomputed forward) at the GPU's best measured
//     matmul rate, through the 1F1B bubble — cannot beat the current K-th best is skipped.
//  3. Refine: the best plans are re-simulated with prefetch depth 2 and without resharding after
//     forward (and both; a pinned FSDP setting stays as pinned), and the better variant kept.
//
// Example:
//   RecommendOptions o;  o.model = "llama3-70b";  o.global_batch_tokens = 4 << 20;
//   SS_ASSIGN_OR_RETURN(Recommendation r, Recommend(o));
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "sim/advisor/fit_advisor.h"
#include "sim/explore/price_table.h"
#include "sim/explore/sweep.h"

namespace shardscope::sim {

struct RecommendOptions {
  std::string model;  // as a scenario's "model": a built-in name or a config / tree path
  int64_t global_batch_tokens = 0;
  int64_t seq_len = 8192;
  std::vector<std::string> gpus = {"h100-sxm"};
  int max_gpus = 1024;
  std::optional<double> budget_per_hour;  // USD for the whole cluster
  // A plan must leave this much headroom under the usable HBM (peak reserved is an estimate);
  // one that fits with less is counted in Recommendation::thin and not recommended.
  double margin_gib = kDefaultMarginGib;
  Objective objective = Objective::kTime;
  int top = 5;
  int threads = 0;
  bool exact = false;                  // SweepOptions::exact
  const PriceTable* prices = nullptr;  // null: DefaultPriceTable()
  // Calibration files (cluster.cost_model), each for the GPU its `fitted_on` names (or the one
  // GPU searched, for a file without it): that GPU's plans name the file and are searched with
  // its figures. Paths as given; the plans' scenarios carry them absolute.
  std::vector<std::string> cost_models;
  // Fixed settings, "path=value" as `simulate --set` takes them, applied to every plan: the
  // training and FSDP choices the search does not make (optimizer, precision, the allocator's
  // expandable segments, loss parallelism, ...). A searched axis named by its own path pins it:
  // the node count, a mesh degree (tp, cp, pp, dp_replicate, dp_shard, ep), the checkpoint mode,
  // a prefetch depth or reshard_after_forward is then searched at that value alone. Any other
  // path the search sets or derives (the GPU, batching, the pipeline schedule, the model, the
  // sequence length, the cost model), or an object holding a searched path, is refused: --gpu,
  // --seq-len and the other flags say those.
  std::vector<std::string> sets;
  std::function<void(int64_t done, int64_t total)> progress;
};

struct RecommendedPlan {
  VariantResult result;
  std::string bound;         // what limits it (PlanBound)
  std::string bound_detail;  // the figure behind it
  nlohmann::json scenario;   // the scenario file that reproduces it
};

struct Recommendation {
  std::vector<RecommendedPlan> plans;  // best first
  // With several GPU types: each one's best plan by the objective, in the order the GPUs were
  // given (a GPU none of whose plans fits is absent). The search keeps simulating a GPU's plans
  // until its best is certain, so a slower GPU's best is known though it makes no top K.
  std::vector<RecommendedPlan> best_per_gpu;
  std::vector<std::string> gpus_without_plan;  // with several GPU types: those none of whose
                                               // plans fits (catalog spelling)
  // The plans that fit (with the margin) marked on the Pareto front of cost against time per
  // million tokens, fastest first: the trade a buyer weighs (fewer GPUs, cheaper tokens, a slower
  // step), which the ranking by one objective hides. Plans without a price are not on it.
  std::vector<RecommendedPlan> pareto_front;
  int64_t generated = 0;
  int64_t pruned_memory = 0;
  int64_t pruned_budget = 0;
  int64_t pruned_bound = 0;
  int64_t simulated = 0;
  int64_t refined = 0;  // of `simulated`: plans that could reach the best, again with other FSDP
                        // settings (step 3)
  int64_t fitting = 0;  // fit with at least the margin's headroom
  int64_t thin = 0;     // fit, with less headroom than the margin
  int64_t invalid = 0;
  // GPUs skipped and why; prices far from the built-in ones; GPUs without a price or without a
  // measured run, among the plans that fit (the command prints them, --json writes them).
  std::vector<std::string> notes;
};

Result<Recommendation> Recommend(const RecommendOptions& options);

// A plan's rank among `rec.plans` (from 1), or 0 when it is not one of them (a GPU's best that
// makes no top K).
int PlanRank(const Recommendation& rec, const RecommendedPlan& plan);

// `recommend --json`: shardscope-recommend/1 (docs/sweep.md): the search's inputs and counts,
// the notes, `plans` and `best_per_gpu`, each plan its rank, figures, bound and scenario.
nlohmann::json RecommendationToJson(const Recommendation& rec, const RecommendOptions& options);

// What bounds a plan's step time that ran: the largest of exposed communication and idle time
// when it is at least 10% of the step, else compute; the detail adds "memory tight" when the
// headroom is under 10% of usable.
std::pair<std::string, std::string> PlanBound(const VariantFigures& f);

}  // namespace shardscope::sim
