// planning.md §2: the orchestration of steps 1–10 and the policies of steps 4–10.
#include "core/plan/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "core/config/model_consistency.h"
#include "core/plan/planner_internal.h"

namespace shardscope {
namespace {

using planner::ParamInfo;
using planner::SourceInfo;
using planner::UnitDraft;

int Depth(const std::string& fqn) {
  if (fqn.empty()) return 0;
  return 1 + static_cast<int>(std::count(fqn.begin(), fqn.end(), '.'));
}

bool IsAncestor(const std::string& ancestor, const std::string& fqn) {
  return fqn.size() > ancestor.size() && fqn.compare(0, ancestor.size(), ancestor) == 0 &&
         fqn[ancestor.size()] == '.';
}

// The deepest unit whose FQN + "." prefixes `fqn` (walks fqn's own prefixes), or -1.
int DeepestUnitFor(const std::string& fqn,
                   const std::unordered_map<std::string_view, int>& unit_by_fqn) {
  const std::string_view v(fqn);
  for (size_t dot = v.rfind('.'); dot != std::string_view::npos;
       dot = dot == 0 ? std::string_view::npos : v.rfind('.', dot - 1)) {
    auto it = unit_by_fqn.find(v.substr(0, dot));
    if (it != unit_by_fqn.end()) return it->second;
  }
  return -1;
}

// Step 4: the owner is the deepest unit prefixing every alias. Warns when aliases would each
// have gone to a different unit (the reference untied such weights).
void AssignOwners(const std::vector<UnitDraft>& drafts, SourceInfo& src,
                  std::vector<PlanWarning>& warnings) {
  std::unordered_map<std::string_view, int> unit_by_fqn;
  unit_by_fqn.reserve(drafts.size() * 2);
  for (size_t u = 0; u < drafts.size(); ++u)
    unit_by_fqn.emplace(drafts[u].fqn, static_cast<int>(u));
  for (ParamInfo& p : src.params) {
    const std::vector<std::string>& fqns = p.entry->fqns;
    const std::string_view first(fqns[0]);
    p.owner = -1;
    for (size_t dot = first.rfind('.'); dot != std::string_view::npos;
         dot = dot == 0 ? std::string_view::npos : first.rfind('.', dot - 1)) {
      auto it = unit_by_fqn.find(first.substr(0, dot));
      if (it == unit_by_fqn.end()) continue;
      const std::string& unit = drafts[static_cast<size_t>(it->second)].fqn;
      const bool all = std::all_of(fqns.begin(), fqns.end(),
                                   [&](const std::string& a) { return IsAncestor(unit, a); });
      if (all) {
        p.owner = it->second;
        break;
      }
    }
    if (fqns.size() < 2) continue;
    std::vector<std::string> spread;
    bool differs = false;
    for (const std::string& a : fqns) {
      const int u = DeepestUnitFor(a, unit_by_fqn);
      differs = differs || u != p.owner;
      spread.push_back(
          fmt::format("{} in {}", a, u < 0 ? "the root" : drafts[static_cast<size_t>(u)].fqn));
    }
    if (differs) {
      warnings.push_back(
          {"tied_across_units",
           fmt::format("tied parameter {} has aliases in different units ({}); it is managed "
                       "once by {} (the reference let the first-wrapped unit take it, untying the "
                       "weights)",
                       fqns[0], fmt::join(spread, ", "),
                       p.owner < 0 ? "the root" : drafts[static_cast<size_t>(p.owner)].fqn)});
    }
  }
}

ParamPlan MakeParamPlan(const ParamInfo& p) {
  ParamPlan pp;
  pp.fqn = p.entry->fqns[0];
  pp.aliases = p.entry->fqns;
  pp.global_shape = p.entry->param->shape;
  pp.local_shape = p.local_shape;
  pp.unsharded_numel = NumElements(p.local_shape);
  pp.dtype = p.entry->param->dtype;
  pp.requires_grad = p.entry->param->requires_grad;
  pp.replicated = p.replicated;
  pp.expert = p.expert;
  return pp;
}

// Step 10: dim-0 rows per rank, padded to c = ceil(n0 / S).
Status ShardParam(int shard_size, ParamPlan& pp) {
  if (pp.replicated) {
    pp.shard_rows = pp.local_shape.empty() ? 1 : pp.local_shape[0];
    pp.sharded_numel = pp.unsharded_numel;
    return Status::Ok();
  }
  if (pp.local_shape.empty()) {
    return InvalidInput(fmt::format(
        "parameter {} is a scalar (shape []): FSDP shards dim 0 and cannot shard it (list it in "
        "ignored_params or replicate_params)",
        pp.fqn));
  }
  const int64_t n0 = pp.local_shape[0];
  const int64_t rest = n0 == 0 ? 0 : pp.unsharded_numel / n0;
  pp.shard_rows = (n0 + shard_size - 1) / shard_size;
  pp.padded_rows = pp.shard_rows * shard_size - n0;
  pp.sharded_numel = pp.shard_rows * rest;
  return Status::Ok();
}

// Step 5 mixed precision: reduce == param is dropped, then param == the parameters' dtype.
MixedPrecisionPlan MixedPrecisionFor(const FsdpConfig& config, const UnitPlan& unit) {
  MixedPrecisionPlan mp;
  mp.param_dtype = config.mix_precision.param_dtype;
  mp.reduce_dtype = config.mix_precision.reduce_dtype;
  mp.output_dtype = config.mix_precision.output_dtype;
  mp.cast_forward_inputs = config.mix_precision.cast_forward_inputs;
  if (mp.reduce_dtype && mp.param_dtype && *mp.reduce_dtype == *mp.param_dtype) {
    mp.reduce_dtype.reset();
  }
  const bool has_params = !unit.params.empty() || !unit.replicate_params.empty();
  auto same = [&](const ParamPlan& p) { return p.dtype == *mp.param_dtype; };
  if (mp.param_dtype && has_params && std::all_of(unit.params.begin(), unit.params.end(), same) &&
      std::all_of(unit.replicate_params.begin(), unit.replicate_params.end(), same)) {
    mp.param_dtype.reset();
  }
  return mp;
}

// Warns about units whose rows leave some rank with mostly padding (one warning per unit).
void PaddingWarning(const UnitPlan& unit, int shard_size, std::vector<PlanWarning>& warnings) {
  if (shard_size <= 1) return;
  int count = 0;
  const ParamPlan* example = nullptr;
  for (const ParamPlan& p : unit.params) {
    const int64_t n0 = p.local_shape[0];
    const int64_t last_real = std::max<int64_t>(0, n0 - (shard_size - 1) * p.shard_rows);
    if (2 * last_real < p.shard_rows) {
      ++count;
      if (example == nullptr) example = &p;
    }
  }
  if (count == 0) return;
  const int64_t n0 = example->local_shape[0];
  warnings.push_back(
      {"mostly_padding",
       fmt::format("unit {}: {} parameter(s) leave a rank with a shard that is mostly padding "
                   "(e.g. {}: {} rows over {} ranks → {} rows each, the last rank holds {} real)",
                   unit.is_root ? "<root>" : unit.fqn, count, example->fqn, n0, shard_size,
                   example->shard_rows,
                   std::max<int64_t>(0, n0 - (shard_size - 1) * example->shard_rows))});
}

// The planning contract lets the expert shard group take any divisor of edp = dp·cp·tp/ep,
// dp_replicate's ranks included; torchtitan builds the expert mesh inside one replica
// (dp_replicate × efsdp, efsdp = dp_shard·cp·tp/ep), so a larger edp_shard is a layout it
// cannot run: said, not refused.
void ExpertMeshWarning(const MeshContext& mesh, std::vector<PlanWarning>& warnings) {
  const MeshLayout& l = mesh.layout;
  if (l.ep <= 1 || mesh.dp_replicate <= 1) return;
  // The layout's dp_shard is FSDP's shard group, cp included (dp_replicate = dp·cp / dp_shard).
  const int64_t in_replica = int64_t{l.dp_shard} * l.tp;
  if (in_replica % l.ep == 0 && l.edp_shard <= in_replica / l.ep) return;
  warnings.push_back(
      {"edp_spans_replicas",
       in_replica % l.ep == 0
           ? fmt::format("parallelism.edp_shard = {} shards expert state across the {} "
                         "dp_replicate groups; torchtitan builds the expert mesh within one "
                         "replica (efsdp = dp_shard·cp·tp / ep = {}), so it cannot run this "
                         "layout: edp_shard {} or a divisor of it can",
                         l.edp_shard, mesh.dp_replicate, in_replica / l.ep, in_replica / l.ep)
           : fmt::format("parallelism.ep = {} does not divide the {} ranks of one replica "
                         "(dp_shard·cp·tp): the expert groups span dp_replicate groups, which "
                         "torchtitan's expert mesh (within one replica) cannot express",
                         l.ep, in_replica)});
}

MeshSpec UnitMesh(const MeshContext& mesh, bool expert) {
  MeshSpec spec;
  if (expert) {
    if (mesh.edp_replicate > 1) {
      spec.dims = {"edp_replicate", "edp_shard"};
      spec.sizes = {mesh.edp_replicate, mesh.layout.edp_shard};
    } else {
      spec.dims = {"edp_shard"};
      spec.sizes = {mesh.layout.edp_shard};
    }
  } else if (mesh.hsdp()) {
    spec.dims = {"fsdp_replicate", "fsdp_shard"};
    spec.sizes = {mesh.dp_replicate, mesh.layout.dp_shard};
  } else {
    spec.dims = {"fsdp_shard"};
    spec.sizes = {mesh.layout.dp_shard};
  }
  return spec;
}

Status CheckConfigMatchesMesh(const FsdpConfig& config, const MeshContext& mesh) {
  if (config.dp_shard_size != mesh.layout.dp_shard) {
    return InvalidInput(
        fmt::format("fsdp_config.dp_shard_size = {} but the mesh was built with dp_shard = {}",
                    config.dp_shard_size, mesh.layout.dp_shard));
  }
  if (mesh.has_expert_mesh() && config.edp_shard_size != mesh.layout.edp_shard) {
    return InvalidInput(
        fmt::format("fsdp_config.edp_shard_size = {} but the mesh was built with edp_shard = {}",
                    config.edp_shard_size, mesh.layout.edp_shard));
  }
  return Status::Ok();
}

// Step 8: pre-order, or the adapter's order which must name every unit exactly once.
Result<std::vector<int>> ExecutionOrder(const std::vector<UnitDraft>& drafts,
                                        const ResolvedAdapter* adapter) {
  std::vector<int> order(drafts.size());
  std::iota(order.begin(), order.end(), 0);
  if (adapter == nullptr || adapter->execution_order.empty()) {
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return drafts[a].entry < drafts[b].entry; });
    return order;
  }
  std::unordered_map<std::string_view, int> by_fqn;
  for (size_t u = 0; u < drafts.size(); ++u) by_fqn.emplace(drafts[u].fqn, static_cast<int>(u));
  std::vector<char> named(drafts.size(), 0);
  order.clear();
  for (const std::string& fqn : adapter->execution_order) {
    auto it = by_fqn.find(fqn);
    if (it == by_fqn.end()) {
      return InvalidInput(fmt::format(
          "{}: fsdp_execution_order names '{}', which is not an FSDP unit", adapter->name, fqn));
    }
    if (named[static_cast<size_t>(it->second)]) {
      return InvalidInput(
          fmt::format("{}: fsdp_execution_order names unit '{}' twice", adapter->name, fqn));
    }
    named[static_cast<size_t>(it->second)] = 1;
    order.push_back(it->second);
  }
  for (size_t u = 0; u < drafts.size(); ++u) {
    if (!named[u]) {
      return InvalidInput(fmt::format(
          "{}: fsdp_execution_order misses unit '{}' (it must name every unit exactly once)",
          adapter->name, drafts[u].fqn));
    }
  }
  return order;
}

