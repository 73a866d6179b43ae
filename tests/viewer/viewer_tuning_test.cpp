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
