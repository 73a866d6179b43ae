// The fit advisor on real jobs: verdicts, causes, and suggestions that fit when re-run.
#include "sim/advisor/fit_advisor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <string>
#include <vector>

#include "tests/advisor/advisor_test_util.h"

namespace shardscope::sim {
namespace {

using testing_util::ExamplePath;
using testing_util::SimulateWith;

struct Advised {
  Simulation sim;
  FitAdvice advice;
};

Advised Advise(const std::string& path, const std::vector<std::string>& sets = {},
               FitAdviceOptions options = {}) {
  Result<Scenario> sc = LoadScenario(path, sets);
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  Result<Simulation> sim = SimulateScenario(*sc, {});
  EXPECT_TRUE(sim.ok()) << sim.status().message();
  Result<FitAdvice> advice = AdviseFit(*sc, *sim, options);
  EXPECT_TRUE(advice.ok()) << advice.status().message();
  return {std::move(*sim), std::move(*advice)};
}

// Every suggestion, re-run from the file with the job's flags (`base`) and its own, fits with
// the figures it claims.
void ExpectSuggestionsReproduce(const std::string& path, const FitAdvice& advice,
                                const std::vector<std::string>& base = {}) {
  for (const FitSuggestion& s : advice.suggestions) {
    std::vector<std::string> sets = base;
    sets.insert(sets.end(), s.sets.begin(), s.sets.end());
    Result<Simulation> again = SimulateWith(path, sets);
    ASSERT_TRUE(again.ok()) << s.change << ": " << again.status().message();
    EXPECT_TRUE(again->summary.fits) << s.change;
    EXPECT_NEAR(again->summary.peak_memory_reserved_gib, s.peak_reserved_gib, 1e-9) << s.change;
    EXPECT_NEAR(again->summary.tokens_per_s_per_gpu, s.tokens_per_s_per_gpu, 1e-6) << s.change;
    EXPECT_NEAR(s.headroom_gib, again->summary.usable_gib - s.peak_reserved_gib, 1e-9);
  }
}

TEST(FitAdvisorTest, ActivationOverflowGetsCheckpointAndBatchVariants) {
  const std::string path = ExamplePath("does_not_fit_qwen2.5_7b_a100_40g.json");
  const Advised a = Advise(path);
  EXPECT_EQ(a.advice.verdict, FitVerdict::kDoesNotFit);
  EXPECT_NEAR(a.advice.over_gib, a.sim.summary.peak_memory_reserved_gib - a.sim.summary.usable_gib,
              1e-12);
  EXPECT_GT(a.advice.over_gib, 0);
  EXPECT_FALSE(a.advice.cause.persistent_exceeds);
  ASSERT_FALSE(a.advice.cause.dominant.empty());
  EXPECT_EQ(a.advice.cause.dominant.front().category, "activations");
  EXPECT_EQ(a.advice.cause.peak_phase, "backward");
  ASSERT_GE(a.advice.suggestions.size(), 3u);
  for (size_t i = 1; i < a.advice.suggestions.size(); ++i) {
    EXPECT_GE(a.advice.suggestions[i - 1].tokens_per_s_per_gpu,
              a.advice.suggestions[i].tokens_per_s_per_gpu);
  }
  // The answers: a batch split and full checkpointing both fit.
  bool split = false, full = false;
  for (const FitSuggestion& s : a.advice.suggestions) {
    for (const std::string& set : s.sets) {
      split = split || set == "training.grad_accum=2";
      full = full || set == "training.activation_checkpoint=full";
    }
    EXPECT_EQ(s.thin, s.headroom_gib < a.advice.margin_gib);
  }
  EXPECT_TRUE(split);
  EXPECT_TRUE(full);
  // Not only variants on the edge: at least one keeps the margin.
  EXPECT_TRUE(std::any_of(a.advice.suggestions.begin(), a.advice.suggestions.end(),
                          [](const FitSuggestion& s) { return !s.thin; }));
  ExpectSuggestionsReproduce(path, a.advice);
}

TEST(FitAdvisorTest, PersistentStateOverTheHbmIsNamed) {
  const std::string path = ExamplePath("does_not_fit_hsdp_llama3_70b.json");
  const Advised a = Advise(path);
  EXPECT_EQ(a.advice.verdict, FitVerdict::kDoesNotFit);
  EXPECT_TRUE(a.advice.cause.persistent_exceeds);
  EXPECT_GT(a.advice.cause.persistent_gib, a.advice.usable_gib);
  ASSERT_EQ(a.advice.cause.persistent.size(), 3u);
  EXPECT_EQ(a.advice.cause.persistent[0].category, "sharded_params");
  EXPECT_EQ(a.advice.cause.persistent[1].category, "optimizer");
  // fp32 master parameters (4 B) and Adam's two moments (8 B) of 70.6B parameters over 8 GPUs.
  EXPECT_NEAR(a.advice.cause.persistent[1].gib, 2 * a.advice.cause.persistent[0].gib, 0.01);
  EXPECT_NE(a.advice.cause.text.find("persistent state alone exceeds"), std::string::npos);
  ASSERT_FALSE(a.advice.suggestions.empty());
  // Only wider sharding or offload can help; no checkpoint-only variant fits.
  for (const FitSuggestion& s : a.advice.suggestions) {
    bool state_change = false;
    for (const std::string& set : s.sets) {
      state_change = state_change || set.rfind("parallelism.dp_", 0) == 0 ||
                     set == "fsdp.enable_offload=true" || set.rfind("cluster.nodes=", 0) == 0;
    }
    EXPECT_TRUE(state_change) << s.change;
  }
  ExpectSuggestionsReproduce(path, a.advice);
}

TEST(FitAdvisorTest, ThinMarginOnlyOffersVariantsWithTheMargin) {
  const std::string path = ExamplePath("moe_qwen3_30b_a3b_ep8.json");
  // Replicated expert state fits under full checkpointing, with 1.47 GiB of headroom.
  const std::vector<std::string> replicated = {"parallelism.edp_shard=1",
                                               "training.activation_checkpoint=full"};
  const Advised a = Advise(path, replicated);
  ASSERT_TRUE(a.sim.summary.fits);
  EXPECT_EQ(a.advice.verdict, FitVerdict::kThinMargin);
  EXPECT_LT(a.advice.over_gib, 0);
  ASSERT_FALSE(a.advice.suggestions.empty());
  for (const FitSuggestion& s : a.advice.suggestions) {
    EXPECT_GE(s.headroom_gib, 2.0) << s.change;
    EXPECT_FALSE(s.thin);
  }
  // Sharding the replicated expert state is the fastest way out.
  EXPECT_EQ(a.advice.suggestions.front().sets.front(), "parallelism.edp_shard=2");
  // Suggestions are flags on top of the file as given (here: on top of the --set).
  for (const FitSuggestion& s : a.advice.suggestions) {
    std::vector<std::string> sets = replicated;
    sets.insert(sets.end(), s.sets.begin(), s.sets.end());
    Result<Simulation> again = SimulateWith(path, sets);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_NEAR(again->summary.peak_memory_reserved_gib, s.peak_reserved_gib, 1e-9);
  }
  // With no margin asked for, a job that fits gets no advice.
  FitAdviceOptions none;
  none.margin_gib = 0;
  const Advised b = Advise(path, replicated, none);
  EXPECT_EQ(b.advice.verdict, FitVerdict::kFits);
  EXPECT_TRUE(b.advice.suggestions.empty());
  EXPECT_EQ(b.advice.variants_simulated, 0);
}

// Llama 3 8B on 8 H100 at 15,360 tokens a sequence: the allocated peak (65.2 GiB) is well within
// the 78.1 GiB usable, and the caching allocator's reserve on top of it leaves 0.19 GiB. Expandable
// segments allocate the same tensors at the same speed and reserve less (73.8 GiB): the fastest
// way to the margin, ahead of checkpointing more.
TEST(FitAdvisorTest, TheAllocatorsCacheIsNamedAndExpandableSegmentsOffered) {
  const std::string path = ExamplePath("dense_llama3_8b.json");
  const std::vector<std::string> longer = {"training.seq_len=15360"};
  const Advised a = Advise(path, longer);
  ASSERT_EQ(a.advice.verdict, FitVerdict::kThinMargin);
  const FitCause& cause = a.advice.cause;
  EXPECT_TRUE(cause.allocator_decides);
  EXPECT_LT(cause.peak_allocated_gib, cause.usable_gib);
  EXPECT_NEAR(cause.reserved_above_allocated_gib,
              a.sim.summary.peak_memory_reserved_gib - a.sim.summary.peak_memory_allocated_gib,
              1e-12);
  EXPECT_NE(cause.text.find("caching allocator"), std::string::npos) << cause.text;
  ASSERT_FALSE(a.advice.suggestions.empty());
  const FitSuggestion& first = a.advice.suggestions.front();
  EXPECT_EQ(first.sets, std::vector<std::string>{"training.expandable_segments=true"});
  EXPECT_NEAR(first.tokens_per_s_per_gpu, a.advice.tokens_per_s_per_gpu,
              1e-9 * a.advice.tokens_per_s_per_gpu);
  EXPECT_NEAR(first.peak_allocated_gib, a.sim.summary.peak_memory_allocated_gib, 1e-9);
  EXPECT_GE(first.headroom_gib, 2.0);
  ExpectSuggestionsReproduce(path, a.advice, longer);
  // The JSON carries the figure and the flag.
  const nlohmann::json j = FitAdviceToJson(a.advice);
  EXPECT_EQ(j["cause"]["allocator_decides"], true);
  EXPECT_NEAR(j["cause"]["reserved_above_allocated_gib"].get<double>(),
              cause.reserved_above_allocated_gib, 1e-12);
  // With the setting already on, it is not offered again.
  const Advised on = Advise(path, {"training.seq_len=16384", "training.expandable_segments=true"});
  ASSERT_NE(on.advice.verdict, FitVerdict::kFits);
  for (const FitSuggestion& s : on.advice.suggestions) {
    for (const std::string& set : s.sets) {
      EXPECT_EQ(set.find("expandable_segments"), std::string::npos) << s.change;
    }
  }
}

// An activation overflow is not the allocator's doing, and a suggestion that only adds a change
// to one shown before without gaining headroom is left out: on the Qwen example, expandable
// segments on top of full checkpointing fit, at full checkpointing's speed with less headroom.
TEST(FitAdvisorTest, AChangeThatAddsNothingIsNotShown) {
  const Advised a = Advise(ExamplePath("does_not_fit_qwen2.5_7b_a100_40g.json"));
  EXPECT_FALSE(a.advice.cause.allocator_decides);
  EXPECT_GT(a.advice.cause.peak_allocated_gib, a.advice.cause.usable_gib);
  EXPECT_EQ(a.advice.cause.text.find("caching allocator"), std::string::npos);
  const std::vector<FitSuggestion>& shown = a.advice.suggestions;
  ASSERT_GE(shown.size(), 2u);
  // It fits and is counted, but not shown.
  const std::vector<std::string> extra = {"training.expandable_segments=true",
                                          "training.activation_checkpoint=full"};
  Result<Simulation> dominated =
      testing_util::SimulateWith(ExamplePath("does_not_fit_qwen2.5_7b_a100_40g.json"), extra);
  ASSERT_TRUE(dominated.ok()) << dominated.status().message();
  EXPECT_TRUE(dominated->summary.fits);
  EXPECT_GT(a.advice.variants_fitting, static_cast<int>(shown.size()));
  for (size_t i = 0; i < shown.size(); ++i) {
    EXPECT_NE(shown[i].sets, extra);
    for (size_t j = 0; j < shown.size(); ++j) {
      if (i == j || shown[i].sets.size() >= shown[j].sets.size()) continue;
      const bool within =
          std::all_of(shown[i].sets.begin(), shown[i].sets.end(), [&](const std::string& s) {
            return std::find(shown[j].sets.begin(), shown[j].sets.end(), s) != shown[j].sets.end();
          });
      EXPECT_FALSE(within && shown[i].headroom_gib >= shown[j].headroom_gib)
          << shown[j].change << " adds nothing to " << shown[i].change;
    }
  }
}

TEST(FitAdvisorTest, JudgeFit) {
  Summary s;
  s.usable_gib = 40;
  s.peak_memory_reserved_gib = 39;
  s.fits = true;
  EXPECT_EQ(JudgeFit(s, 2.0), FitVerdict::kThinMargin);
  EXPECT_EQ(JudgeFit(s, 1.0), FitVerdict::kFits);
  s.fits = false;
  EXPECT_EQ(JudgeFit(s, 0.0), FitVerdict::kDoesNotFit);
}

TEST(FitAdvisorTest, BoundedAndFast) {
  FitAdviceOptions few;
  few.max_simulations = 3;
  const Advised a = Advise(ExamplePath("does_not_fit_qwen2.5_7b_a100_40g.json"), {}, few);
  EXPECT_LE(a.advice.variants_simulated + a.advice.variants_invalid, 3);
  // The default bound, and the time it takes for an 8B job (printed for the record).
  const auto start = std::chrono::steady_clock::now();
  const Advised b = Advise(ExamplePath("does_not_fit_qwen2.5_7b_a100_40g.json"));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LE(b.advice.variants_simulated, FitAdviceOptions{}.max_simulations);
  EXPECT_GT(b.advice.variants_simulated, 5);
  std::printf("advice for an 8B job: %d variants simulated in %.0f ms (incl. the job itself)\n",
              b.advice.variants_simulated, ms);
}

TEST(FitAdvisorTest, NegativeMarginIsBadInput) {
  Result<Scenario> sc = LoadScenario(ExamplePath("dense_llama3_8b.json"));
  ASSERT_TRUE(sc.ok());
  Result<Simulation> sim = SimulateScenario(*sc, {});
  ASSERT_TRUE(sim.ok());
  FitAdviceOptions bad;
  bad.margin_gib = -1;
  Result<FitAdvice> advice = AdviseFit(*sc, *sim, bad);
  ASSERT_FALSE(advice.ok());
  EXPECT_EQ(advice.status().code(), ErrorCode::kInvalidInput);
}

TEST(FitAdvisorTest, JsonCarriesVerdictCauseAndFlags) {
  const Advised a = Advise(ExamplePath("does_not_fit_hsdp_llama3_70b.json"));
  const nlohmann::json j = FitAdviceToJson(a.advice);
  EXPECT_EQ(j["verdict"], "does_not_fit");
  EXPECT_EQ(j["cause"]["persistent_exceeds_hbm"], true);
  ASSERT_EQ(j["suggestions"].size(), a.advice.suggestions.size());
  EXPECT_EQ(j["suggestions"][0]["set"], a.advice.suggestions[0].sets);
  EXPECT_DOUBLE_EQ(j["suggestions"][0]["tokens_per_s_per_gpu"].get<double>(),
                   a.advice.suggestions[0].tokens_per_s_per_gpu);
  const std::string text = FormatFitAdvice(a.advice);
  EXPECT_NE(text.find("DOES NOT FIT by"), std::string::npos);
  EXPECT_NE(text.find("--set " + a.advice.suggestions[0].sets[0]), std::string::npos);
}

// The int form of reshard_after_forward (FSDP2: keep 1/d of the parameters after forward,
// re-gather over d ranks) between never resharding and resharding over the whole group.
int ReshardRanksOf(const FitSuggestion& s) {
  for (const std::string& set : s.sets) {
    const std::string key = "fsdp.reshard_after_forward=";
    if (set.starts_with(key) && std::isdigit(static_cast<unsigned char>(set[key.size()])))
      return std::stoi(set.substr(key.size()));
  }
  return 0;
}

TEST(FitAdvisorTest, ProposesAnIntReshardAfterForwardWhereItHelps) {
  // Llama 3 8B over 16 GPUs of 2 nodes that keeps every unit unsharded after forward.
  const std::string path = std::string(SHARDSCOPE_SOURCE_DIR) + "/traces/fsdp_2nodes/scenario.json";
  const std::vector<std::string> job = {"model=llama3-8b", "training.local_batch=2",
                                        "training.seq_len=8192"};
  std::vector<std::string> never = job;
  never.push_back("fsdp.reshard_after_forward=false");
  const Advised a = Advise(path, never);
  ASSERT_EQ(a.advice.verdict, FitVerdict::kDoesNotFit);
  bool int_form = false;
  for (const FitSuggestion& s : a.advice.suggestions) {
    const int d = ReshardRanksOf(s);
    if (d == 0) continue;
    int_form = true;
    EXPECT_EQ(16 % d, 0) << s.change;  // divides the shard group
    EXPECT_LE(d, 8) << s.change;       // its re-gather stays inside a node
  }
  EXPECT_TRUE(int_form);
  for (const FitSuggestion& s : a.advice.suggestions) {
    std::vector<std::string> sets = never;
    sets.insert(sets.end(), s.sets.begin(), s.sets.end());
    Result<Simulation> again = SimulateWith(path, sets);
    ASSERT_TRUE(again.ok()) << s.change << ": " << again.status().message();
    EXPECT_TRUE(again->summary.fits) << s.change;
    EXPECT_NEAR(again->summary.peak_memory_reserved_gib, s.peak_reserved_gib, 1e-9) << s.change;
  }
  // Already resharding to 8 ranks: only resharding further (the whole group) can save memory.
  std::vector<std::string> eight = job;
  eight.push_back("fsdp.reshard_after_forward=8");
  const Advised b = Advise(path, eight);
  for (const FitSuggestion& s : b.advice.suggestions) EXPECT_EQ(ReshardRanksOf(s), 0) << s.change;
}

}  // namespace
}  // namespace shardscope::sim
