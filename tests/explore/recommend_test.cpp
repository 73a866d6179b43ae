#include "sim/explore/recommend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "core/config/scenario.h"
#include "core/config/scenario_schema.h"
#include "sim/engine/simulator.h"

namespace shardscope::sim {
namespace {

// Llama 3.2 1B, 16 sequences of 2048 tokens, on one node of H100s (a few hundred plans).
RecommendOptions SmallCase() {
  RecommendOptions o;
  o.model = "llama3.2-1b";
  o.seq_len = 2048;
  o.global_batch_tokens = 16 * 2048;
  o.max_gpus = 8;
  o.top = 3;
  return o;
}

TEST(Recommend, BeatsAKnownGoodPlanAndReproducesIt) {
  Result<Recommendation> rec = Recommend(SmallCase());
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_EQ(rec->plans.size(), 3u);
  EXPECT_GT(rec->simulated, 0);
  // Every generated plan is pruned or simulated; refinements add to the simulated ones.
  EXPECT_GE(rec->simulated,
            rec->generated - rec->pruned_memory - rec->pruned_budget - rec->pruned_bound);
  // A known-good plan: plain FSDP over the node, 2 sequences per GPU, no checkpointing.
  const nlohmann::json known = {
      {"model", "llama3.2-1b"},
      {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 8}}},
      {"training",
       {{"seq_len", 2048},
        {"local_batch", 2},
        {"grad_accum", 1},
        {"activation_checkpoint", "none"}}}};
  Result<Scenario> known_sc = ParseScenario(known, "known", ".");
  ASSERT_TRUE(known_sc.ok()) << known_sc.status().message();
  Result<Simulation> known_sim = SimulateScenario(*known_sc, {});
  ASSERT_TRUE(known_sim.ok());
  ASSERT_TRUE(known_sim->summary.fits);
  const double known_s_per_mtok =
      1e6 / (known_sim->summary.tokens_per_s_per_gpu * known_sim->summary.world_size);
  const RecommendedPlan& best = rec->plans.front();
  EXPECT_LE(best.result.figures.s_per_mtok, known_s_per_mtok);
  for (size_t k = 1; k < rec->plans.size(); ++k) {
    EXPECT_GE(rec->plans[k].result.figures.s_per_mtok, best.result.figures.s_per_mtok);
  }
  // The printed scenario reproduces the plan's figures.
  Result<Scenario> again = ParseScenario(best.scenario, "plan", ".");
  ASSERT_TRUE(again.ok()) << again.status().message();
  Result<Simulation> sim = SimulateScenario(*again, {});
  ASSERT_TRUE(sim.ok());
  EXPECT_DOUBLE_EQ(sim->summary.tokens_per_s_per_gpu, best.result.figures.tokens_per_s_per_gpu);
  EXPECT_EQ(sim->summary.tokens_per_step, 16 * 2048);
  EXPECT_FALSE(best.bound.empty());
}

// A plan's FSDP settings are refined only where they could still put it among the K best, and
// then every such plan is refined: `--top 3` lists the first three plans of `--top 5` (with only
// the three best refined, the plan fourth before refinement overtook the third under --top 5).
TEST(Recommend, TopKIsThePrefixOfALargerTop) {
  // A quarter of the small case's batch (the search runs twice here).
  RecommendOptions three = SmallCase();
  three.global_batch_tokens = 4 * 2048;
  RecommendOptions five = three;
  five.top = 5;
  Result<Recommendation> a = Recommend(three), b = Recommend(five);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->plans.size(), 3u);
  ASSERT_EQ(b->plans.size(), 5u);
  for (size_t k = 0; k < a->plans.size(); ++k) {
    EXPECT_EQ(a->plans[k].scenario.dump(), b->plans[k].scenario.dump()) << "rank " << k + 1;
  }
  EXPECT_GT(a->refined, 3 * 3);  // more than the three best were refined
}

TEST(Recommend, ResultDoesNotDependOnThreads) {
  // A quarter of the small case's batch: 120 plans, enough to spread over four threads, at a
  // sixth of its cost (the search runs twice here).
  RecommendOptions one = SmallCase();
  one.global_batch_tokens = 4 * 2048;
  RecommendOptions four = one;
  one.threads = 1;
  four.threads = 4;
  Result<Recommendation> a = Recommend(one), b = Recommend(four);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(a->simulated, 100);
  ASSERT_EQ(a->plans.size(), b->plans.size());
  EXPECT_EQ(a->simulated, b->simulated);
  EXPECT_EQ(a->pruned_bound, b->pruned_bound);
  for (size_t k = 0; k < a->plans.size(); ++k) {
    EXPECT_EQ(a->plans[k].scenario.dump(), b->plans[k].scenario.dump());
  }
}

