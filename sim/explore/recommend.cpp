#include "sim/explore/recommend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/model/model_summary.h"
#include "core/util/ascii_case.h"
#include "core/util/count_text.h"
#include "core/util/units.h"
#include "sim/cost/calibration.h"
#include "sim/engine/model_flops.h"
#include "sim/engine/schedule_memo.h"
#include "sim/explore/sweep_output.h"
#include "sim/hardware/hardware.h"

namespace shardscope::sim {
namespace {

constexpr int kMaxMicrobatchesPerStep = 64;
constexpr int kChunk = 64;  // plans simulated between two updates of the pruning threshold

struct Candidate {
  std::vector<std::string> sets;
  double bound = 0;  // the best objective key the plan could reach (lower is better)
  size_t mesh = 0;   // the index of the first candidate with the same overrides but the GPU
  int gpu = 0;       // index into the GPUs searched
};

// The catalog's own node size for `gpu` (LookupHardware takes it as an argument).
Result<int> CatalogGpusPerNode(const std::string& gpu) {
  const nlohmann::json catalog = nlohmann::json::parse(CatalogJson());
  for (const nlohmann::json& g : catalog["gpus"]) {
    if (g["name"] == gpu) return g["node"]["gpus_per_node"].get<int>();
  }
  // LookupHardware words the error (did-you-mean over the catalog).
  Result<Hardware> hw = LookupHardware(gpu, 1, 1);
  return InvalidInput(
      fmt::format("--gpu {}: {}", gpu, hw.ok() ? "not in the catalog" : hw.status().message()));
}

// How a fixed setting on a searched path pins it (Pins): not at all (refused), as a count each
// plan sets itself (the base scenario, one node by default, may not hold a mesh degree), or in
// the base scenario every plan starts from (a checkpoint mode, an FSDP setting).
enum class PinKind { kNone, kCount, kBase };

// The scenario paths the search sets or derives, and the flag that says each instead: a fixed
// setting (RecommendOptions::sets) may name none of them, nor an object holding one, except a
// pinnable one by its own path, which pins the axis (Pins).
struct Searched {
  std::string_view path;
  std::string_view instead;  // how the search is steered instead (a pinnable path: pin it)
  PinKind pin = PinKind::kNone;
};
constexpr Searched kSearched[] = {
    {"model", "name the model with --model"},
    {"cluster.gpu", "name the GPUs with --gpu"},
    {"cluster.nodes", "", PinKind::kCount},
    {"cluster.gpus_per_node", "each --gpu's node size is the catalog's"},
    {"cluster.cost_model", "give a calibration with --cost-model"},
    {"parallelism.tp", "", PinKind::kCount},
    {"parallelism.cp", "", PinKind::kCount},
    {"parallelism.pp", "", PinKind::kCount},
    {"parallelism.dp_replicate", "", PinKind::kCount},
    {"parallelism.dp_shard", "", PinKind::kCount},
    {"parallelism.ep", "", PinKind::kCount},
    {"parallelism.edp_shard", "expert state is sharded over all its data-parallel ranks"},
    {"parallelism.pp_microbatches", "batching is searched for --global-batch-tokens"},
    // Its throughput bound prices 1F1B's bubble, which bounds no other schedule.
    {"parallelism.pp_schedule", "its pipelines are 1F1B"},
    {"parallelism.pp_virtual_stages", "its pipelines are 1F1B"},
    {"training.local_batch", "batching is searched for --global-batch-tokens"},
    {"training.grad_accum", "batching is searched for --global-batch-tokens"},
    {"training.seq_len", "set it with --seq-len"},
    {"training.activation_checkpoint", "", PinKind::kBase},
    {"fsdp.forward_prefetch_depth", "", PinKind::kBase},
    {"fsdp.backward_prefetch_depth", "", PinKind::kBase},
    {"fsdp.reshard_after_forward", "", PinKind::kBase},
};

// The searched axes the fixed settings pin: each searches the pinned value alone, and
// refinement (step 3) leaves a pinned FSDP setting as it is.
struct Pins {
  std::map<std::string, int, std::less<>> counts;  // "cluster.nodes", "parallelism.tp", ...
  std::set<std::string, std::less<>> in_base;      // the checkpoint and FSDP paths pinned
  std::vector<std::string> given;                  // the pinning settings, as given

