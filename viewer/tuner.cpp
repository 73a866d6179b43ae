#include "viewer/tuner.h"

#include <fmt/core.h>

#include <filesystem>
#include <utility>

#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/output_files.h"
#include "sim/engine/simulator.h"
#include "viewer/predict_adapter.h"

namespace shardscope::viewer {

TuningKnobs KnobsFromScenario(const Scenario& scenario, const nlohmann::json& doc) {
  TuningKnobs k;
  k.forward_prefetch_depth = scenario.fsdp.forward_prefetch_depth;
  k.backward_prefetch_depth = scenario.fsdp.backward_prefetch_depth;
  k.reshard_after_forward = scenario.fsdp.reshard_after_forward;
  k.reshard_after_forward_ranks = scenario.fsdp.reshard_after_forward_ranks;
  k.local_batch = scenario.training.local_batch;
  k.activation_checkpoint = ActivationCheckpointName(scenario.training.activation_checkpoint);
  k.dp_shard = scenario.parallelism.dp_shard;
  const auto p = doc.find("parallelism");
  if (p != doc.end() && p->is_object() && p->contains("dp_shard") && (*p)["dp_shard"] == -1) {
    k.dp_shard = -1;
  }
  k.dp_replicate = scenario.parallelism.dp_replicate;
  k.tp = scenario.parallelism.tp;
  k.pp = scenario.parallelism.pp;
  k.nodes = scenario.cluster.nodes;
  k.gpus_per_node = scenario.cluster.gpus_per_node;
  k.gpu = scenario.cluster.gpu;
  return k;
}

std::vector<std::string> KnobOverrides(const TuningKnobs& k) {
  // The int form only means something with resharding on; unchecking the box writes `false`.
  const std::string reshard = k.reshard_after_forward && k.reshard_after_forward_ranks > 0
                                  ? std::to_string(k.reshard_after_forward_ranks)
                                  : (k.reshard_after_forward ? "true" : "false");
  return {
      fmt::format("fsdp.forward_prefetch_depth={}", k.forward_prefetch_depth),
      fmt::format("fsdp.backward_prefetch_depth={}", k.backward_prefetch_depth),
      "fsdp.reshard_after_forward=" + reshard,
      fmt::format("training.local_batch={}", k.local_batch),
      fmt::format("training.activation_checkpoint={}",
                  nlohmann::json(k.activation_checkpoint).dump()),
      fmt::format("parallelism.dp_shard={}", k.dp_shard),
      fmt::format("parallelism.dp_replicate={}", k.dp_replicate),
      fmt::format("parallelism.tp={}", k.tp),
      fmt::format("parallelism.pp={}", k.pp),
      fmt::format("cluster.nodes={}", k.nodes),
      fmt::format("cluster.gpus_per_node={}", k.gpus_per_node),
      fmt::format("cluster.gpu={}", nlohmann::json(k.gpu).dump()),
  };
}

Tuner::Tuner(nlohmann::json doc, std::string source, std::string base_dir)
    : doc_(std::move(doc)), source_(std::move(source)), base_dir_(std::move(base_dir)) {
  worker_ = std::thread([this] { Loop(); });
}

Tuner::~Tuner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

uint64_t Tuner::Request(const TuningKnobs& knobs) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t gen = next_generation_++;
  pending_ = std::make_pair(knobs, gen);
  cv_.notify_all();
  return gen;
}

std::optional<Prediction> Tuner::TakeResult() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<Prediction> out = std::move(done_);
  done_.reset();
  return out;
}

bool Tuner::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_ || pending_.has_value();
}

bool Tuner::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return !running_ && !pending_; });
}

Prediction Tuner::Predict(const TuningKnobs& knobs, uint64_t generation) const {
  const auto t0 = std::chrono::steady_clock::now();
  Prediction p;
  p.generation = generation;
  p.knobs = knobs;
  Result<Scenario> scenario = ParseScenario(doc_, source_, base_dir_, KnobOverrides(knobs));
  if (!scenario.ok()) {
    p.status = scenario.status();
  } else {
    Result<sim::Simulation> sim = sim::SimulateScenario(*scenario);
    if (!sim.ok()) {
      p.status = sim.status();
    } else {
      p.view = std::make_shared<const TraceView>(MakeTraceView(PredictedTrace(*sim), "predicted"));
    }
  }
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

void Tuner::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || pending_.has_value(); });
    if (stop_) return;
    auto [knobs, gen] = *pending_;
    pending_.reset();
    running_ = true;
    lock.unlock();
    Prediction p = Predict(knobs, gen);
    lock.lock();
    running_ = false;
    done_ = std::move(p);
    cv_.notify_all();
  }
}

Status Tuner::WriteScenario(const std::string& path, const TuningKnobs& knobs) const {
  nlohmann::json doc = doc_;
  for (const std::string& o : KnobOverrides(knobs)) SS_RETURN_IF_ERROR(ApplyOverride(doc, o));
  // The file may land in another folder: relative paths it names resolve against the original's.
  auto absolute = [this](nlohmann::json& v) {
    if (!v.is_string()) return;
    const std::filesystem::path p(v.get<std::string>());
    if (p.is_relative() && std::filesystem::exists(std::filesystem::path(base_dir_) / p)) {
      v = (std::filesystem::path(base_dir_) / p).lexically_normal().string();
    }
  };
  if (doc.contains("cluster") && doc["cluster"].contains("cost_model")) {
    absolute(doc["cluster"]["cost_model"]);
  }
  if (doc.contains("model")) absolute(doc["model"]);
  return WriteFileAtomic(path, DumpJson(doc, 2) + "\n");
}

}  // namespace shardscope::viewer