// The front is the one over every plan kept: the search simulates its plans in chunks, and a
// plan on its own chunk's front was marked although a plan of another chunk beat it (Llama 3
// 8B on 16 H100s: rank 4 marked beside a rank 1 cheaper and faster on the same GPUs). On a
// two-layer Llama: the 8B search took 534 s under CI's sanitizer build, this one 5.9 s.
TEST(Recommend, MarksOnlyPlansNoOtherBeatsOnCostAndTime) {
  RecommendOptions o;
  o.model = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/backend/scenarios/tiny_llama.config.json";
  o.seq_len = 256;
  o.global_batch_tokens = 8 * 256;
  o.max_gpus = 16;
  o.top = 5;
  Result<Recommendation> rec = Recommend(o);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  // Plans from several chunks (recommend.cpp simulates 64 at a time).
  EXPECT_GT(rec->simulated, 64 * 3);
  ASSERT_EQ(rec->plans.size(), 5u);
  int marked = 0;
  for (const RecommendedPlan& a : rec->plans) {
    if (!a.result.pareto) continue;
    ++marked;
    const VariantFigures& fa = a.result.figures;
    for (const RecommendedPlan& b : rec->plans) {
      const VariantFigures& fb = b.result.figures;
      const bool beaten =
          fb.s_per_mtok <= fa.s_per_mtok && *fb.cost_per_mtok_usd <= *fa.cost_per_mtok_usd &&
          (fb.s_per_mtok < fa.s_per_mtok || *fb.cost_per_mtok_usd < *fa.cost_per_mtok_usd);
      EXPECT_FALSE(beaten) << a.scenario.dump() << "\nbeaten by\n" << b.scenario.dump();
    }
  }
  // The fastest plan (ranked by time) is on the front.
  EXPECT_TRUE(rec->plans.front().result.pareto);
  EXPECT_GE(marked, 1);
  // The front as listed: fastest first, no plan of it beaten by another, and each plan shown
  // marked exactly when it is on it, or beaten by one of it. Chunks of the search mark fronts
  // of their own, which plans of other chunks beat: the list holds only the whole search's.
  auto beats = [](const VariantFigures& b, const VariantFigures& a) {
    return b.s_per_mtok <= a.s_per_mtok && *b.cost_per_mtok_usd <= *a.cost_per_mtok_usd &&
           (b.s_per_mtok < a.s_per_mtok || *b.cost_per_mtok_usd < *a.cost_per_mtok_usd);
  };
  ASSERT_FALSE(rec->pareto_front.empty());
  for (size_t k = 0; k < rec->pareto_front.size(); ++k) {
    const RecommendedPlan& a = rec->pareto_front[k];
    EXPECT_TRUE(a.result.pareto);
    if (k > 0) {
      EXPECT_LE(rec->pareto_front[k - 1].result.figures.s_per_mtok, a.result.figures.s_per_mtok);
    }
    for (const RecommendedPlan& b : rec->pareto_front) {
      EXPECT_FALSE(beats(b.result.figures, a.result.figures))
          << a.scenario.dump() << "\nbeaten by\n"
          << b.scenario.dump();
    }
  }
  for (const RecommendedPlan& p : rec->plans) {
    const bool listed =
        std::any_of(rec->pareto_front.begin(), rec->pareto_front.end(),
                    [&](const RecommendedPlan& f) { return f.result.sets == p.result.sets; });
    EXPECT_EQ(p.result.pareto, listed) << p.scenario.dump();
    const bool beaten = std::any_of(
        rec->pareto_front.begin(), rec->pareto_front.end(),
        [&](const RecommendedPlan& f) { return beats(f.result.figures, p.result.figures); });
    EXPECT_NE(listed, beaten) << p.scenario.dump();
  }
  const nlohmann::json j = RecommendationToJson(*rec, o);
  ASSERT_EQ(j["pareto_front"].size(), rec->pareto_front.size());
  EXPECT_TRUE(j["pareto_front"][0]["pareto"].get<bool>());
}

