#include "core/plan/plan_json.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/util/units.h"

namespace shardscope {
namespace {

using nlohmann::json;

json ParamJson(const ParamPlan& p) {
  return json{{"fqn", p.fqn},
              {"aliases", p.aliases},
              {"global_shape", p.global_shape},
              {"local_shape", p.local_shape},
              {"shard_rows", p.shard_rows},
              {"padded_rows", p.padded_rows},
              {"dtype", std::string(DTypeName(p.dtype))},
              {"sharded_numel", p.sharded_numel},
              {"unsharded_numel", p.unsharded_numel},
              {"requires_grad", p.requires_grad},
              {"replicated", p.replicated},
              {"expert", p.expert}};
}

json OptionalDType(const std::optional<DType>& d) {
  return d ? json(std::string(DTypeName(*d))) : json(nullptr);
}

json UnitJson(const UnitPlan& u) {
  json params = json::array();
  for (const ParamPlan& p : u.params) params.push_back(ParamJson(p));
  json replicate = json::array();
  json replicate_details = json::array();
  for (const ParamPlan& p : u.replicate_params) {
    replicate.push_back(p.fqn);
    replicate_details.push_back(ParamJson(p));
  }
  return json{{"fqn", u.fqn},
              {"is_root", u.is_root},
              {"wrap_index", u.wrap_index},
              {"execution_index", u.execution_index ? json(*u.execution_index) : json(nullptr)},
              {"depth", u.depth},
              {"expert", u.expert},
              {"mesh", {{"dims", u.mesh.dims}, {"sizes", u.mesh.sizes}}},
              {"params", std::move(params)},
              {"replicate_params", std::move(replicate)},
              {"replicate_param_details", std::move(replicate_details)},
              {"ignored_params", u.ignored_params},
              {"reduce_op", u.reduce_op == ReduceOp::kSum ? "sum" : "avg"},
              {"gradient_scaling_factor",
               u.gradient_scaling_factor ? json(*u.gradient_scaling_factor) : json(nullptr)},
              {"reshard_after_forward", u.reshard_after_forward_ranks > 0
                                            ? json(u.reshard_after_forward_ranks)
                                            : json(u.reshard_after_forward)},
              {"mixed_precision",
               {{"param_dtype", OptionalDType(u.mixed_precision.param_dtype)},
                {"reduce_dtype", OptionalDType(u.mixed_precision.reduce_dtype)},
                {"output_dtype", OptionalDType(u.mixed_precision.output_dtype)},
                {"cast_forward_inputs", u.mixed_precision.cast_forward_inputs}}},
              {"offload", u.offload},
              {"comm_fusion", u.comm_fusion},
              {"comm_fusion_zero_copy", u.comm_fusion_zero_copy},
              {"sharded_bytes", u.sharded_bytes()},
              {"unsharded_bytes", u.unsharded_bytes()},
              {"forward_prefetch", u.forward_prefetch},
              {"backward_prefetch", u.backward_prefetch}};
}

std::string MeshText(const MeshSpec& m) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < m.dims.size(); ++i)
    parts.push_back(fmt::format("{}={}", m.dims[i], m.sizes[i]));
  return fmt::format("{}", fmt::join(parts, "×"));
}

std::string PrefetchText(const std::vector<std::string>& targets) {
  if (targets.empty()) return "-";
  if (targets.size() <= 2) return fmt::format("{}", fmt::join(targets, ","));
  return fmt::format("{},{} +{}", targets[0], targets[1], targets.size() - 2);
}

}  // namespace

std::string FormatBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= kGiB) return fmt::format("{:.2f} GiB", b / kGiB);
  if (bytes >= kMiB) return fmt::format("{:.1f} MiB", b / kMiB);
  if (bytes >= kKiB) return fmt::format("{:.1f} KiB", b / kKiB);
  return fmt::format("{} B", bytes);
}

json PlanToJson(const Plan& plan) {
  json units = json::array();
  for (const UnitPlan& u : plan.units) units.push_back(UnitJson(u));
  json warnings = json::array();
  for (const PlanWarning& w : plan.warnings) {
    warnings.push_back({{"code", w.code}, {"message", w.message}});
  }
  json order = json::array();
  for (int i : plan.execution_order) order.push_back(plan.units[static_cast<size_t>(i)].fqn);
  json chunks = json::array();
  for (const ChunkRootPlan& c : plan.pipeline_chunks) {
    chunks.push_back({{"chunk", c.chunk},
                      {"stage", c.stage},
                      {"label", c.label},
                      {"units", c.units},
                      {"modules", c.modules},
                      {"params", c.params},
                      {"replicate_params", c.replicate_params}});
  }
  const PlanMeshInfo& m = plan.mesh;
  return json{{"format", "shardscope-plan/1"},
              {"units", std::move(units)},
              {"execution_order", std::move(order)},
              {"warnings", std::move(warnings)},
              {"totals",
               {{"params", plan.totals.params},
                {"managed_params", plan.totals.managed_params},
                {"sharded_bytes_per_rank", plan.totals.sharded_bytes_per_rank},
                {"unsharded_bytes_per_rank", plan.totals.unsharded_bytes_per_rank},
                {"replicated_bytes_per_rank", plan.totals.replicated_bytes_per_rank},
                {"ignored_bytes_per_rank", plan.totals.ignored_bytes_per_rank},
                {"persistent_bytes_per_rank", plan.totals.persistent_bytes_per_rank()},
                {"scaled_units", plan.totals.scaled_units}}},
              {"mesh",
               {{"world_size", m.world_size},
                {"tp", m.tp},
                {"cp", m.cp},
                {"pp", m.pp},
                {"ep", m.ep},
                {"dp", m.dp},
                {"dp_replicate", m.dp_replicate},
                {"dp_shard", m.dp_shard},
                {"edp", m.edp},
                {"edp_replicate", m.edp_replicate},
                {"edp_shard", m.edp_shard},
                {"loss_parallel", m.loss_parallel}}},
              {"adapter", plan.adapter},
              {"source_metadata_present", plan.source_metadata_present},
              {"forward_prefetch_depth", plan.forward_prefetch_depth},
              {"backward_prefetch_depth", plan.backward_prefetch_depth},
              {"pipeline_chunks", std::move(chunks)}};
}