  // A count's pinned value.
  std::optional<int> Pin(std::string_view path) const {
    const auto it = counts.find(path);
    return it == counts.end() ? std::nullopt : std::optional<int>(it->second);
  }
  // The values an axis is searched over: the pinned one alone, else `all`.
  std::vector<int> Of(std::string_view path, std::vector<int> all) const {
    const std::optional<int> pinned = Pin(path);
    return pinned ? std::vector<int>{*pinned} : all;
  }
  bool Pinned(std::string_view path) const {
    return Pin(path).has_value() || in_base.count(path) > 0;
  }
};

// `set` ("path=value") as a fixed setting: InvalidInput when it names a path the search owns
// (one that is pinnable only by its own path, with a whole number >= 1 for a count); a pin is
// recorded in `pins`, and true returned for a count (which is not for the base scenario).
Result<bool> ClassifyFixedSetting(std::string_view set, Pins& pins) {
  const size_t eq = set.find('=');
  const std::string_view path = set.substr(0, eq);
  for (const Searched& s : kSearched) {
    if (s.pin != PinKind::kNone && path == s.path) {
      pins.given.emplace_back(set);
      if (s.pin == PinKind::kBase) {
        pins.in_base.emplace(s.path);
        return false;  // the base holds it, checked by the scenario's rules
      }
      const nlohmann::json value =
          OverrideValue(eq == std::string_view::npos ? "" : set.substr(eq + 1));
      if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
          value.get<int64_t>() > (int64_t{1} << 20)) {
        return InvalidInput(fmt::format(
            "--set {}: expected a whole number >= 1 (the search then tries {} = that alone)", set,
            s.path));
      }
      if (!pins.counts.emplace(std::string(s.path), value.get<int>()).second) {
        return InvalidInput(fmt::format("--set {}: {} is pinned twice", set, s.path));
      }
      return true;
    }
    // The path itself, one under it, or an object holding it ("parallelism" holds "…tp").
    const bool under = path.size() > s.path.size() && path.substr(0, s.path.size()) == s.path &&
                       path[s.path.size()] == '.';
    const bool holds = s.path.size() > path.size() && s.path.substr(0, path.size()) == path &&
                       s.path[path.size()] == '.';
    if (path == s.path || under || holds) {
      const std::string instead = s.pin == PinKind::kNone
                                      ? std::string(s.instead)
                                      : fmt::format("pin it on its own: --set {}=VALUE", s.path);
      return InvalidInput(
          fmt::format("--set {}: recommend searches {} itself ({})", set, s.path, instead));
    }
  }
  return false;
}

// The node size the fixed settings are checked on (the default GPU's, h100-sxm).
constexpr int kCheckNodeGpus = 8;

// The powers of two from 1 to `most`.
std::vector<int> PowersOfTwo(int most) {
  std::vector<int> out;
  for (int v = 1; v <= most; v *= 2) out.push_back(v);
  return out;
}

// The same key at the plan's throughput upper bound (tokens/s/GPU), on `gpus` GPUs, rounded as
// ObjectiveKey rounds keys (RankedFigure is monotonic, so a bound stays no higher than its key,
// and a plan whose bound rounds to the K-th key is simulated: it may tie and rank on memory).
double BoundKey(double ub_tps, int gpus, std::optional<double> price, Objective objective) {
  switch (objective) {
    case Objective::kThroughput:
      return RankedFigure(-ub_tps);
    case Objective::kCost:
      return price ? RankedFigure(*CostPerMillionTokens(*price, ub_tps)) : HUGE_VAL;
    case Objective::kMemory:
      return -HUGE_VAL;  // no bound on memory from FLOPs: nothing is skipped
    case Objective::kTime:
      return RankedFigure(1e6 / (ub_tps * gpus));
  }
  return 0;
}

// The best key other FSDP settings could give a simulated plan: its throughput at the step time
// FSDP cannot shorten (VariantFigures::fsdp_independent_floor_s); -inf where there is none.
double RefinedBound(const VariantFigures& f, Objective objective) {
  if (f.fsdp_independent_floor_s <= 0 || f.step_time_s <= 0) return -HUGE_VAL;
  const double ub_tps = f.tokens_per_s_per_gpu * f.step_time_s / f.fsdp_independent_floor_s;
  return BoundKey(ub_tps, f.world_size, f.usd_per_gpu_hour, objective);
}

// Whether a simulated plan fits with at least the margin's headroom; one that fits with less
// is counted in rec->thin (when given).
bool KeepsMargin(const VariantResult& v, const RecommendOptions& o, Recommendation* rec) {
  if (v.outcome != VariantOutcome::kFits) return false;
  if (!IsThin(v, o.margin_gib)) return true;
  if (rec != nullptr) ++rec->thin;
  return false;
}

std::string Group(const std::vector<std::string>& sets) {
  std::string key;
  for (const std::string& s : sets) {
    if (s.rfind("fsdp.", 0) != 0) key += s + ";";
  }
  return key;
}

}  // namespace

std::pair<std::string, std::string> PlanBound(const VariantFigures& f) {
  // Memory is said beside what bounds the step's time, not instead of it: a plan with little
  // headroom is still as fast as its compute, communication or bubble lets it be (an MI300X
  // plan read "bound by memory" with 14.8 GiB free, as fast as its compute-bound neighbour).
  const std::string tight =
      f.usable_gib > 0 && f.headroom_gib < 0.1 * f.usable_gib
          ? fmt::format("; memory tight: {:.1f} GiB headroom of {:.1f} usable", f.headroom_gib,
                        f.usable_gib)
          : "";
  const double step = std::max(f.step_time_s, 1e-12);
  const double comm = f.exposed_comm_s / step, idle = f.idle_s / step;
  if (std::max(comm, idle) >= 0.1) {
    if (comm >= idle) {
      return {"exposed communication", fmt::format("{:.0f}% of the step{}", 100 * comm, tight)};
    }
    return {"pipeline bubble", fmt::format("{:.0f}% of the step idle{}", 100 * idle, tight)};
  }
  return {"compute", fmt::format("MFU {:.1f}%, compute {:.0f}% of the step{}", 100 * f.mfu,
                                 100 * f.compute_s / step, tight)};
}