// With several GPUs each one's best plan is found and reported, though a slower GPU's makes no
// top K (a 70B search over five GPUs filled every slot with one of them and said nothing of
// the others); the JSON carries both lists.
TEST(Recommend, ReportsEachGpusBestPlan) {
  RecommendOptions o = SmallCase();
  o.global_batch_tokens = 4 * 2048;
  o.gpus = {"h100-sxm", "A100-80G"};
  o.top = 2;
  Result<Recommendation> rec = Recommend(o);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_EQ(rec->best_per_gpu.size(), 2u);
  EXPECT_EQ(rec->best_per_gpu[0].result.figures.gpu, "h100-sxm");
  EXPECT_EQ(rec->best_per_gpu[1].result.figures.gpu, "a100-80g");
  // The A100's best is no top plan (the H100s are faster), and is at least as good as an
  // A100 plan searched on its own.
  for (const RecommendedPlan& p : rec->plans) EXPECT_EQ(p.result.figures.gpu, "h100-sxm");
  RecommendOptions alone = o;
  alone.gpus = {"a100-80g"};
  alone.top = 1;
  Result<Recommendation> a100 = Recommend(alone);
  ASSERT_TRUE(a100.ok()) << a100.status().message();
  ASSERT_FALSE(a100->plans.empty());
  EXPECT_LE(rec->best_per_gpu[1].result.figures.s_per_mtok,
            a100->plans[0].result.figures.s_per_mtok * (1 + 1e-9));
  EXPECT_TRUE(a100->best_per_gpu.empty());  // one GPU: the plans are its best
  const nlohmann::json j = RecommendationToJson(*rec, o);
  EXPECT_EQ(j["format"], "shardscope-recommend/1");
  ASSERT_EQ(j["plans"].size(), rec->plans.size());
  EXPECT_EQ(j["plans"][0]["rank"], 1);
  EXPECT_EQ(j["plans"][0]["gpu"], "h100-sxm");
  EXPECT_TRUE(j["plans"][0]["scenario"].contains("cluster"));
  ASSERT_EQ(j["best_per_gpu"].size(), 2u);
  EXPECT_EQ(j["best_per_gpu"][0]["rank"], 1);
  EXPECT_TRUE(j["best_per_gpu"][1]["rank"].is_null());
  EXPECT_EQ(j["searched"]["simulated"], rec->simulated);
}

// Peak reserved is an estimate: a recommended plan keeps --margin GiB of headroom. The best
// plan without a margin is the tightest a margin just above its headroom rules out, counted in
// `thin`; a margin beyond the HBM prunes every plan unsimulated.
TEST(Recommend, PlansKeepTheMargin) {
  RecommendOptions o = SmallCase();
  o.global_batch_tokens = 4 * 2048;
  o.margin_gib = 0;
  Result<Recommendation> none = Recommend(o);
  ASSERT_TRUE(none.ok()) << none.status().message();
  ASSERT_FALSE(none->plans.empty());
  EXPECT_EQ(none->thin, 0);
  double tightest = HUGE_VAL;
  for (const RecommendedPlan& p : none->plans)
    tightest = std::min(tightest, p.result.figures.headroom_gib);
  o.margin_gib = tightest + 0.5;
  Result<Recommendation> kept = Recommend(o);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_GT(kept->thin, 0);
  for (const RecommendedPlan& p : kept->plans)
    EXPECT_GE(p.result.figures.headroom_gib, o.margin_gib) << p.scenario.dump();
  EXPECT_EQ(RecommendOptions{}.margin_gib, kDefaultMarginGib);
  o.margin_gib = 1000;
  Result<Recommendation> all = Recommend(o);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->pruned_memory, all->generated);
  EXPECT_TRUE(all->plans.empty());
  o.margin_gib = -1;
  EXPECT_EQ(Recommend(o).status().code(), ErrorCode::kInvalidInput);
}

TEST(Recommend, MemoryPruningIsSound) {
  // Llama 3 70B on one node: the state alone (99 GiB per GPU, examples/does_not_fit_hsdp_*)
  // exceeds an H100, so every plan is pruned unsimulated; and the simulator agrees.
  RecommendOptions o;
  o.model = "llama3-70b";
  o.global_batch_tokens = 8 * 8192;
  o.max_gpus = 8;
  Result<Recommendation> rec = Recommend(o);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  EXPECT_GT(rec->generated, 0);
  EXPECT_EQ(rec->pruned_memory, rec->generated);
  EXPECT_EQ(rec->simulated, 0);
  EXPECT_TRUE(rec->plans.empty());
  Result<Scenario> sc = LoadScenario(std::string(SHARDSCOPE_SOURCE_DIR) +
                                     "/examples/does_not_fit_hsdp_llama3_70b.json");
  ASSERT_TRUE(sc.ok());
  Result<Simulation> sim = SimulateScenario(*sc, {});
  ASSERT_TRUE(sim.ok());
  EXPECT_FALSE(sim->summary.fits);
}

