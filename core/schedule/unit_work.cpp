#include "core/schedule/unit_work.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

// Collectives inside a unit's compute, and why they sit where they do:
// - Tensor parallelism (Megatron style, as torchtitan's parallelize plans apply it): a region
//   starts at the first column-parallel linear after replicated work and ends at a row-parallel
//   linear (or the vocab-parallel embedding), whose output is partial. Without sequence
//   parallelism the region end all-reduces in forward and the region start all-reduces the
//   input gradient in backward; with it, the start all-gathers (backward: reduce-scatters) and
//   the end reduce-scatters (backward: all-gathers). The column-parallel lm_head's logits are
//   all-gathered over tp unless loss_parallel keeps them sharded. Sizes are the full
//   activation (tokens × features × compute dtype), the nccl-tests size.
// - Context parallelism: modelled as the all-gather flavour of ring attention (torchtitan's
//   "allgather" rotate method): K and V gathered over the cp group before attention; backward
//   gathers them again and reduce-scatters dK/dV. Ring overlap with attention is not modelled.
// - Expert parallelism: token all-to-all before the routed experts (dispatch) and after them
//   (combine), each repeated in backward; per-rank send size tokens · top_k · dim.
// They are placed on the compute lane by the builder: DTensor / functional collectives are
// waited on by the next kernel, so compute cannot run past them.
namespace shardscope {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Orders descriptors by content (kind, variant, dims), so that equal descriptors of different
// modules share one entry.
struct SameDescriptorLess {
  bool operator()(const OpDescriptor* a, const OpDescriptor* b) const {
    return std::tie(a->kind, a->variant, a->dims) < std::tie(b->kind, b->variant, b->dims);
  }
};

class WorkBuilder {
 public:
  WorkBuilder(const ScheduleOptions& o, const OpContext& ctx, const WorkGroups& g,
              std::vector<std::string>& modules)
      : options_(o), ctx_(ctx), groups_(g), modules_(modules) {
    const int64_t b = DTypeBytes(ctx.compute_dtype);
    act_bytes_ = b;
    tokens_ = ctx.batch * CeilDiv(ctx.seq, ctx.cp);
  }

  // Appends the entries of one module (its comm points and its item) to `out`.
  void AddModule(const OpDescriptor& op, const Work& work, const OpCost& cost,
                 const std::string& fqn, std::vector<WorkEntry>& out) {
    ComputeItem item;
    item.kind = op.kind;
    item.work = work;
    item.cost = cost;
    item.module = static_cast<int>(modules_.size());
    modules_.push_back(fqn);
    const bool tp = groups_.tp >= 0;
    const bool sp = options_.sequence_parallel;
    if (tp && op.kind == OpKind::kLinear && op.variant == "column" && !in_region_) {
      const int64_t bytes = tokens_ * op.dim("in") * act_bytes_;
      WorkEntry e = Comm();
      if (sp) {
        e.fwd.push_back({OpType::kAllGather, "tp_all_gather", groups_.tp, bytes});
        e.bwd.push_back({OpType::kReduceScatter, "tp_reduce_scatter", groups_.tp, bytes});
      } else {
        e.bwd.push_back({OpType::kAllReduce, "tp_all_reduce", groups_.tp, bytes});
      }
      out.push_back(std::move(e));
      in_region_ = true;
    }
    if (groups_.cp >= 0 && op.kind == OpKind::kAttention) {
      const int64_t kv_heads =
          std::max<int64_t>(1, CeilDiv(op.dim("kv_heads", op.dim("heads")), ctx_.tp));
      const int64_t v_dim = op.dim("v_head_dim") > 0 ? op.dim("v_head_dim") : op.dim("head_dim");
      const int64_t bytes =
          tokens_ * ctx_.cp * kv_heads * (op.dim("head_dim") + v_dim) * act_bytes_;
      WorkEntry e = Comm();
      e.fwd.push_back({OpType::kAllGather, "cp_all_gather", groups_.cp, bytes});
      e.bwd.push_back({OpType::kAllGather, "cp_all_gather", groups_.cp, bytes});
      e.bwd.push_back({OpType::kReduceScatter, "cp_reduce_scatter", groups_.cp, bytes});
      out.push_back(std::move(e));
    }
    const int64_t ep_bytes = EpTokens() * op.dim("top_k") * op.dim("dim") * act_bytes_;
    const bool ep = groups_.ep >= 0 && op.kind == OpKind::kExperts;
    if (ep) {
      WorkEntry e = Comm();
      e.fwd.push_back({OpType::kAllToAll, "ep_dispatch", groups_.ep, ep_bytes});
      e.bwd.push_back({OpType::kAllToAll, "ep_dispatch", groups_.ep, ep_bytes});
      out.push_back(std::move(e));
    }
    if (tp && op.kind == OpKind::kLoss && in_region_) {
      // The column-parallel lm_head left its logits sharded over the vocabulary.
      if (!options_.loss_parallel) {
        const int64_t bytes = tokens_ * op.dim("vocab") * act_bytes_;
        WorkEntry e = Comm();
        e.fwd.push_back({OpType::kAllGather, "tp_all_gather", groups_.tp, bytes});
        out.push_back(std::move(e));
      }
      in_region_ = false;
    }
    WorkEntry m;
    m.kind = WorkEntry::Kind::kItem;
    m.item = std::move(item);
    out.push_back(std::move(m));
    if (ep) {
      WorkEntry e = Comm();
      e.fwd.push_back({OpType::kAllToAll, "ep_combine", groups_.ep, ep_bytes});
      e.bwd.push_back({OpType::kAllToAll, "ep_combine", groups_.ep, ep_bytes});
      out.push_back(std::move(e));
    }
    const bool partial_out = (op.kind == OpKind::kLinear && op.variant == "row") ||
                             (op.kind == OpKind::kEmbedding && op.variant == "vocab");
    if (tp && partial_out) {
      const int64_t features = op.kind == OpKind::kLinear ? op.dim("out") : op.dim("dim");
      const int64_t bytes = tokens_ * features * act_bytes_;
      WorkEntry e = Comm();
      if (sp) {
        e.fwd.push_back({OpType::kReduceScatter, "tp_reduce_scatter", groups_.tp, bytes});
        e.bwd.push_back({OpType::kAllGather, "tp_all_gather", groups_.tp, bytes});
      } else {
        e.fwd.push_back({OpType::kAllReduce, "tp_all_reduce", groups_.tp, bytes});
      }
      out.push_back(std::move(e));
      in_region_ = false;
    }
  }

