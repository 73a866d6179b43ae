// Steps 1 and 2 of planning.md §2: source layouts and the replicate / ignored lists.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/plan/planner_internal.h"

namespace shardscope::planner {
namespace {

// Two layouts are the same when every dim has the same placement, a missing dim being
// Replicate (an alias without an entry equals an all-Replicate one).
bool SameLayout(const SourceLayout& a, const SourceLayout& b) {
  auto covers = [](const SourceLayout& x, const SourceLayout& y) {
    for (const auto& [dim, p] : x) {
      auto it = y.find(dim);
      const Placement other = it == y.end() ? Placement::Replicate() : it->second;
      if (!(other == p)) return false;
    }
    return true;
  };
  return covers(a, b) && covers(b, a);
}

std::string LayoutText(const SourceLayout& l) {
  if (l.empty()) return "{} (all Replicate)";
  std::vector<std::string> parts;
  for (const auto& [dim, p] : l) parts.push_back(fmt::format("{}: {}", dim, PlacementName(p)));
  return "{" + fmt::format("{}", fmt::join(parts, ", ")) + "}";
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// Checks one layout against the mesh and divides the global shape into the local one.
Status ApplyLayout(const std::string& fqn, const MeshContext& mesh, ParamInfo& p) {
  p.local_shape = p.entry->param->shape;
  for (const auto& [dim, placement] : p.layout) {
    if (placement.kind == Placement::Kind::kPartial) {
      return InvalidInput(fmt::format(
          "parameter {}: source layout has Partial() on '{}' (a parameter must be Replicate or "
          "Shard(d) on every mesh dim)",
          fqn, dim));
    }
    if (IsFsdpDimName(dim)) {
      return InvalidInput(fmt::format(
          "parameter {}: source layout uses mesh dim '{}', which belongs to FSDP/PP (a source "
          "layout may use tp or ep)",
          fqn, dim));
    }
    int size = 0;
    if (dim == "tp") {
      size = mesh.layout.tp;
    } else if (dim == "ep" && mesh.has_expert_mesh()) {
      size = mesh.layout.ep;
    } else {
      return InvalidInput(fmt::format(
          "parameter {}: source layout uses mesh dim '{}', which the mesh lacks (source dims: "
          "tp{})",
          fqn, dim, mesh.has_expert_mesh() ? ", ep" : "; ep exists only when ep > 1"));
    }
    if (dim == "ep") p.expert = true;
    if (placement.kind != Placement::Kind::kShard) continue;
    const int d = placement.dim;
    if (d >= static_cast<int>(p.local_shape.size())) {
      return InvalidInput(fmt::format(
          "parameter {}: source layout {}: Shard({}) but the parameter has shape {} ({} dims)", fqn,
          dim, d, ShapeText(p.entry->param->shape), p.local_shape.size()));
    }
    int64_t& n = p.local_shape[static_cast<size_t>(d)];
    if (n % size != 0) {
      return InvalidInput(fmt::format(
          "parameter {}: dim {} of shape {} is {}, not divisible by {} = {} (source layout "
          "Shard({}))",
          fqn, d, ShapeText(p.entry->param->shape), n, dim, size, d));
    }
    n /= size;
  }
  return Status::Ok();
}

}  // namespace

Result<SourceInfo> ResolveSources(const std::vector<ParamEntry>& entries, const MeshContext& mesh,
                                  const PlanOptions& options) {
  SourceInfo info;
  info.params.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    ParamInfo& p = info.params[i];
    p.entry = &entries[i];
    const ParamEntry& e = entries[i];
    // Aliases must agree on their layout.
    int first_with = -1;
    for (size_t k = 0; k < e.entries.size(); ++k) {
      if (!e.entries[k]->layout) continue;
      if (first_with < 0) {
        first_with = static_cast<int>(k);
        p.layout = *e.entries[k]->layout;
        p.has_layout = true;
      }
    }
    if (p.has_layout) {
      for (size_t k = 0; k < e.entries.size(); ++k) {
        const SourceLayout none;
        const SourceLayout& other = e.entries[k]->layout ? *e.entries[k]->layout : none;
        if (!SameLayout(p.layout, other)) {
          return InvalidInput(fmt::format(
              "parameter {}: aliases {} and {} have different source layouts ({} vs {})", e.fqns[0],
              e.fqns[static_cast<size_t>(first_with)], e.fqns[k], LayoutText(p.layout),
              LayoutText(other)));
        }
      }
    }
  }
  // Layouts given by FQN replace the tree's; two aliases named with different layouts clash.
  std::unordered_map<int, std::string> named_by;
  if (!options.source_layouts.empty()) BuildFqnIndex(info);
  for (const auto& [fqn, layout] : options.source_layouts) {
    auto it = info.by_fqn.find(fqn);
    if (it == info.by_fqn.end()) {
      return InvalidInput("source layout names unknown parameter FQN: " + fqn);
    }
    ParamInfo& p = info.params[static_cast<size_t>(it->second)];
    auto [prev, inserted] = named_by.emplace(it->second, fqn);
    if (!inserted && !SameLayout(p.layout, layout)) {
      return InvalidInput(fmt::format(
          "parameter {}: aliases {} and {} have different source layouts ({} vs {})",
          p.entry->fqns[0], prev->second, fqn, LayoutText(p.layout), LayoutText(layout)));
    }
    p.layout = layout;
    p.has_layout = true;
  }
  bool any_layout = false;
  for (const ParamInfo& p : info.params) any_layout = any_layout || p.has_layout;
  info.present = mesh.layout.tp > 1 || mesh.layout.ep > 1 || any_layout;
  for (ParamInfo& p : info.params) {
    SS_RETURN_IF_ERROR(ApplyLayout(p.entry->fqns[0], mesh, p));
  }
  if (mesh.layout.tp > 1 && !any_layout) {
    info.warnings.push_back(
        {"tp_all_replicated",
         fmt::format("tp = {} but no parameter carries a source layout: every parameter is "
                     "replicated over TP (each TP rank holds the whole model)",
                     mesh.layout.tp)});
  }
  return info;
}

void BuildFqnIndex(SourceInfo& info) {
  if (!info.by_fqn.empty()) return;
  info.by_fqn.reserve(info.params.size() * 2);
  for (size_t i = 0; i < info.params.size(); ++i) {
    for (const std::string& fqn : info.params[i].entry->fqns) {
      info.by_fqn.emplace(fqn, static_cast<int>(i));
    }
  }
}

Status MarkParamLists(const FsdpConfig& config, SourceInfo& info) {
  if (!config.replicate_params.empty() || !config.ignored_params.empty()) BuildFqnIndex(info);
  for (const std::string& fqn : config.replicate_params) {
    auto it = info.by_fqn.find(fqn);
    if (it == info.by_fqn.end()) {
      return InvalidInput("replicate_params contains unknown parameter FQN: " + fqn);
    }
    info.params[static_cast<size_t>(it->second)].replicated = true;
  }
  for (const std::string& fqn : config.ignored_params) {
    auto it = info.by_fqn.find(fqn);
    if (it == info.by_fqn.end()) {
      return InvalidInput("ignored_params contains unknown parameter FQN: " + fqn);
    }
    ParamInfo& p = info.params[static_cast<size_t>(it->second)];
    if (p.replicated) {
      return InvalidInput(fmt::format(
          "parameter {} is in both replicate_params and ignored_params (choose one)", fqn));
    }
    p.ignored = true;
  }
  return Status::Ok();
}

}  // namespace shardscope::planner