// Settings the search does not make are fixed with --set: every plan keeps them, its scenario
// carries them, and its figures are those of that scenario.
TEST(Recommend, FixedSettingsReachEveryPlan) {
  RecommendOptions o = SmallCase();
  o.global_batch_tokens /= 4;  // fewer plans: 77 s under ASan at the whole batch
  o.sets = {"training.expandable_segments=true", "training.optimizer=sgd"};
  Result<Recommendation> rec = Recommend(o);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_FALSE(rec->plans.empty());
  for (const RecommendedPlan& plan : rec->plans) {
    EXPECT_EQ(plan.scenario["training"]["expandable_segments"], true);
    EXPECT_EQ(plan.scenario["training"]["optimizer"], "sgd");
  }
  const RecommendedPlan& best = rec->plans.front();
  Result<Scenario> again = ParseScenario(best.scenario, "plan", ".");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->training.expandable_segments);
  Result<Simulation> sim = SimulateScenario(*again, {});
  ASSERT_TRUE(sim.ok());
  EXPECT_DOUBLE_EQ(sim->summary.tokens_per_s_per_gpu, best.result.figures.tokens_per_s_per_gpu);
  EXPECT_DOUBLE_EQ(sim->summary.peak_memory_reserved_gib, best.result.figures.peak_reserved_gib);
  // --json names them with the search's other inputs.
  const nlohmann::json j = RecommendationToJson(*rec, o);
  EXPECT_EQ(j["sets"], nlohmann::json(o.sets));
}

// A path the search sets or derives and may not pin (nor an object holding a searched path) is
// refused, and a bad setting or pin is the scenario's error or the pin's, all naming --set.
TEST(Recommend, RefusesToFixWhatItSearches) {
  for (const std::string set :
       {"parallelism={\"tp\": 2}", "cluster.gpu=b200", "training.seq_len=4096",
        "fsdp={\"forward_prefetch_depth\": 2}", "parallelism.pp_schedule=interleaved_1f1b",
        "training.local_batch=2", "training.grad_accum=2", "model=llama3-8b"}) {
    RecommendOptions o = SmallCase();
    o.sets = {set};
    Result<Recommendation> rec = Recommend(o);
    ASSERT_FALSE(rec.ok()) << set;
    EXPECT_EQ(rec.status().code(), ErrorCode::kInvalidInput) << set;
    EXPECT_NE(rec.status().message().find("--set " + set + ": recommend searches"),
              std::string::npos)
        << rec.status().message();
  }
  // An object holding a pinnable path says how to pin it instead.
  RecommendOptions whole = SmallCase();
  whole.sets = {"parallelism={\"tp\": 2}"};
  EXPECT_NE(Recommend(whole).status().message().find("--set parallelism.tp=VALUE"),
            std::string::npos);
  const std::pair<std::string, std::string> bad[] = {
      {"training.expandabel_segments=true", "--set"},
      {"training.optimizer=lion", "--set"},
      {"parallelism.tp=0", "--set parallelism.tp=0: expected a whole number >= 1"},
      {"parallelism.tp=two", "--set parallelism.tp=two: expected a whole number >= 1"},
      {"cluster.nodes=4", "h100-sxm: 4 nodes are 32 GPUs, above --max-gpus 8"},
      {"parallelism.pp=64", "--set parallelism.pp=64: no mesh of up to 8 GPUs"},
      {"parallelism.ep=2", "--set parallelism.ep=2: llama3.2-1b has no routed experts"},
      {"training.activation_checkpoint=sometimes", "bad activation checkpoint mode"}};
  for (const auto& [set, says] : bad) {
    RecommendOptions o = SmallCase();
    o.sets = {set};
    Result<Recommendation> rec = Recommend(o);
    ASSERT_FALSE(rec.ok()) << set;
    EXPECT_EQ(rec.status().code(), ErrorCode::kInvalidInput) << set;
    EXPECT_NE(rec.status().message().find(says), std::string::npos) << rec.status().message();
    EXPECT_NE(rec.status().message().find("--set"), std::string::npos) << rec.status().message();
  }
  RecommendOptions twice = SmallCase();
  twice.sets = {"parallelism.tp=2", "parallelism.tp=4"};
  EXPECT_NE(Recommend(twice).status().message().find(
                "--set parallelism.tp=4: parallelism.tp is pinned twice"),
            std::string::npos);
  // A setting beside the searched ones is fine (fsdp.mix_precision is not fsdp.*_depth); a
  // budget below every plan's price keeps the search from simulating.
  RecommendOptions o = SmallCase();
  o.sets = {"fsdp.mix_precision.reduce_dtype=bfloat16"};
  o.budget_per_hour = 1;
  Result<Recommendation> beside = Recommend(o);
  ASSERT_TRUE(beside.ok()) << beside.status().message();
  EXPECT_EQ(beside->pruned_budget, beside->generated);
}