 private:
  static WorkEntry Comm() {
    WorkEntry e;
    e.kind = WorkEntry::Kind::kComm;
    return e;
  }
  // Tokens entering the MoE layer on this rank (sequence parallelism splits them over tp).
  int64_t EpTokens() const {
    return options_.sequence_parallel ? CeilDiv(tokens_, ctx_.tp) : tokens_;
  }

  const ScheduleOptions& options_;
  const OpContext& ctx_;
  const WorkGroups& groups_;
  std::vector<std::string>& modules_;
  int64_t act_bytes_ = 2;
  int64_t tokens_ = 1;
  bool in_region_ = false;
};

// The activation entering the unit, what `full` checkpointing keeps: the block's input, not its
// first item's. Entries follow module registration order, and transformers registers
// self_attn before input_layernorm, so the first item is the attention core (q + k + v, 1.5x
// the hidden state of a Llama 3 layer, 3x of a Llama 2 one). In a pre-norm block the first
// norm that is the unit's own child reads the block's input (nested norms such as Qwen3's
// q_norm read something else); a unit without one is taken to start with its first item.
int64_t BlockInputBytes(const std::string& unit_fqn, const std::vector<std::string>& modules,
                        const UnitWork& work) {
  const std::string prefix = unit_fqn.empty() ? "" : unit_fqn + ".";
  for (const WorkEntry& e : work.entries) {
    if (e.kind != WorkEntry::Kind::kItem || e.item.kind != OpKind::kNorm) continue;
    const std::string& fqn = modules[e.item.module];
    if (fqn.size() > prefix.size() && fqn.compare(0, prefix.size(), prefix) == 0 &&
        fqn.find('.', prefix.size()) == std::string::npos) {
      return e.item.cost.input_bytes;
    }
  }
  for (const WorkEntry& e : work.entries) {
    if (e.kind == WorkEntry::Kind::kItem) return e.item.cost.input_bytes;
  }
  return 0;
}

// Moves loss items to the end of the unit (keeping the collective just before each), and
// orders nested sibling units by execution index while keeping their positions.
void Arrange(const Plan& plan, int u, const std::vector<std::string>& modules, UnitWork& work) {
  std::vector<WorkEntry> loss, rest;
  for (size_t i = 0; i < work.entries.size(); ++i) {
    WorkEntry& e = work.entries[i];
    const bool is_loss = e.kind == WorkEntry::Kind::kItem && e.item.kind == OpKind::kLoss;
    const bool before_loss = e.kind == WorkEntry::Kind::kComm && i + 1 < work.entries.size() &&
                             work.entries[i + 1].kind == WorkEntry::Kind::kItem &&
                             work.entries[i + 1].item.kind == OpKind::kLoss;
    (is_loss || before_loss ? loss : rest).push_back(std::move(e));
  }
  for (WorkEntry& e : loss) rest.push_back(std::move(e));
  work.entries = std::move(rest);

  std::vector<int> slots, units;
  for (size_t i = 0; i < work.entries.size(); ++i) {
    if (work.entries[i].kind == WorkEntry::Kind::kUnit) {
      slots.push_back(static_cast<int>(i));
      units.push_back(work.entries[i].unit);
    }
  }
  std::stable_sort(units.begin(), units.end(), [&](int a, int b) {
    return plan.units[a].execution_index.value_or(-1) < plan.units[b].execution_index.value_or(-1);
  });
  for (size_t k = 0; k < slots.size(); ++k) work.entries[slots[k]].unit = units[k];
  work.input_bytes = BlockInputBytes(plan.units[u].fqn, modules, work);
}

}  // namespace

