// Level 1: the tuning state machine: a knob change re-simulates on the worker and its new
// prediction replaces A with the old one as the ghost; an invalid combination leaves the
// prediction alone and reports the planner's message; the scenario is written atomically.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "core/config/scenario.h"
#include "core/util/file_io.h"
#include "viewer/app.h"
#include "viewer/viewer_state.h"

namespace shardscope::viewer {
namespace {

const std::string kScenario =
    std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/viewer/golden/h200_sac_b2.json";

TEST(Tuning, KnobsRoundTripThroughOverrides) {
  Result<Scenario> sc = LoadScenario(kScenario);
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  const TuningKnobs k = KnobsFromScenario(*sc, sc->resolved);
  EXPECT_EQ(k.local_batch, 2);
  EXPECT_EQ(k.gpu, "h200");
  EXPECT_EQ(k.activation_checkpoint, "selective_op:2");
  EXPECT_EQ(k.gpus_per_node, 1);
  Result<Scenario> again = LoadScenario(kScenario, KnobOverrides(k));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(KnobsFromScenario(*again, again->resolved), k);
}

// FSDP2's int reshard_after_forward (a group of d ranks dividing the shard group) stays an int
// through the knobs, the overrides and the written scenario; unchecking writes false.
TEST(Tuning, ReshardAfterForwardKeepsItsIntForm) {
  const std::string path = std::string(SHARDSCOPE_SOURCE_DIR) + "/examples/dense_llama3_8b.json";
  Result<Scenario> sc = LoadScenario(path, {"fsdp.reshard_after_forward=2"});
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  TuningKnobs k = KnobsFromScenario(*sc, sc->resolved);
  EXPECT_TRUE(k.reshard_after_forward);
  EXPECT_EQ(k.reshard_after_forward_ranks, 2);
  Result<Scenario> again = LoadScenario(path, KnobOverrides(k));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->fsdp.reshard_after_forward_ranks, 2);
  EXPECT_EQ(KnobsFromScenario(*again, again->resolved), k);

  Result<std::string> text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  const Tuner tuner(nlohmann::json::parse(*text), path,
                    std::filesystem::path(path).parent_path().string());
  const std::string dir =
      std::filesystem::temp_directory_path() / ("viewer_reshard_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(tuner.WriteScenario(dir + "/tuned.json", k).ok());
  Result<std::string> written = ReadFile(dir + "/tuned.json");
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(nlohmann::json::parse(*written)["fsdp"]["reshard_after_forward"], 2);
  Result<Scenario> back = LoadScenario(dir + "/tuned.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->fsdp.reshard_after_forward_ranks, 2);

  k.reshard_after_forward = false;  // the group size is kept for when it is checked again
  ASSERT_TRUE(tuner.WriteScenario(dir + "/off.json", k).ok());
  Result<std::string> off = ReadFile(dir + "/off.json");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(nlohmann::json::parse(*off)["fsdp"]["reshard_after_forward"], false);
  std::filesystem::remove_all(dir);
}

TEST(Tuning, AChangeGivesANewPredictionAndKeepsTheOldAsGhost) {
  ViewerState s;
  ViewerOptions o;
  o.scenario = kScenario;
  ASSERT_TRUE(LoadViewerState(o, &s).ok());
  ASSERT_NE(s.a, nullptr);
  const auto first = s.a;
  const int64_t first_step = s.summary[0].step_ns;
  ASSERT_GT(first_step, 0);

  TuningKnobs k = s.knobs;
  k.local_batch = 1;  // half the tokens: a shorter step
  s.knobs = k;
  const uint64_t gen = s.tuner->Request(k);
  ASSERT_TRUE(s.tuner->WaitIdle(std::chrono::seconds(120)));
  ASSERT_TRUE(StepTuning(&s));
  EXPECT_EQ(s.tuning_generation, gen);
  EXPECT_TRUE(s.tuning_error.empty()) << s.tuning_error;
  EXPECT_EQ(s.ghost, first);
  EXPECT_NE(s.a, first);
  EXPECT_LT(s.summary[0].step_ns, first_step * 0.8);
  EXPECT_EQ(s.a->trace.metadata.scenario["training"]["local_batch"], 1);

  // An invalid mesh: the message is shown, the prediction stays.
  k.tp = 3;
  const auto good = s.a;
  s.tuner->Request(k);
  ASSERT_TRUE(s.tuner->WaitIdle(std::chrono::seconds(120)));
  ASSERT_TRUE(StepTuning(&s));
  EXPECT_FALSE(s.tuning_error.empty());
  EXPECT_EQ(s.a, good);
}

TEST(Tuning, WritesTheCurrentScenarioAtomically) {
  ViewerState s;
  ViewerOptions o;
  o.scenario = kScenario;
  ASSERT_TRUE(LoadViewerState(o, &s).ok());
  TuningKnobs k = s.knobs;
  k.forward_prefetch_depth = 3;
  k.reshard_after_forward = false;
  const std::string dir =
      std::filesystem::temp_directory_path() / ("viewer_tuning_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/tuned.json";
  ASSERT_TRUE(s.tuner->WriteScenario(path, k).ok());
  // The cost model's relative path was made absolute, so the copy loads from anywhere.
  Result<Scenario> back = LoadScenario(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->fsdp.forward_prefetch_depth, 3);
  EXPECT_FALSE(back->fsdp.reshard_after_forward);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename(), "tuned.json") << "no temporary file left behind";
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shardscope::viewer