// Under a pipeline a rank holds its own stage's chunks only: the per-rank totals are those of
// the stage that holds the most (sharded bytes; ties: the first), not the whole model's sums
// (which were pp times too much on an even split). A unit belongs to the chunk that runs its
// top-level ancestor; a root parameter to the chunk that manages it; an ignored one of the
// root to the chunk running the root-owned module it sits in (every stage when none does).
void StageTotals(const std::map<std::string, int64_t>& ignored_bytes, Plan& plan) {
  const UnitPlan& root = plan.root();
  std::map<std::string, const ParamPlan*> root_params;
  for (const ParamPlan& p : root.params) root_params[p.fqn] = &p;
  for (const ParamPlan& p : root.replicate_params) root_params[p.fqn] = &p;
  const auto under = [](const std::string& fqn, const std::string& top) {
    return fqn == top ||
           (fqn.size() > top.size() && fqn.starts_with(top) && fqn[top.size()] == '.');
  };
  const auto ignored = [&](const std::vector<std::string>& fqns) {
    int64_t n = 0;
    for (const std::string& f : fqns) {
      if (const auto it = ignored_bytes.find(f); it != ignored_bytes.end()) n += it->second;
    }
    return n;
  };
  std::map<int, PlanTotals> stages;
  std::vector<std::string> root_ignored_placed;
  for (const ChunkRootPlan& c : plan.pipeline_chunks) {
    PlanTotals& t = stages[c.stage];
    for (const UnitPlan& u : plan.units) {
      if (u.is_root || std::none_of(c.units.begin(), c.units.end(),
                                    [&](const std::string& top) { return under(u.fqn, top); })) {
        continue;
      }
      t.sharded_bytes_per_rank += u.sharded_bytes();
      t.unsharded_bytes_per_rank += u.unsharded_bytes();
      for (const ParamPlan& p : u.replicate_params)
        t.replicated_bytes_per_rank += p.unsharded_numel * DTypeBytes(p.dtype);
      t.ignored_bytes_per_rank += ignored(u.ignored_params);
    }
    for (const std::vector<std::string>* list : {&c.params, &c.replicate_params}) {
      for (const std::string& f : *list) {
        const auto it = root_params.find(f);
        if (it == root_params.end()) continue;
        const ParamPlan& p = *it->second;
        if (p.replicated) {
          t.replicated_bytes_per_rank += p.unsharded_numel * DTypeBytes(p.dtype);
        } else {
          t.sharded_bytes_per_rank += p.sharded_numel * DTypeBytes(p.dtype);
        }
        t.unsharded_bytes_per_rank += p.unsharded_numel * DTypeBytes(p.dtype);
      }
    }
    for (const std::string& f : root.ignored_params) {
      for (const std::string& m : c.modules) {
        if (!m.empty() && under(f, m)) {
          t.ignored_bytes_per_rank += ignored({f});
          root_ignored_placed.push_back(f);
          break;
        }
      }
    }
  }
  int64_t unplaced = 0;
  for (const std::string& f : root.ignored_params) {
    if (std::find(root_ignored_placed.begin(), root_ignored_placed.end(), f) ==
        root_ignored_placed.end()) {
      unplaced += ignored({f});
    }
  }
  const PlanTotals* most = nullptr;
  for (auto& [stage, t] : stages) {
    t.ignored_bytes_per_rank += unplaced;
    if (most == nullptr || t.sharded_bytes_per_rank > most->sharded_bytes_per_rank) most = &t;
  }
  if (most == nullptr) return;
  plan.totals.sharded_bytes_per_rank = most->sharded_bytes_per_rank;
  plan.totals.unsharded_bytes_per_rank = most->unsharded_bytes_per_rank;
  plan.totals.replicated_bytes_per_rank = most->replicated_bytes_per_rank;
  plan.totals.ignored_bytes_per_rank = most->ignored_bytes_per_rank;
}

}  // namespace