Result<std::vector<UnitWork>> BuildUnitWork(const ModelTree& tree, const Plan& plan,
                                            const ScheduleOptions& options, const OpContext& ctx,
                                            const WorkGroups& groups,
                                            std::vector<std::string>& modules) {
  const OpEstimator estimate = options.estimator ? options.estimator : &EstimateOp;
  std::unordered_map<int, int> unit_of_module;
  for (size_t u = 0; u < plan.units.size(); ++u) {
    const int module = plan.units[u].module;
    if (module < 0 || module >= static_cast<int>(tree.modules.size())) {
      return InvalidInput(fmt::format("plan: unit '{}' names module index {} outside the tree",
                                      plan.units[u].fqn, module));
    }
    if (!plan.units[u].is_root) unit_of_module[module] = static_cast<int>(u);
  }
  const int root = static_cast<int>(plan.units.size()) - 1;
  std::vector<UnitWork> work(plan.units.size());
  WorkBuilder builder(options, ctx, groups, modules);
  // Enclosing units as (module depth, unit index); the root encloses everything.
  std::vector<std::pair<int, int>> stack = {{-1, root}};
  struct Deferred {
    const std::optional<OpDescriptor>& op;
    Work work;
    OpCost cost;
    std::string fqn;
    int unit;
  };
  std::vector<Deferred> losses;
  // Every decoder layer repeats the same descriptors: describe and estimate each distinct one
  // once (both are functions of the descriptor and the context alone). Was 4,200 instructions
  // per module, two thirds of this walk.
  std::map<const OpDescriptor*, std::pair<Work, OpCost>, SameDescriptorLess> described_as;
  for (const ModuleEntry& e : EnumerateModules(tree)) {
    while (stack.size() > 1 && stack.back().first >= e.depth) stack.pop_back();
    auto it = unit_of_module.find(e.module);
    if (e.first_visit && it != unit_of_module.end()) {
      WorkEntry nested;
      nested.kind = WorkEntry::Kind::kUnit;
      nested.unit = it->second;
      work[stack.back().second].entries.push_back(std::move(nested));
      stack.emplace_back(e.depth, it->second);
    }
    const Module& m = tree.modules[e.module];
    if (!m.op) continue;
    auto [described, first] = described_as.try_emplace(&*m.op);
    if (first) {
      Result<Work> what = DescribeOp(*m.op, ctx);
      if (!what.ok()) return what.status().WithContext(fmt::format("module '{}'", e.fqn));
      Result<OpCost> cost = estimate(*m.op, ctx);
      if (!cost.ok()) return cost.status().WithContext(fmt::format("module '{}'", e.fqn));
      described->second = {std::move(*what), *cost};
    }
    const auto& [what, cost] = described->second;
    if (m.op->kind == OpKind::kLoss) {
      losses.push_back({m.op, what, cost, e.fqn, stack.back().second});
      continue;
    }
    builder.AddModule(*m.op, what, cost, e.fqn, work[stack.back().second].entries);
  }
  // The loss consumes the head's logits: it runs after every module of its unit, with the
  // tensor-parallel state the head left.
  for (const Deferred& d : losses) {
    builder.AddModule(*d.op, d.work, d.cost, d.fqn, work[d.unit].entries);
  }
  for (size_t u = 0; u < work.size(); ++u) Arrange(plan, static_cast<int>(u), modules, work[u]);
  return work;
}

}  // namespace shardscope