std::string FormatPlanTable(const Plan& plan) {
  std::vector<int> rows = plan.execution_order;
  rows.push_back(static_cast<int>(plan.units.size()) - 1);
  size_t name_width = 6;
  for (int r : rows)
    name_width = std::max(name_width, plan.units[static_cast<size_t>(r)].fqn.size());
  name_width = std::min<size_t>(name_width, 48);
  std::string out =
      fmt::format("{:>4} {:>4}  {:<{}} {:>7} {:>11} {:>11}  {:<28} {:<12} {:<7} {:<24} {}\n",
                  "exec", "wrap", "unit", name_width, "#params", "sharded/rk", "unsharded", "mesh",
                  "reduce", "reshard", "fwd prefetch", "bwd prefetch");
  for (int r : rows) {
    const UnitPlan& u = plan.units[static_cast<size_t>(r)];
    std::string reduce = u.reduce_op == ReduceOp::kSum ? "sum" : "avg";
    if (u.gradient_scaling_factor)
      reduce += fmt::format(" ×1/{:.0f}", 1.0 / *u.gradient_scaling_factor);
    std::string name = u.is_root ? "<root>" : u.fqn;
    if (name.size() > name_width) name = "…" + name.substr(name.size() - name_width + 1);
    out += fmt::format(
        "{:>4} {:>4}  {:<{}} {:>7} {:>11} {:>11}  {:<28} {:<12} {:<7} {:<24} {}\n",
        u.execution_index ? fmt::format("{}", *u.execution_index) : "-", u.wrap_index, name,
        name_width, u.params.size() + u.replicate_params.size(), FormatBytes(u.sharded_bytes()),
        FormatBytes(u.unsharded_bytes()), MeshText(u.mesh), reduce,
        u.reshard_after_forward_ranks > 0 ? fmt::format("to {}", u.reshard_after_forward_ranks)
                                          : (u.reshard_after_forward ? "yes" : "no"),
        PrefetchText(u.forward_prefetch), PrefetchText(u.backward_prefetch));
  }
  if (!plan.pipeline_chunks.empty()) {
    out += fmt::format("\npipeline chunks ({}, each its own FSDP root):\n",
                       plan.pipeline_chunks.size());
    for (const ChunkRootPlan& c : plan.pipeline_chunks) {
      const std::string units =
          c.units.empty() ? "-"
          : c.units.size() == 1
              ? c.units.front()
              : fmt::format("{} .. {} ({})", c.units.front(), c.units.back(), c.units.size());
      std::vector<std::string> modules;
      for (const std::string& m : c.modules) modules.push_back(m.empty() ? "<root>" : m);
      out += fmt::format("  {:<14} stage {:<3} units {}; root modules {}; {} root params\n",
                         c.label, c.stage, units,
                         modules.empty() ? "-" : fmt::format("{}", fmt::join(modules, ",")),
                         c.params.size() + c.replicate_params.size());
    }
  }
  // What empty lists mean to FSDP2 (FSDPState._pre_backward's default_prefetch,
  // wait_for_unshard's kept all-gather output): not "no prefetch".
  if (plan.backward_prefetch_depth == 0) {
    out +=
        "\nbackward prefetch depth 0: no explicit lists, so FSDP2's implicit one-ahead prefetch "
        "runs (the same as depth 1); FSDP2 cannot switch backward prefetch off\n";
  }
  if (plan.forward_prefetch_depth == 0) {
    out +=
        "\nforward prefetch depth 0: no explicit lists; FSDP2 still keeps each unit's all-gather "
        "output until the next unit's copy-out, and the host running ahead overlaps the next "
        "all-gather\n";
  }
  if (!plan.warnings.empty()) {
    out += fmt::format("\nwarnings ({}):\n", plan.warnings.size());
    for (const PlanWarning& w : plan.warnings) out += fmt::format("  [{}] {}\n", w.code, w.message);
  }
  const PlanTotals& t = plan.totals;
  out += fmt::format(
      "\ntotals: {} units + root, {} parameters ({} managed), per rank{}: {} sharded, {} "
      "unsharded, {} replicated, {} ignored; {} units scale gradients\n",
      plan.units.size() - 1, t.params, t.managed_params,
      plan.pipeline_chunks.empty() ? "" : " (of the pipeline stage holding the most)",
      FormatBytes(t.sharded_bytes_per_rank), FormatBytes(t.unsharded_bytes_per_rank),
      FormatBytes(t.replicated_bytes_per_rank), FormatBytes(t.ignored_bytes_per_rank),
      t.scaled_units);
  return out;
}

}  // namespace shardscope
