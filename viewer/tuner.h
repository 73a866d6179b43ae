// The tuning panel's model: the knobs, the scenario they rewrite, and a background worker that
// re-plans and re-simulates after each change so the UI thread never waits for a prediction.
//
// Contents:
//   TuningKnobs        the knobs the panel shows (prefetch depths, reshard, batch, AC, mesh, GPU)
//   KnobsFromScenario  the knobs of a loaded scenario
//   KnobOverrides      knobs → `path=value` overrides (ApplyOverride's syntax)
//   Prediction         one finished request: a TraceView, or the planner's/simulator's message
//   Tuner              owns the worker thread; Request / TakeResult / WaitIdle / WriteScenario
//
// Requests coalesce: while one runs, only the newest pending one is kept.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/config/scenario.h"
#include "core/util/status.h"
#include "viewer/trace_view.h"

namespace shardscope::viewer {

struct TuningKnobs {
  int forward_prefetch_depth = 1;
  int backward_prefetch_depth = 1;
  bool reshard_after_forward = true;
  // FSDP2's int form: with reshard_after_forward, keep a 1/d slice over d ranks (d divides the
  // shard group; the planner checks). 0: the boolean form.
  int reshard_after_forward_ranks = 0;
  int64_t local_batch = 1;
  std::string activation_checkpoint = "selective_op";  // ParseActivationCheckpoint's syntax
  int dp_shard = -1;                                   // -1: fill the world
  int dp_replicate = 1;
  int tp = 1;
  int pp = 1;
  int nodes = 1;
  int gpus_per_node = 8;
  std::string gpu = "h100-sxm";
  bool operator==(const TuningKnobs&) const = default;
};

// `doc` is the scenario file as written: a dp_shard of -1 there stays -1 (fill).
TuningKnobs KnobsFromScenario(const Scenario& scenario, const nlohmann::json& doc);
std::vector<std::string> KnobOverrides(const TuningKnobs& knobs);

struct Prediction {
  uint64_t generation = 0;  // the request's number (1, 2, ...)
  TuningKnobs knobs;
  Status status;                          // the planner's or simulator's message when it failed
  std::shared_ptr<const TraceView> view;  // set when status is ok
  double seconds = 0;                     // re-plan + simulate + view build
};

class Tuner {
 public:
  // `doc`: the scenario document; `source` and `base_dir` as ParseScenario takes them.
  Tuner(nlohmann::json doc, std::string source, std::string base_dir);
  ~Tuner();
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  // Schedules a prediction for `knobs`; returns its generation.
  uint64_t Request(const TuningKnobs& knobs);
  // The newest finished prediction not yet taken.
  std::optional<Prediction> TakeResult();
  // True while a request is pending or running.
  bool busy() const;
  // Waits until no request is pending or running; false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout);
  // Writes the scenario document with `knobs` applied to `path` (atomically).
  Status WriteScenario(const std::string& path, const TuningKnobs& knobs) const;
  // Runs one prediction on the calling thread (the worker's body).
  Prediction Predict(const TuningKnobs& knobs, uint64_t generation) const;

 private:
  void Loop();

  const nlohmann::json doc_;
  const std::string source_, base_dir_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::pair<TuningKnobs, uint64_t>> pending_;
  std::optional<Prediction> done_;
  bool running_ = false;
  bool stop_ = false;
  uint64_t next_generation_ = 1;
  std::thread worker_;
};

}  // namespace shardscope::viewer