// The node counts searched, ascending, up to `most`: powers of two and three times them (24
// nodes of H100, not only 16 or 32), and whole NVLink domains when one spans `domain_nodes`
// > 1 nodes (a GB200 NVL72 rack is 18 trays: 18 and 36, not 16 and 32).
std::vector<int> NodeCounts(int most, int domain_nodes) {
  std::set<int> counts;
  for (int64_t n = 1; n <= most; n *= 2) {
    counts.insert(static_cast<int>(n));
    if (3 * n <= most) counts.insert(static_cast<int>(3 * n));
  }
  if (domain_nodes > 1) {
    for (int64_t n = domain_nodes; n <= most; n *= 2) counts.insert(static_cast<int>(n));
  }
  return {counts.begin(), counts.end()};
}

Result<Recommendation> Recommend(const RecommendOptions& o) {
  if (o.global_batch_tokens <= 0 || o.seq_len <= 0 || o.global_batch_tokens % o.seq_len != 0) {
    return InvalidInput(fmt::format(
        "--global-batch-tokens {}: expected a positive multiple of the sequence length {}",
        o.global_batch_tokens, o.seq_len));
  }
  if (o.max_gpus < 1) return InvalidInput(fmt::format("--max-gpus {}: expected >= 1", o.max_gpus));
  if (!(o.margin_gib >= 0) || !std::isfinite(o.margin_gib)) {
    return InvalidInput(
        fmt::format("--margin {}: expected a finite number of GiB >= 0", o.margin_gib));
  }
  if (o.top < 1) return InvalidInput(fmt::format("--top {}: expected >= 1", o.top));
  if (o.budget_per_hour && !(*o.budget_per_hour > 0)) {
    return InvalidInput(fmt::format("--budget-per-hour {}: expected > 0", *o.budget_per_hour));
  }
  if (o.gpus.empty()) return InvalidInput("--gpu: expected at least one catalog GPU name");
  const PriceTable& prices = o.prices != nullptr ? *o.prices : DefaultPriceTable();
  const int64_t sequences = o.global_batch_tokens / o.seq_len;

  if (o.threads < 0 || o.threads > kMaxThreads) {
    return InvalidInput(
        fmt::format("--threads {}: expected 0 (all cores) to {}", o.threads, kMaxThreads));
  }
  // A GPU named twice would search every plan twice; an empty name is a stray comma.
  std::vector<std::string> gpus;
  for (const std::string& given : o.gpus) {
    const std::string gpu = AsciiLower(given);
    if (gpu.empty()) return InvalidInput("--gpu: an empty name (two commas in a row?)");
    if (std::find(gpus.begin(), gpus.end(), gpu) != gpus.end()) {
      return InvalidInput(fmt::format("--gpu: {} is named twice", gpu));
    }
    gpus.push_back(gpu);
  }
  // The model as a scenario names it: a built-in name as is, a file by its absolute path (the
  // scenario files written for the plans reproduce them from any folder).
  Result<ModelSource> source = ClassifyModelArgument(o.model);
  if (!source.ok()) return source.status().WithContext("--model");
  nlohmann::json model = o.model;
  if (source->kind != ModelSource::Kind::kBuiltin) {
    const std::string key =
        source->kind == ModelSource::Kind::kModuleTreeFile ? "module_tree" : "hf_config";
    model = {{key, std::filesystem::absolute(o.model).lexically_normal().string()}};
  }
  nlohmann::json base_doc = {{"model", model}, {"training", {{"seq_len", o.seq_len}}}};
  // The fixed settings are part of the base every plan starts from, so each plan's scenario
  // file carries them.
  Pins pins;
  for (const std::string& set : o.sets) {
    SS_ASSIGN_OR_RETURN(const bool plan_own, ClassifyFixedSetting(set, pins));
    if (plan_own) continue;                            // each plan's sets carry it
    SS_RETURN_IF_ERROR(ApplyOverride(base_doc, set));  // its errors name --set and the path
  }
  SweepBase base{base_doc, "--model " + o.model, std::filesystem::current_path().string(), {}};
  // Checked on the largest mesh the search may try (every GPU of --max-gpus sharding): a
  // setting whose rule depends on the mesh (fsdp.reshard_after_forward = N must divide the
  // shard group) is refused here only when no plan could take it; the plans whose own mesh
  // cannot are counted invalid. The one-node default refused N = 16 for 16 GPUs.
  nlohmann::json check_doc = base.doc;
  check_doc["cluster"] = {{"nodes", std::max(1, o.max_gpus / kCheckNodeGpus)},
                          {"gpus_per_node", std::min(kCheckNodeGpus, o.max_gpus)}};
  Result<Scenario> parsed_or = ParseScenario(check_doc, base.source, base.base_dir);
  if (!parsed_or.ok()) {
    return o.sets.empty() ? parsed_or.status() : parsed_or.status().WithContext("--set");
  }
  const Scenario& parsed = *parsed_or;
  SS_ASSIGN_OR_RETURN(ModelTree tree, LoadModel(parsed.model, {}));
  const ModelSummary summary = SummarizeModel(tree);
  const ModelFlops flops = ModelFlopsPerToken(tree, o.seq_len);
  const int layers = std::max<int>(1, static_cast<int>(summary.blocks.size()));
  const bool moe = summary.routed_expert_params > 0;
  if (const std::optional<int> ep = pins.Pin("parallelism.ep"); !moe && ep && *ep != 1) {
    return InvalidInput(
        fmt::format("--set parallelism.ep={}: {} has no routed experts", *ep, o.model));
  }
  // The values of the axes every GPU searches alike (tp's depend on the GPU's NVLink domain).
  // A pinned mesh degree is searched even where the search would not go by itself (tp beyond
  // the NVLink domain, pp or dp_replicate above 8): the user asked for it.
  const std::vector<int> cps = pins.Of("parallelism.cp", {1, 2});
  const std::vector<int> pps = pins.Of("parallelism.pp", PowersOfTwo(8));
  const std::vector<int> eps = pins.Of("parallelism.ep", PowersOfTwo(moe ? 8 : 1));
  const std::vector<int> reps = pins.Of("parallelism.dp_replicate", PowersOfTwo(8));
  const std::optional<int> pinned_shard = pins.Pin("parallelism.dp_shard");
  // The checkpoint modes searched: the pinned one (the base holds it, in the scenario's
  // spelling) or all four.
  std::vector<std::string> checkpoint_modes = {"none", "selective_op", "selective_op:2", "full"};
  if (pins.Pinned("training.activation_checkpoint")) {
    checkpoint_modes = {base_doc["training"]["activation_checkpoint"].get<std::string>()};
  }
  // What the memory prune takes a plan's persistent state to be (step 2): fp32 parameters and
  // gradients and two moments, on the GPU. Smaller with SGD or offloaded, where 0 prunes none.
  const bool adam_state_on_gpu =
      parsed.training.optimizer != Optimizer::kSgd && !parsed.fsdp.enable_offload;
  const double state_bytes = adam_state_on_gpu ? 4.0 * static_cast<double>(summary.param_bytes) : 0;

  // Each calibration file to the GPU it was fitted on.
  std::map<std::string, std::pair<std::string, Calibration>> calibrations;  // GPU → path, file
  for (const std::string& path : o.cost_models) {
    Result<Calibration> cal = LoadCalibration(path);
    if (!cal.ok()) return cal.status().WithContext("--cost-model");
    std::string gpu;
    if (cal->overrides.contains("fitted_on")) {
      gpu = AsciiLower(cal->overrides["fitted_on"].get<std::string>());
      if (std::find(gpus.begin(), gpus.end(), gpu) == gpus.end()) {
        return InvalidInput(
            fmt::format("--cost-model {}: fitted on {}, which --gpu ({}) does not search", path,
                        gpu, fmt::join(gpus, ",")));
      }
    } else if (gpus.size() == 1) {
      gpu = gpus.front();
    } else {
      return InvalidInput(fmt::format(
          "--cost-model {}: the file names no GPU (fitted_on) and --gpu searches {}: say which "
          "it is for (calibrate writes fitted_on)",
          path, CountOf(static_cast<int64_t>(gpus.size()), "GPU")));
    }
    const std::string absolute = std::filesystem::absolute(path).lexically_normal().string();
    if (!calibrations.emplace(gpu, std::make_pair(absolute, std::move(*cal))).second) {
      return InvalidInput(fmt::format("--cost-model {}: a second calibration for {}", path, gpu));
    }
  }

  Recommendation rec;
  std::vector<Candidate> candidates;
  // The catalog's spelling (LookupHardware accepts any case, the catalog and prices do not).
  for (int gpu_index = 0; gpu_index < static_cast<int>(gpus.size()); ++gpu_index) {
    const std::string& gpu = gpus[static_cast<size_t>(gpu_index)];
    SS_ASSIGN_OR_RETURN(const int gpn, CatalogGpusPerNode(gpu));
    SS_ASSIGN_OR_RETURN(Hardware hw, LookupHardware(gpu, gpn, 1));
    // The search's bounds (memory, matmul rate) from the calibrated figures too.
    const auto calibration = calibrations.find(gpu);
    if (calibration != calibrations.end()) {
      SS_RETURN_IF_ERROR(ApplyCalibration(calibration->second.second, &hw, nullptr));
    }
    const std::optional<double> price = prices.PerGpuHour(gpu);
    // Its plans can be neither kept nor dropped by the budget: searching the other GPUs alone
    // would report "no plan fits" for one whose plans were never tried.
    if (o.budget_per_hour && !price) {
      return InvalidInput(fmt::format(
          "--budget-per-hour {:g}: --gpu {} has no price in {}, so its plans cannot be held to "
          "the budget; price it (--prices) or leave it out of --gpu",
          *o.budget_per_hour, gpu, prices.source));
    }
    // What a plan may reserve and still keep the margin's headroom.
    const double usable = static_cast<double>(hw.gpu.usable_bytes()) - o.margin_gib * kGiB;
    const int tp_max = std::min(8, std::max(gpn, hw.node.nvlink_domain));
    std::vector<int> node_counts = NodeCounts(o.max_gpus / gpn, hw.node.nvlink_domain / gpn);
    if (const std::optional<int> nodes = pins.Pin("cluster.nodes")) {
      node_counts.clear();
      if (int64_t{*nodes} * gpn <= o.max_gpus) {
        node_counts.push_back(*nodes);
      } else {
        rec.notes.push_back(fmt::format("{}: {} nodes are {} GPUs, above --max-gpus {}", gpu,
                                        *nodes, int64_t{*nodes} * gpn, o.max_gpus));
      }
    }
    const std::vector<int> tps = pins.Of("parallelism.tp", PowersOfTwo(tp_max));
    for (const int nodes : node_counts) {
      const int world = nodes * gpn;
      for (const int tp : tps) {
        for (const int cp : cps) {
          // Context parallelism gives each rank two chunks of the sequence (the scenario's rule);
          // without it any length goes.
          if (cp > 1 && o.seq_len % (2 * cp) != 0) continue;
          for (const int pp : pps) {
            if (pp > layers || world % (tp * cp * pp) != 0) continue;
            const int dp = world / (tp * cp * pp);
            if (sequences % dp != 0) continue;
            const int64_t per_rank = sequences / dp;
            for (const int ep : eps) {
              for (const int rep : reps) {
                if (rep > dp || dp % rep != 0) continue;
                const int shard = dp / rep;
                if (pinned_shard && *pinned_shard != shard) continue;
                for (int mb = 1; mb <= 4; mb *= 2) {
                  if (per_rank % mb != 0) continue;
                  const int64_t micro = per_rank / mb;
                  if (micro > kMaxMicrobatchesPerStep || (pp > 1 && micro < pp)) continue;
                  for (const std::string& ac : checkpoint_modes) {
                    ++rec.generated;
                    if (state_bytes / (double{1} * shard * cp * tp * pp) > usable) {
                      ++rec.pruned_memory;
                      continue;
                    }
                    if (o.budget_per_hour && world * *price > *o.budget_per_hour) {
                      ++rec.pruned_budget;
                      continue;
                    }
                    // Full checkpointing recomputes the forward (2N FLOPs per token),
                    // selective_op:2 half of its matrix multiplies.
                    // (Other modes, pinned, recompute less or are counted at none: still an
                    // upper bound.)
                    const double extra = ac == "full" ? 2.0 : ac == "selective_op:2" ? 1.0 : 0.0;
                    const double per_token =
                        flops.flops_per_token + extra * flops.params_non_embedding;
                    double ub = hw.gpu.best_matmul_flops / per_token;
                    if (pp > 1) ub *= static_cast<double>(micro) / (micro + pp - 1);
                    Candidate c;
                    c.bound = BoundKey(ub, world, price, o.objective);
                    c.gpu = gpu_index;
                    c.sets = {fmt::format("cluster.gpu={}", gpu),
                              fmt::format("cluster.nodes={}", nodes),
                              fmt::format("cluster.gpus_per_node={}", gpn),
                              fmt::format("parallelism.tp={}", tp),
                              fmt::format("parallelism.cp={}", cp),
                              fmt::format("parallelism.pp={}", pp),
                              fmt::format("parallelism.dp_replicate={}", rep),
                              fmt::format("parallelism.dp_shard={}", shard),
                              fmt::format("parallelism.pp_microbatches={}", pp > 1 ? micro : 1),
                              fmt::format("training.local_batch={}", pp > 1 ? per_rank : mb),
                              fmt::format("training.grad_accum={}", pp > 1 ? 1 : micro),
                              fmt::format("training.activation_checkpoint={}", ac)};
                    if (moe) {
                      c.sets.push_back(fmt::format("parallelism.ep={}", ep));
                      c.sets.push_back("parallelism.edp_shard=-1");
                    }
                    if (calibration != calibrations.end()) {
                      c.sets.push_back(
                          fmt::format("cluster.cost_model={}", calibration->second.first));
                    }
                    candidates.push_back(std::move(c));
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  // The search runs whole nodes: a cap below one node leaves nothing, whatever the batch.
  if (rec.generated == 0 && rec.notes.empty()) {
    int smallest_node = 0;
    for (const std::string& gpu : gpus) {
      SS_ASSIGN_OR_RETURN(const int gpn, CatalogGpusPerNode(gpu));
      smallest_node = smallest_node == 0 ? gpn : std::min(smallest_node, gpn);
    }
    if (o.max_gpus < smallest_node) {
      return InvalidInput(fmt::format(
          "--max-gpus {}: below one node ({} GPUs); recommend searches whole nodes, so allow at "
          "least {}",
          o.max_gpus, smallest_node, smallest_node));
    }
  }
  // No plan at all with pins: they (with the batch and the GPUs) leave none.
  if (rec.generated == 0 && !pins.counts.empty()) {
    return InvalidInput(fmt::format(
        "--set {}: no mesh of up to {} GPUs ({}) has {} and splits {} sequences of {} tokens "
        "into micro-batches of 1, 2 or 4 sequences over its data-parallel ranks, at most {} per "
        "step (at least pp under a pipeline); pin less, or change --global-batch-tokens or "
        "--max-gpus{}",
        fmt::join(pins.given, " --set "), o.max_gpus, fmt::join(gpus, ","),
        pins.given.size() > 1 ? "these settings" : "this setting", sequences, o.seq_len,
        kMaxMicrobatchesPerStep,
        rec.notes.empty() ? std::string() : fmt::format(" ({})", fmt::join(rec.notes, "; "))));
  }
  // No plan at all is the batch's doing, not the hardware's: more GPUs would not help.
  if (rec.generated == 0 && rec.notes.empty()) {
    return InvalidInput(fmt::format(
        "--global-batch-tokens {}: {} sequences of {} tokens cannot be split over the "
        "data-parallel ranks of any mesh of up to {} GPUs into micro-batches of 1, 2 or 4 "
        "sequences, at most {} per step; choose a batch with more small factors (a multiple of "
        "a power of two)",
        o.global_batch_tokens, sequences, o.seq_len, o.max_gpus, kMaxMicrobatchesPerStep));
  }
  // Among equal bounds, one mesh's candidates on several GPUs side by side (in the order the
  // GPUs were given): they then fall in one chunk, where the sweep shares their plan and schedule
  // (SweepOptions::share_schedules). A mesh is its overrides less the GPU; the order of the
  // meshes is that of their first candidate.
  {
    std::map<std::string, size_t> first_of_mesh;
    for (size_t i = 0; i < candidates.size(); ++i) {
      candidates[i].mesh =
          first_of_mesh.emplace(ScheduleMemo::OverridesKey(candidates[i].sets), i).first->second;
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     return a.bound != b.bound ? a.bound < b.bound : a.mesh < b.mesh;
                   });

  ModelTreeCache trees;  // one model, a tree per tensor- and expert-parallel degree
  PlanCache plans;       // and a plan per mesh and FSDP settings
  StepBasisCache bases;  // and a step basis per plan and micro-batch shape
  SweepOptions sweep;
  sweep.trees = &trees;
  sweep.plans = &plans;
  sweep.bases = &bases;
  sweep.threads = o.threads;
  sweep.exact = o.exact;
  sweep.prices = &prices;
  sweep.fsdp_independent_floor = true;  // RefinedBound reads it
  // Counted over every plan generated, as the first line of the output counts them: those the
  // sound pruning left out are done before the first chunk.
  const int64_t total = rec.generated;
  int64_t done_before = rec.pruned_memory + rec.pruned_budget;
  const int64_t pruned_before = done_before;
  if (o.progress) {
    sweep.progress = [&](int64_t done, int64_t) { o.progress(done_before + done, total); };
  }
  std::vector<VariantResult> fitting;
  std::vector<double> fitting_bound;  // each fitting plan's bound (the search's, by index)
  std::vector<double> best_keys;      // the objective keys of the fitting plans, sorted
  // With several GPUs, each GPU's best key so far too: a plan that could beat its own GPU's
  // best is simulated even when it cannot reach the top K, so each GPU's best plan is found
  // (its bound is optimistic: a plan better than the GPU's best has a bound below it).
  std::vector<double> gpu_best(gpus.size(), HUGE_VAL);
  std::string first_invalid;  // the first invalid plan's settings and message
  const bool per_gpu = gpus.size() > 1;
  for (size_t start = 0; start < candidates.size(); start += kChunk) {
    const double threshold =
        static_cast<int>(best_keys.size()) >= o.top ? best_keys[o.top - 1] : HUGE_VAL;
    std::vector<std::vector<std::string>> chunk;
    std::vector<int> chunk_gpu;
    std::vector<double> chunk_bound;
    const size_t end = std::min(candidates.size(), start + kChunk);
    for (size_t i = start; i < end; ++i) {
      const Candidate& c = candidates[i];
      if (c.bound > threshold && !(per_gpu && c.bound <= gpu_best[static_cast<size_t>(c.gpu)])) {
        ++rec.pruned_bound;
      } else {
        chunk.push_back(c.sets);
        chunk_gpu.push_back(c.gpu);
        chunk_bound.push_back(c.bound);
      }
    }
    if (!chunk.empty()) {
      rec.simulated += static_cast<int64_t>(chunk.size());
      SS_ASSIGN_OR_RETURN(SweepResult r, RunVariants(base, std::move(chunk), sweep));
      rec.invalid += r.invalid;
      for (size_t k = 0; k < r.variants.size(); ++k) {
        VariantResult& v = r.variants[k];
        if (v.outcome == VariantOutcome::kInvalid && first_invalid.empty()) {
          first_invalid = fmt::format("{}: {}", fmt::join(v.sets, " "), v.message);
        }
        if (!KeepsMargin(v, o, &rec)) continue;
        const double key = ObjectiveKey(v.figures, o.objective);
        best_keys.insert(std::upper_bound(best_keys.begin(), best_keys.end(), key), key);
        double& own = gpu_best[static_cast<size_t>(chunk_gpu[k])];
        own = std::min(own, key);
        fitting.push_back(std::move(v));
        fitting_bound.push_back(chunk_bound[k]);
      }
    }
    done_before = pruned_before + static_cast<int64_t>(end);
    if (o.progress) o.progress(done_before, total);
  }
  rec.fitting = static_cast<int64_t>(fitting.size());
  // Every plan refused by the scenario (a --set, the model or a limit they all share): the
  // reason, not "no plan fits", which would send the user after the margin or the GPU count.
  if (rec.simulated > 0 && rec.invalid == rec.simulated) {
    return InvalidInput(fmt::format(
        "every one of the {} plans simulated is invalid, so none can be recommended; the first "
        "({})",
        rec.simulated, first_invalid));
  }

  // Refine the plans' FSDP settings: deeper prefetch, no reshard after forward. Other FSDP
  // settings can lower a plan's key, but not below its bound; so, round after round, every plan
  // whose bound reaches the K-th best key so far (or its GPU's best) is refined, until none is
  // left. The K best are then exactly the K best of the whole space, and `--top K` prints the
  // first K plans of any larger `--top` (refining the K best alone let a plan just below them
  // overtake one of them under a larger K).
  // The other FSDP settings tried, less those pinned (each once).
  std::vector<std::vector<std::string>> refinements;
  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {"fsdp.forward_prefetch_depth=2", "fsdp.backward_prefetch_depth=2"},
           {"fsdp.reshard_after_forward=false"},
           {"fsdp.forward_prefetch_depth=2", "fsdp.backward_prefetch_depth=2",
            "fsdp.reshard_after_forward=false"}}) {
    std::vector<std::string> kept;
    for (const std::string& set : extra) {
      if (!pins.Pinned(std::string_view(set).substr(0, set.find('=')))) kept.push_back(set);
    }
    if (!kept.empty() &&
        std::find(refinements.begin(), refinements.end(), kept) == refinements.end()) {
      refinements.push_back(std::move(kept));
    }
  }
  const size_t base_plans = fitting.size();
  std::vector<bool> refined(base_plans, false);
  sweep.progress = nullptr;
  for (;;) {
    const std::vector<int> ranked = RankVariants(fitting, o.objective);
    // The K-th best group's key (each group's best plan is its first in `ranked`) and each GPU's
    // best key.
    double kth = HUGE_VAL;
    std::set<std::string> groups_seen;
    std::map<std::string, double> gpu_best_key;
    for (int i : ranked) {
      const double key = ObjectiveKey(fitting[i].figures, o.objective);
      gpu_best_key.emplace(fitting[i].figures.gpu, key);
      if (groups_seen.insert(Group(fitting[i].sets)).second &&
          static_cast<int>(groups_seen.size()) == o.top) {
        kth = key;
      }
    }
    std::vector<std::vector<std::string>> refine;
    for (size_t i = 0; i < base_plans; ++i) {
      if (refined[i]) continue;
      const double bound =
          std::max(fitting_bound[i], RefinedBound(fitting[i].figures, o.objective));
      const bool may_enter_top = bound <= kth;
      const bool may_be_gpu_best = per_gpu && bound <= gpu_best_key[fitting[i].figures.gpu];
      if (!may_enter_top && !may_be_gpu_best) continue;
      refined[i] = true;
      for (const std::vector<std::string>& extra : refinements) {
        std::vector<std::string> s = fitting[i].sets;
        s.insert(s.end(), extra.begin(), extra.end());
        refine.push_back(std::move(s));
      }
    }
    if (refine.empty()) break;
    rec.simulated += static_cast<int64_t>(refine.size());
    rec.refined += static_cast<int64_t>(refine.size());
    SS_ASSIGN_OR_RETURN(SweepResult r, RunVariants(base, std::move(refine), sweep));
    for (VariantResult& v : r.variants) {
      if (KeepsMargin(v, o, nullptr)) fitting.push_back(std::move(v));
    }
  }
  // The front over every plan kept: each RunVariants chunk marked its own front, which plans
  // of other chunks (and the refined ones) may dominate.
  for (VariantResult& v : fitting) v.pareto = false;
  const std::vector<int> front = ParetoFront(fitting);  // fastest first
  for (int i : front) fitting[i].pareto = true;
  // Best first, one plan per mesh / batch / checkpoint choice (its best FSDP settings).
  const std::vector<int> ranked = RankVariants(fitting, o.objective);
  auto make_plan = [&](const VariantResult& v) -> Result<RecommendedPlan> {
    RecommendedPlan plan;
    plan.result = v;
    std::tie(plan.bound, plan.bound_detail) = PlanBound(plan.result.figures);
    plan.scenario = base_doc;
    for (const std::string& s : plan.result.sets) {
      SS_RETURN_IF_ERROR(ApplyOverride(plan.scenario, s));
    }
    return plan;
  };
  std::map<std::string, bool> shown;
  for (int i : ranked) {
    if (static_cast<int>(rec.plans.size()) == o.top) break;
    if (shown[Group(fitting[i].sets)]) continue;
    shown[Group(fitting[i].sets)] = true;
    SS_ASSIGN_OR_RETURN(RecommendedPlan plan, make_plan(fitting[i]));
    rec.plans.push_back(std::move(plan));
  }
  for (int i : front) {
    SS_ASSIGN_OR_RETURN(RecommendedPlan plan, make_plan(fitting[i]));
    rec.pareto_front.push_back(std::move(plan));
  }
  if (per_gpu) {
    for (const std::string& gpu : gpus) {
      bool found = false;
      for (int i : ranked) {
        if (fitting[i].figures.gpu != gpu) continue;
        SS_ASSIGN_OR_RETURN(RecommendedPlan plan, make_plan(fitting[i]));
        rec.best_per_gpu.push_back(std::move(plan));
        found = true;
        break;
      }
      if (!found) rec.gpus_without_plan.push_back(gpu);
    }
  }
  // What the user should weigh beside the ranking, over every plan that fits: prices far from
  // the usual, GPUs without a price, GPUs no measured run checks.
  for (const std::string& n : prices.notes) rec.notes.push_back(n);
  for (std::string& n : UnpricedNotes(fitting, prices.source)) rec.notes.push_back(std::move(n));
  if (std::string n = UnvalidatedNote(fitting); !n.empty()) rec.notes.push_back(std::move(n));
  return rec;
}

int PlanRank(const Recommendation& rec, const RecommendedPlan& plan) {
  for (size_t k = 0; k < rec.plans.size(); ++k) {
    if (rec.plans[k].result.sets == plan.result.sets) return static_cast<int>(k) + 1;
  }
  return 0;
}

nlohmann::json RecommendationToJson(const Recommendation& rec, const RecommendOptions& o) {
  const PriceTable& prices = o.prices != nullptr ? *o.prices : DefaultPriceTable();
  auto plans = [&](const std::vector<RecommendedPlan>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const RecommendedPlan& p : list) {
      nlohmann::json j = VariantFiguresJson(p.result, o.margin_gib);
      const int rank = PlanRank(rec, p);
      j["rank"] = rank > 0 ? nlohmann::json(rank) : nlohmann::json();
      j["bound"] = p.bound;
      j["bound_detail"] = p.bound_detail;
      j["scenario"] = p.scenario;
      out.push_back(std::move(j));
    }
    return out;
  };
  nlohmann::json j;
  j["format"] = "shardscope-recommend/1";
  j["model"] = o.model;
  j["global_batch_tokens"] = o.global_batch_tokens;
  j["seq_len"] = o.seq_len;
  j["sets"] = o.sets;
  std::vector<std::string> gpus;
  for (const std::string& g : o.gpus) gpus.push_back(AsciiLower(g));
  j["gpus"] = gpus;
  j["max_gpus"] = o.max_gpus;
  j["budget_per_hour"] = o.budget_per_hour ? nlohmann::json(*o.budget_per_hour) : nullptr;
  j["margin_gib"] = o.margin_gib;
  j["objective"] = std::string(ObjectiveName(o.objective));
  j["prices"] = prices.source;
  j["searched"] = {{"generated", rec.generated},
                   {"pruned_memory", rec.pruned_memory},
                   {"pruned_budget", rec.pruned_budget},
                   {"pruned_bound", rec.pruned_bound},
                   {"simulated", rec.simulated},
                   {"refined", rec.refined},
                   {"fitting", rec.fitting},
                   {"thin", rec.thin},
                   {"invalid", rec.invalid}};
  j["notes"] = rec.notes;
  j["plans"] = plans(rec.plans);
  j["best_per_gpu"] = plans(rec.best_per_gpu);
  j["pareto_front"] = plans(rec.pareto_front);
  j["gpus_without_plan"] = rec.gpus_without_plan;
  return j;
}

}  // namespace shardscope::sim