Result<Plan> BuildPlan(const ModelTree& tree, const MeshContext& mesh, const FsdpConfig& config,
                       const PlanOptions& options) {
  SS_RETURN_IF_ERROR(ValidateFsdpConfig(config));
  SS_RETURN_IF_ERROR(CheckConfigMatchesMesh(config, mesh));
  const std::vector<ModuleEntry> modules = EnumerateModules(tree);
  const std::vector<ParamEntry> entries = EnumerateParams(tree, modules);
  Plan plan;
  // Steps 1–2.
  SS_ASSIGN_OR_RETURN(SourceInfo src, planner::ResolveSources(entries, mesh, options));
  SS_RETURN_IF_ERROR(planner::MarkParamLists(config, src));
  plan.warnings = std::move(src.warnings);
  plan.source_metadata_present = src.present;
  ExpertMeshWarning(mesh, plan.warnings);
  // Step 3.
  const AdapterSpec* spec = options.adapter;
  if (spec == nullptr && options.use_builtin_adapters) spec = BuiltinAdapters().Find(tree.identity);
  std::optional<ResolvedAdapter> adapter;
  if (spec != nullptr) {
    SS_ASSIGN_OR_RETURN(adapter, ResolveAdapter(*spec, modules));
    plan.adapter = spec->name;
  }
  SS_ASSIGN_OR_RETURN(
      std::vector<UnitDraft> drafts,
      planner::DiscoverUnits(tree, modules, adapter ? &*adapter : nullptr, src, mesh));
  // Step 4.
  AssignOwners(drafts, src, plan.warnings);
  // Step 7: wrapping order, deepest first (stable), then the root.
  std::vector<int> wrap(drafts.size());
  std::iota(wrap.begin(), wrap.end(), 0);
  std::stable_sort(wrap.begin(), wrap.end(),
                   [&](int a, int b) { return Depth(drafts[a].fqn) > Depth(drafts[b].fqn); });
  std::vector<int> position(drafts.size());  // draft → index into plan.units
  plan.units.resize(drafts.size() + 1);
  for (size_t w = 0; w < wrap.size(); ++w) {
    const UnitDraft& d = drafts[static_cast<size_t>(wrap[w])];
    position[static_cast<size_t>(wrap[w])] = static_cast<int>(w);
    UnitPlan& u = plan.units[w];
    u.fqn = d.fqn;
    u.module = d.module;
    u.depth = Depth(d.fqn);
  }
  UnitPlan& root_unit = plan.units.back();
  root_unit.is_root = true;
  for (size_t w = 0; w < plan.units.size(); ++w) plan.units[w].wrap_index = static_cast<int>(w);

  // Ownership → managed lists; totals of distinct parameters.
  std::map<std::string, int64_t> ignored_bytes;  // canonical FQN → local bytes (StageTotals)
  for (const ParamInfo& p : src.params) {
    const int64_t global = NumElements(p.entry->param->shape);
    plan.totals.params += global;
    UnitPlan& u = p.owner < 0
                      ? plan.units.back()
                      : plan.units[static_cast<size_t>(position[static_cast<size_t>(p.owner)])];
    if (p.ignored) {
      u.ignored_params.push_back(p.entry->fqns[0]);
      const int64_t bytes = NumElements(p.local_shape) * DTypeBytes(p.entry->param->dtype);
      plan.totals.ignored_bytes_per_rank += bytes;
      ignored_bytes[p.entry->fqns[0]] = bytes;
      continue;
    }
    plan.totals.managed_params += global;
    // Ignored expert parameters at the root are allowed: FSDP never touches them.
    if (p.owner < 0 && p.expert) {
      return InvalidInput(fmt::format(
          "Routed expert parameters must belong to a nested experts FSDP unit ({} is owned by the "
          "root)",
          p.entry->fqns[0]));
    }
    (p.replicated ? u.replicate_params : u.params).push_back(MakeParamPlan(p));
  }

  // Steps 5, 6, 10 per unit.
  const int64_t d_scale =
      int64_t{mesh.dp} * mesh.layout.cp * (mesh.layout.loss_parallel ? 1 : mesh.layout.tp);
  for (UnitPlan& u : plan.units) {
    auto is_expert = [](const ParamPlan& p) { return p.expert; };
    u.expert = std::any_of(u.params.begin(), u.params.end(), is_expert) ||
               std::any_of(u.replicate_params.begin(), u.replicate_params.end(), is_expert);
    u.mesh = UnitMesh(mesh, u.expert);
    const int shard_size = u.mesh.shard_size();
    for (ParamPlan& p : u.params) SS_RETURN_IF_ERROR(ShardParam(shard_size, p));
    for (ParamPlan& p : u.replicate_params) SS_RETURN_IF_ERROR(ShardParam(shard_size, p));
    u.reshard_after_forward = u.is_root ? false : config.reshard_after_forward;
    if (!u.is_root && config.reshard_after_forward_ranks > 0) {
      // fully_shard's _get_post_forward_mesh_info: 1 means false, the shard size true.
      const int d = config.reshard_after_forward_ranks;
      if (shard_size % d != 0) {
        return InvalidInput(fmt::format(
            "fsdp_config.reshard_after_forward = {}: unit '{}' shards over {} ranks (expected a "
            "divisor of every unit's shard group size)",
            d, u.fqn, shard_size));
      }
      u.reshard_after_forward = d > 1;
      u.reshard_after_forward_ranks = d > 1 && d < shard_size ? d : 0;
    }
    u.mixed_precision = MixedPrecisionFor(config, u);
    u.offload = config.enable_offload;
    u.comm_fusion = config.comm_fusion;
    u.comm_fusion_zero_copy = config.CommFusionZeroCopy();
    const bool managed = !u.params.empty() || !u.replicate_params.empty();
    if (src.present && managed) {
      u.reduce_op = ReduceOp::kSum;
      if (d_scale > 1) {
        u.gradient_scaling_factor = 1.0 / static_cast<double>(d_scale);
        ++plan.totals.scaled_units;
      }
    }
    plan.totals.sharded_bytes_per_rank += u.sharded_bytes();
    plan.totals.unsharded_bytes_per_rank += u.unsharded_bytes();
    for (const ParamPlan& p : u.replicate_params) {
      plan.totals.replicated_bytes_per_rank += p.unsharded_numel * DTypeBytes(p.dtype);
    }
    if (!u.is_root && !managed) {
      plan.warnings.push_back(
          {"empty_unit", fmt::format("unit {} manages no parameter (its parameters are owned by "
                                     "nested units, ignored, or it has none)",
                                     u.fqn)});
    } else if (!u.is_root && u.unsharded_bytes() < options.small_unit_bytes) {
      plan.warnings.push_back(
          {"small_unit",
           fmt::format("unit {} holds {} bytes of parameters (< {} bytes): its all-gather is "
                       "dominated by fixed latency; consider merging it into its parent",
                       u.fqn, u.unsharded_bytes(), options.small_unit_bytes)});
    }
    PaddingWarning(u, shard_size, plan.warnings);
  }

  // Steps 8–9.
  SS_ASSIGN_OR_RETURN(std::vector<int> exec, ExecutionOrder(drafts, adapter ? &*adapter : nullptr));
  for (size_t i = 0; i < exec.size(); ++i) {
    const int unit = position[static_cast<size_t>(exec[i])];
    plan.execution_order.push_back(unit);
    plan.units[static_cast<size_t>(unit)].execution_index = static_cast<int>(i);
  }
  const int count = static_cast<int>(plan.execution_order.size());
  for (int i = 0; i < count; ++i) {
    UnitPlan& u = plan.units[static_cast<size_t>(plan.execution_order[static_cast<size_t>(i)])];
    auto target = [&](int j) -> const std::string& {
      return plan.units[static_cast<size_t>(plan.execution_order[static_cast<size_t>(j)])].fqn;
    };
    for (int j = i + 1; j <= std::min(count - 1, i + config.forward_prefetch_depth); ++j) {
      u.forward_prefetch.push_back(target(j));
    }
    for (int j = i - 1; j >= std::max(0, i - config.backward_prefetch_depth); --j) {
      u.backward_prefetch.push_back(target(j));
    }
    std::vector<std::string> parents;
    for (const auto* list : {&u.forward_prefetch, &u.backward_prefetch}) {
      for (const std::string& t : *list) {
        if (IsAncestor(t, u.fqn)) parents.push_back(t);
      }
    }
    if (!parents.empty()) {
      plan.warnings.push_back(
          {"prefetch_parent_unsharded",
           fmt::format("unit {}: prefetch target(s) {} are parent units, already unsharded while "
                       "{} runs: the effective prefetch depth is {} below the configured one",
                       u.fqn, fmt::join(parents, ", "), u.fqn, parents.size())});
    }
  }

  plan.mesh.world_size = mesh.layout.world_size;
  plan.mesh.tp = mesh.layout.tp;
  plan.mesh.cp = mesh.layout.cp;
  plan.mesh.pp = mesh.layout.pp;
  plan.mesh.ep = mesh.layout.ep;
  plan.mesh.dp = mesh.dp;
  plan.mesh.dp_replicate = mesh.dp_replicate;
  plan.mesh.dp_shard = mesh.layout.dp_shard;
  plan.mesh.edp = mesh.edp;
  plan.mesh.edp_replicate = mesh.edp_replicate;
  plan.mesh.edp_shard = mesh.has_expert_mesh() ? mesh.layout.edp_shard : 0;
  plan.mesh.loss_parallel = mesh.layout.loss_parallel;
  plan.forward_prefetch_depth = config.forward_prefetch_depth;
  plan.backward_prefetch_depth = config.backward_prefetch_depth;
  if (mesh.layout.pp > 1) {
    if (options.pp_virtual_stages < 1) {
      return InvalidInput(fmt::format("parallelism.pp_virtual_stages = {}: expected >= 1",
                                      options.pp_virtual_stages));
    }
    SS_ASSIGN_OR_RETURN(
        plan.pipeline_chunks,
        planner::PlanPipelineChunks(tree, modules, plan, mesh.layout.pp,
                                    mesh.layout.pp * options.pp_virtual_stages, plan.warnings));
    StageTotals(ignored_bytes, plan);
  }
  return plan;
}

