// A scenario of tests/backend/scenarios as the executor runs it: the rank's schedule, its
// plan, the pricing, a host device and emulated communicators (the shared set-up of the
// executor tests).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/backends.h"
#include "backend/exec/executor.h"
#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_options.h"
#include "sim/engine/simulator.h"

namespace shardscope::backend::testing {

inline std::string ScenarioPath(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/backend/scenarios/" + name;
}

struct Job {
  Scenario scenario;
  ModelTree tree;
  Plan plan;
  Schedule schedule;
  sim::ScenarioPricing pricing;
  std::unique_ptr<Device> device;
  std::vector<std::unique_ptr<Communicator>> comms;
};

// The schedule of `rank` of the scenario's world, on a host device with `limit` bytes
// (0: the scenario GPU's usable memory), with emulated communicators.
inline std::unique_ptr<Job> LoadJob(const std::string& name, int rank, int64_t limit = 0) {
  auto job = std::make_unique<Job>();
  job->scenario = LoadScenario(ScenarioPath(name), {}).value();
  ModelBuildOptions build;
  job->tree = LoadModel(job->scenario.model, build).value();
  job->plan = PlanScenario(job->scenario, job->tree).value();
  ScheduleOptions so = ScheduleOptionsFromScenario(job->scenario);
  so.rank = rank;
  job->schedule = BuildSchedule(job->tree, job->plan, so).value();
  job->pricing = sim::PriceScenario(job->scenario, job->tree).value();
  DeviceOptions d;
  d.memory_limit_bytes = limit > 0 ? limit : job->pricing.ctx.usable_bytes;
  job->device = MakeHostDevice(d).value();
  EmulationOptions e;
  e.world_size = job->scenario.cluster.world_size();
  e.rank = rank;
  e.gpus_per_node = job->scenario.cluster.gpus_per_node;
  e.cost = job->pricing.cost.get();
  job->comms =
      MakeEmulatedCommFactory(e)->MakeCommunicators(job->schedule.groups, *job->device).value();
  return job;
}

inline StepRun RunJob(Job& job, ExecOptions options = {}) {
  Result<StepRun> run = RunSchedule(job.schedule, job.plan, *job.device, job.comms, options);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return std::move(run).value();
}

}  // namespace shardscope::backend::testing
