// Pieces of the planner shared by its source files (not a public interface).
//
// Contents:
//   ParamInfo        one parameter identity with its resolved layout, local shape and roles
//   SourceInfo       step 1–2 results: every parameter, alias lookup, metadata presence
//   ResolveSources   step 1: source layouts, local shapes, expert flags (planning.md §2.1)
//   MarkParamLists   step 2: replicate_params and ignored_params by any alias
//   UnitDraft        a unit before policies: FQN and its module visit
//   DiscoverUnits    step 3: declared, automatic and expert units in list order
//   PlanPipelineChunks  the pipeline extension: one root per model chunk
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/config/fsdp_config.h"
#include "core/mesh/mesh_context.h"
#include "core/model/tree.h"
#include "core/plan/adapter.h"
#include "core/plan/plan.h"
#include "core/plan/planner.h"

namespace shardscope::planner {

struct ParamInfo {
  const ParamEntry* entry = nullptr;
  SourceLayout layout;      // defaults filled only when metadata is present
  bool has_layout = false;  // an entry (tree or options) named this parameter
  std::vector<int64_t> local_shape;
  bool expert = false;  // its source mesh has an `ep` dim
  bool replicated = false;
  bool ignored = false;
  int owner = -1;  // index into the unit drafts; -1 = root
};

struct SourceInfo {
  std::vector<ParamInfo> params;
  // Every alias → index into params; built on first need (BuildFqnIndex), since most plans
  // name no parameter and hashing every FQN of a 60k-module tree is a visible cost.
  std::unordered_map<std::string_view, int> by_fqn;
  bool present = false;
  std::vector<PlanWarning> warnings;
};

Result<SourceInfo> ResolveSources(const std::vector<ParamEntry>& entries, const MeshContext& mesh,
                                  const PlanOptions& options);

Status MarkParamLists(const FsdpConfig& config, SourceInfo& info);

// Fills SourceInfo::by_fqn when it is empty.
void BuildFqnIndex(SourceInfo& info);

struct UnitDraft {
  std::string fqn;
  int entry = 0;   // index into the module enumeration
  int module = 0;  // index into ModelTree::modules
};

Result<std::vector<UnitDraft>> DiscoverUnits(const ModelTree& tree,
                                             const std::vector<ModuleEntry>& modules,
                                             const ResolvedAdapter* adapter,
                                             const SourceInfo& sources, const MeshContext& mesh);

// The chunk roots of a plan whose units are final (planning.md §2, pipeline extension); a
// tied root parameter used by several chunks is placed in each, with a warning.
Result<std::vector<ChunkRootPlan>> PlanPipelineChunks(const ModelTree& tree,
                                                      const std::vector<ModuleEntry>& modules,
                                                      const Plan& plan, int pp, int chunks,
                                                      std::vector<PlanWarning>& warnings);

}  // namespace shardscope::planner