// The value at a dotted scenario path, or `absent`.
nlohmann::json At(const nlohmann::json& doc, std::string path, const nlohmann::json& absent) {
  std::replace(path.begin(), path.end(), '.', '/');
  const nlohmann::json::json_pointer pointer("/" + path);
  return doc.contains(pointer) ? doc[pointer] : absent;
}

// Every setting a plan carries (or refinement tries) is either refused or pins its axis, so a
// new search axis without its entry in the search's list fails here. Pinned to the best plan's
// value, an axis leaves that plan the best: the pinned space holds it, and the search finds the
// best of the space it searches (recommend.h); every plan then has the value.
TEST(Recommend, EveryPathAPlanSetsIsPinnedOrRefused) {
  // A two-layer Llama (eleven searches: 75 s under ASan with Llama 3.2 1B).
  RecommendOptions o = SmallCase();
  o.model = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/backend/scenarios/tiny_llama.config.json";
  o.seq_len = 256;
  o.global_batch_tokens = 8 * 256;
  Result<Recommendation> rec = Recommend(o);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_FALSE(rec->plans.empty());
  std::set<std::string> paths;
  for (const RecommendedPlan& plan : rec->plans) {
    for (const std::string& set : plan.result.sets) paths.insert(set.substr(0, set.find('=')));
  }
  // What refinement sets, shown or not (at the scenario's defaults where the best plan keeps
  // them).
  for (const char* path : {"fsdp.forward_prefetch_depth", "fsdp.backward_prefetch_depth",
                           "fsdp.reshard_after_forward"}) {
    paths.insert(path);
  }
  const RecommendedPlan& best = rec->plans.front();
  int pinned = 0;
  for (const std::string& path : paths) {
    const SchemaKey* key = FindSchemaKey(path);
    ASSERT_NE(key, nullptr) << path;
    const nlohmann::json value = At(best.scenario, path, key->default_value);
    ASSERT_FALSE(value.is_null()) << path;
    RecommendOptions fixed = o;
    fixed.sets = {path + "=" + value.dump()};
    Result<Recommendation> again = Recommend(fixed);
    if (!again.ok()) {
      EXPECT_NE(again.status().message().find("recommend searches " + path + " itself"),
                std::string::npos)
          << again.status().message();
      continue;
    }
    ++pinned;
    ASSERT_FALSE(again->plans.empty()) << path;
    EXPECT_LE(again->generated, rec->generated) << path;
    EXPECT_DOUBLE_EQ(again->plans.front().result.figures.s_per_mtok, best.result.figures.s_per_mtok)
        << fixed.sets.front();
    for (const RecommendedPlan& plan : again->plans) {
      EXPECT_EQ(At(plan.scenario, path, nullptr), value) << fixed.sets.front();
    }
  }
  // Nodes; tp, cp, pp, dp_replicate and dp_shard (a dense model has no ep); checkpointing; the
  // three FSDP settings.
  EXPECT_EQ(pinned, 10);
}