ScenarioPlanInputs PlanInputsOf(const Scenario& scenario) {
  ScenarioPlanInputs in;
  in.layout = ScenarioMeshLayout(scenario);
  in.fsdp = ScenarioFsdpConfig(scenario);
  in.adapter = scenario.adapter;
  in.pp_virtual_stages = scenario.parallelism.pp_virtual_stages;
  return in;
}

Result<Plan> PlanFromInputs(const ModelTree& tree, const ScenarioPlanInputs& inputs) {
  SS_ASSIGN_OR_RETURN(MeshContext mesh, BuildMeshContext(inputs.layout));
  PlanOptions options;
  AdapterSpec spec;
  if (inputs.adapter.declared()) {
    spec.name = "scenario adapter";
    spec.fsdp_wrap_modules = inputs.adapter.fsdp_wrap_modules;
    spec.fsdp_excluded_subtrees = inputs.adapter.fsdp_excluded_subtrees;
    spec.fsdp_execution_order = inputs.adapter.fsdp_execution_order;
    options.adapter = &spec;
  }
  options.pp_virtual_stages = inputs.pp_virtual_stages;
  return BuildPlan(tree, mesh, inputs.fsdp, options);
}

Status ScenarioPlanError(const Status& error, const Scenario& scenario) {
  // The planner names its input as the adapter's fsdp_config (planning.md); a scenario holds
  // those fields under `fsdp`, the path the user has to edit.
  constexpr std::string_view kAdapter = "fsdp_config.";
  const std::string& m = error.message();
  if (error.code() == ErrorCode::kInvalidInput && m.starts_with(kAdapter)) {
    return InvalidInput("fsdp." + m.substr(kAdapter.size())).WithContext(scenario.source);
  }
  return error.WithContext(scenario.source);
}

Result<Plan> PlanScenario(const Scenario& scenario, const ModelTree& tree) {
  SS_RETURN_IF_ERROR(CheckScenarioAgainstModel(scenario, tree));
  Result<Plan> plan = PlanFromInputs(tree, PlanInputsOf(scenario));
  if (!plan.ok()) return ScenarioPlanError(plan.status(), scenario);
  return plan;
}

ModelBuildOptions ScenarioModelOptions(const Scenario& scenario) {
  ModelBuildOptions build;
  build.tp = scenario.parallelism.tp;
  build.ep = scenario.parallelism.ep;
  return build;
}

Result<ModelTree> LoadScenarioModel(const Scenario& scenario) {
  Result<ModelTree> tree = LoadModel(scenario.model, ScenarioModelOptions(scenario));
  if (!tree.ok()) return InScenario(tree.status(), scenario);
  return tree;
}

}  // namespace shardscope
