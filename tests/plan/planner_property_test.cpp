// Property test over random trees: every parameter is managed exactly once or ignored, and
// sharded elements over a shard group add up to the padded total.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <utility>

#include "core/plan/planner_internal.h"
#include "tests/plan/plan_test_util.h"

namespace shardscope {
namespace {

using namespace testing_util;

struct RandomCase {
  ModelTree tree;
  MeshContext mesh;
  FsdpConfig config;
  AdapterSpec adapter;
  bool use_adapter = false;
};

RandomCase MakeCase(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  RandomCase c;
  const int world_options[] = {1, 2, 4, 6, 8, 16};
  const int world = world_options[pick(0, 5)];
  const int tp = (world % 2 == 0 && pick(0, 2) == 0) ? 2 : 1;
  std::vector<int> shard_options;
  for (int s = 1; s <= world / tp; ++s) {
    if ((world / tp) % s == 0) shard_options.push_back(s);
  }
  const int dp_shard =
      shard_options[static_cast<size_t>(pick(0, static_cast<int>(shard_options.size()) - 1))];
  c.mesh = Mesh(world, dp_shard, tp);
  c.config = Config(c.mesh);
  c.config.forward_prefetch_depth = pick(0, 3);
  c.config.backward_prefetch_depth = pick(0, 3);

  TreeBuilder b;
  int next_tie = 0;
  std::vector<std::string> tie_ids;
  std::vector<std::string> all_fqns;
  std::vector<std::string> module_fqns;
  auto add_param = [&](int module, const std::string& module_fqn, const std::string& name) {
    std::vector<int64_t> shape;
    const int dims = pick(1, 3);
    for (int d = 0; d < dims; ++d) shape.push_back(pick(1, 40) * (d == 0 ? tp : 1));
    std::string id;
    if (!tie_ids.empty() && pick(0, 9) == 0) {
      id = tie_ids[static_cast<size_t>(pick(0, static_cast<int>(tie_ids.size()) - 1))];
      // A tie must agree in shape: copy the first entry's by looking it up below.
    } else if (pick(0, 9) == 0) {
      id = "tie" + std::to_string(next_tie++);
      tie_ids.push_back(id);
    }
    Param& p = b.P(module, name, shape, pick(0, 1) ? DType::kFloat32 : DType::kBFloat16, id);
    if (tp > 1 && pick(0, 3) == 0) p.layout = SourceLayout{{"tp", Placement::Shard(0)}};
    all_fqns.push_back(module_fqn + "." + name);
  };
  const int model = b.Add(0, "model", "Model", true);
  const int layers = b.Add(model, "layers", "ModuleList");
  const int n_layers = pick(1, 6);
  for (int i = 0; i < n_layers; ++i) {
    const std::string lf = "model.layers." + std::to_string(i * 3);
    const int l = b.Add(layers, std::to_string(i * 3), "Block");
    module_fqns.push_back(lf);
    const int n_children = pick(1, 3);
    for (int k = 0; k < n_children; ++k) {
      const std::string cf = lf + ".m" + std::to_string(k);
      const int m = b.Add(l, "m" + std::to_string(k));
      module_fqns.push_back(cf);
      for (int q = 0; q < pick(0, 2); ++q) add_param(m, cf, "w" + std::to_string(q));
      if (pick(0, 2) == 0) {
        const int g = b.Add(m, "inner");
        module_fqns.push_back(cf + ".inner");
        add_param(g, cf + ".inner", "w");
      }
    }
  }
  // Sometimes a block is registered a second time elsewhere (a shared module): its
  // parameters are one tensor under two names.
  if (pick(0, 3) == 0) {
    const int holder = b.Add(0, "shared_holder");
    b.tree.AddExistingChild(holder, b.tree.modules[static_cast<size_t>(layers)].children[0]);
  }
  const int extra = b.Add(0, "head");
  module_fqns.push_back("head");
  add_param(extra, "head", "weight");
  add_param(b.Add(model, "norm"), "model.norm", "weight");
  module_fqns.push_back("model.norm");
  // Ties must agree in shape and dtype: give every entry of an id the first entry's.
  std::map<std::string, Param> first_of;
  for (Module& m : b.tree.modules) {
    for (Param& p : m.params) {
      if (p.id.empty()) continue;
      auto [it, inserted] = first_of.emplace(p.id, p);
      if (!inserted) {
        p.shape = it->second.shape;
        p.dtype = it->second.dtype;
        p.layout = it->second.layout;
      }
    }
  }
  c.tree = std::move(b.tree);
  // Random declared units (nested allowed) and ignored / replicated parameters.
  c.adapter.name = "random adapter";
  std::set<std::string> declared;
  for (int k = 0; k < pick(0, 2); ++k) {
    declared.insert(
        module_fqns[static_cast<size_t>(pick(0, static_cast<int>(module_fqns.size()) - 1))]);
  }
  c.adapter.fsdp_wrap_modules.assign(declared.begin(), declared.end());
  c.use_adapter = !declared.empty();
  std::set<std::string> chosen;
  for (const std::string& f : all_fqns) {
    const int r = pick(0, 19);
    if (r == 0 && chosen.insert(f).second) c.config.ignored_params.push_back(f);
    if (r == 1 && chosen.insert(f).second) c.config.replicate_params.push_back(f);
  }
  return c;
}

// Parameter identity by its plain definition (a non-empty id, else the (module, index) slot),
// hash maps and all: the reference the optimised EnumerateParams must reproduce.
std::vector<ParamEntry> ReferenceEnumerateParams(const ModelTree& tree) {
  std::vector<ParamEntry> out;
  std::map<std::string, size_t> by_id;
  std::map<std::pair<int, size_t>, size_t> by_slot;
  for (const ModuleEntry& m : EnumerateModules(tree)) {
    const Module& mod = tree.modules[static_cast<size_t>(m.module)];
    for (size_t i = 0; i < mod.params.size(); ++i) {
      const Param& p = mod.params[i];
      const size_t index = p.id.empty()
                               ? by_slot.emplace(std::pair{m.module, i}, out.size()).first->second
                               : by_id.emplace(p.id, out.size()).first->second;
      if (index == out.size()) out.push_back(ParamEntry{{}, &p, {}});
      out[index].fqns.push_back(m.fqn.empty() ? p.name : m.fqn + "." + p.name);
      out[index].entries.push_back(&p);
    }
  }
  return out;
}

TEST(PlannerPropertyTest, EveryParameterOnceAndShardsAddUp) {
  std::mt19937 rng(20261129);
  int planned = 0;
  for (int iteration = 0; iteration < 300; ++iteration) {
    RandomCase c = MakeCase(rng);
    // The tree's fast enumeration (flat slot table) agrees with the plain definition.
    const std::vector<ParamEntry> reference = ReferenceEnumerateParams(c.tree);
    const std::vector<ParamEntry> own = EnumerateParams(c.tree);
    ASSERT_EQ(own.size(), reference.size());
    for (size_t k = 0; k < own.size(); ++k) {
      EXPECT_EQ(own[k].fqns, reference[k].fqns);
      EXPECT_EQ(own[k].param, reference[k].param);
      EXPECT_EQ(own[k].entries, reference[k].entries);
    }
    PlanOptions o;
    if (c.use_adapter) o.adapter = &c.adapter;
    Result<Plan> r = BuildPlan(c.tree, c.mesh, c.config, o);
    if (!r.ok()) {
      // The only legitimate failure of these trees: an ignored and a replicated alias of one
      // tied parameter.
      EXPECT_NE(r.status().message().find("both replicate_params and ignored_params"),
                std::string::npos)
          << "iteration " << iteration << ": " << r.status().message();
      continue;
    }
    ++planned;
    const Plan& plan = *r;
    std::multiset<std::string> seen;
    for (const UnitPlan& u : plan.units) {
      const int s = u.mesh.shard_size();
      for (const ParamPlan& p : u.params) {
        seen.insert(p.fqn);
        const int64_t n0 = p.local_shape[0];
        const int64_t rest = p.unsharded_numel / n0;
        // Sum over the group = padded total; real rows over ranks = n0.
        EXPECT_EQ(s * p.sharded_numel, (n0 + p.padded_rows) * rest) << p.fqn;
        EXPECT_EQ(p.shard_rows, (n0 + s - 1) / s);
        int64_t real = 0;
        for (int rank = 0; rank < s; ++rank) {
          real += std::clamp<int64_t>(n0 - rank * p.shard_rows, 0, p.shard_rows);
        }
        EXPECT_EQ(real, n0) << p.fqn;
        // Every alias lies under the owning unit.
        for (const std::string& a : p.aliases) {
          if (!u.is_root) {
            EXPECT_EQ(a.rfind(u.fqn + ".", 0), 0u) << a << " in " << u.fqn;
          }
        }
      }
      for (const ParamPlan& p : u.replicate_params) seen.insert(p.fqn);
      for (const std::string& f : u.ignored_params) seen.insert(f);
    }
    const std::vector<ParamEntry> entries = EnumerateParams(c.tree);
    ASSERT_EQ(seen.size(), entries.size()) << "iteration " << iteration;
    for (const ParamEntry& e : entries) EXPECT_EQ(seen.count(e.fqns[0]), 1u) << e.fqns[0];
    // Wrapping order: deepest first, root last; execution indices form a permutation.
    for (size_t i = 1; i + 1 < plan.units.size(); ++i) {
      EXPECT_GE(plan.units[i - 1].depth, plan.units[i].depth);
    }
    EXPECT_TRUE(plan.units.back().is_root);
    EXPECT_EQ(plan.execution_order.size(), plan.units.size() - 1);
  }
  EXPECT_GT(planned, 250);
}

}  // namespace
}  // namespace shardscope