// Pins narrow the search to their values: every plan has them, its scenario reproduces its
// figures, and refinement leaves a pinned FSDP setting alone (with all three pinned, it has
// nothing left to try).
TEST(Recommend, PinnedAxesNarrowTheSearch) {
  RecommendOptions o = SmallCase();
  o.global_batch_tokens /= 4;  // fewer plans (the search runs twice)
  o.sets = {"parallelism.tp=2", "training.activation_checkpoint=full",
            "fsdp.reshard_after_forward=false"};
  Result<Recommendation> rec = Recommend(o);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_FALSE(rec->plans.empty());
  // 1 node x tp 2 x cp 1-2 x pp 1-8 x dp_replicate x micro-batches, one checkpoint mode.
  EXPECT_GT(rec->generated, 0);
  EXPECT_LT(rec->generated, 40);
  EXPECT_GT(rec->refined, 0);  // deeper prefetch is still tried
  for (const RecommendedPlan& plan : rec->plans) {
    EXPECT_EQ(plan.scenario["parallelism"]["tp"], 2);
    EXPECT_EQ(plan.scenario["training"]["activation_checkpoint"], "full");
    EXPECT_EQ(plan.scenario["fsdp"]["reshard_after_forward"], false);
    for (const std::string& set : plan.result.sets) {
      EXPECT_EQ(set.rfind("fsdp.reshard_after_forward", 0), std::string::npos) << set;
    }
  }
  const RecommendedPlan& best = rec->plans.front();
  Result<Scenario> again = ParseScenario(best.scenario, "plan", ".");
  ASSERT_TRUE(again.ok()) << again.status().message();
  Result<Simulation> sim = SimulateScenario(*again, {});
  ASSERT_TRUE(sim.ok());
  EXPECT_DOUBLE_EQ(sim->summary.tokens_per_s_per_gpu, best.result.figures.tokens_per_s_per_gpu);
  // --json names the pins with the other settings.
  EXPECT_EQ(RecommendationToJson(*rec, o)["sets"], nlohmann::json(o.sets));

  o.sets = {"parallelism.tp=2", "fsdp.forward_prefetch_depth=1", "fsdp.backward_prefetch_depth=1",
            "fsdp.reshard_after_forward=true"};
  Result<Recommendation> all_fsdp = Recommend(o);
  ASSERT_TRUE(all_fsdp.ok()) << all_fsdp.status().message();
  ASSERT_FALSE(all_fsdp->plans.empty());
  EXPECT_EQ(all_fsdp->refined, 0);
  for (const RecommendedPlan& plan : all_fsdp->plans) {
    for (const std::string& set : plan.result.sets) {
      EXPECT_EQ(set.rfind("fsdp.", 0), std::string::npos) << set;
    }
  }
}

// The memory prune assumes AdamW's state on the GPU (4 x the parameters' bytes). With the state
// offloaded, or without momentum (SGD), it would drop plans that fit: Llama 3 70B on one node
// has every plan pruned with the state on the GPU (MemoryPruningIsSound), yet fits with CPU
// offload. A budget below one node's price stops every plan before it is simulated, so the
// counts show which prune fired.
TEST(Recommend, NoMemoryPruneWhenTheStateIsElsewhere) {
  RecommendOptions o;
  o.model = "llama3-70b";
  o.seq_len = 1024;
  o.global_batch_tokens = 8 * 1024;
  o.max_gpus = 8;
  o.budget_per_hour = 1;
  Result<Recommendation> adam = Recommend(o);
  ASSERT_TRUE(adam.ok()) << adam.status().message();
  EXPECT_EQ(adam->pruned_memory, adam->generated);
  for (const std::string set : {"fsdp.enable_offload=true", "training.optimizer=sgd"}) {
    o.sets = {set};
    Result<Recommendation> rec = Recommend(o);
    ASSERT_TRUE(rec.ok()) << rec.status().message();
    EXPECT_EQ(rec->generated, adam->generated) << set;
    EXPECT_EQ(rec->pruned_memory, 0) << set;
    EXPECT_EQ(rec->pruned_budget, rec->generated) << set;
  }
  // One of the plans the prune dropped, offloaded: it fits.
  const nlohmann::json offloaded = {
      {"model", "llama3-70b"},
      {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 8}}},
      {"parallelism", {{"tp", 4}, {"dp_shard", 2}}},
      {"fsdp", {{"enable_offload", true}}},
      {"training", {{"seq_len", 1024}, {"local_batch", 4}, {"activation_checkpoint", "none"}}}};
  Result<Scenario> sc = ParseScenario(offloaded, "offloaded", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  Result<Simulation> sim = SimulateScenario(*sc, {});
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  EXPECT_TRUE(sim->summary.fits);
  EXPECT_EQ(sim->summary.tokens_per_step, o.global_batch_tokens);
}

TEST(Recommend, BudgetAndInputsChecked) {
  RecommendOptions o = SmallCase();
  o.max_gpus = 16;
  o.budget_per_hour = 3.47 * 4;  // half a node of H100 at the built-in price: no plan
  Result<Recommendation> rec = Recommend(o);
  ASSERT_TRUE(rec.ok());
  EXPECT_GT(rec->generated, 0);
  EXPECT_EQ(rec->pruned_budget, rec->generated);
  EXPECT_TRUE(rec->plans.empty());
  // A GPU the price table cannot price: its plans can be neither kept nor dropped by the budget.
  o = SmallCase();
  o.budget_per_hour = 100;
  PriceTable h200_only;
  h200_only.source = "h200_only.json";
  h200_only.per_gpu_hour = {{"h200", 5.4}};
  o.prices = &h200_only;
  Result<Recommendation> unpriced = Recommend(o);
  ASSERT_FALSE(unpriced.ok());
  EXPECT_EQ(unpriced.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(unpriced.status().message().find(
                "--budget-per-hour 100: --gpu h100-sxm has no price in h200_only.json"),
            std::string::npos)
      << unpriced.status().message();
  o = SmallCase();
  o.global_batch_tokens = 1000;
  Result<Recommendation> bad = Recommend(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--global-batch-tokens 1000"), std::string::npos);
  o = SmallCase();
  o.gpus = {"h100sxm"};
  bad = Recommend(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean h100-sxm"), std::string::npos)
      << bad.status().message();
}

// A setting whose rule depends on the mesh is checked against the largest the search may try:
// reshard_after_forward = 16 needs a shard group of 16, which only two-node plans have.
TEST(Recommend, AMeshDependentSettingIsCheckedOnTheLargestMesh) {
  RecommendOptions o = SmallCase();  // 16 sequences: one per GPU of two nodes
  o.max_gpus = 16;
  o.sets = {"fsdp.reshard_after_forward=16", "parallelism.tp=1", "parallelism.pp=1"};
  Result<Recommendation> rec = Recommend(o);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_FALSE(rec->plans.empty());
  for (const RecommendedPlan& plan : rec->plans) {
    EXPECT_EQ(plan.scenario["fsdp"]["reshard_after_forward"], 16);
    EXPECT_EQ(plan.result.figures.world_size, 16);
  }
  // No plan of at most 16 GPUs has a shard group that 3 divides: refused before the search.
  o.sets = {"fsdp.reshard_after_forward=3", "parallelism.tp=1", "parallelism.pp=1"};
  rec = Recommend(o);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(rec.status().message().find("--set"), std::string::npos) << rec.status().message();
  EXPECT_NE(rec.status().message().find("reshard_after_forward"), std::string::npos)
      << rec.status().message();
}

// A setting every plan refuses is the user's error (exit 2 naming it), not "no plan fits".
TEST(Recommend, ASettingEveryPlanRefusesIsAnError) {
  RecommendOptions o = SmallCase();
  o.global_batch_tokens /= 4;
  o.sets = {R"(fsdp.ignored_params=["nosuch"])"};
  Result<Recommendation> rec = Recommend(o);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.status().code(), ErrorCode::kInvalidInput);
  const std::string& m = rec.status().message();
  EXPECT_NE(m.find("plans simulated is invalid, so none can be recommended; the first ("),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("nosuch"), std::string::npos) << m;
}

TEST(PlanBound, NamesWhatLimitsThePlan) {
  VariantFigures f;
  f.step_time_s = 1;
  f.usable_gib = 78;
  f.headroom_gib = 2;
  f.compute_s = 0.95;
  // Little headroom is said beside the time bound, not instead of it.
  EXPECT_EQ(PlanBound(f).first, "compute");
  EXPECT_NE(PlanBound(f).second.find("memory tight: 2.0 GiB headroom of 78.0 usable"),
            std::string::npos)
      << PlanBound(f).second;
  f.headroom_gib = 30;
  EXPECT_EQ(PlanBound(f).second.find("memory tight"), std::string::npos);
  f.exposed_comm_s = 0.3;
  EXPECT_EQ(PlanBound(f).first, "exposed communication");
  f.idle_s = 0.4;
  EXPECT_EQ(PlanBound(f).first, "pipeline bubble");
  f.exposed_comm_s = f.idle_s = 0.01;
  f.compute_s = 0.98;
  EXPECT_EQ(PlanBound(f).first, "compute");
}

}  // namespace
}  // namespace shardscope::sim
