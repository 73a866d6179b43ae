// Host overhead of the executor per operation issued (target <= 10 us): the issue loop of
// backend/exec/executor.h — topological order, events, waits, memory effects through the
// caching allocator, kernel argument building, emulated collectives — on
//   - a device that only counts (every kernel and event completes at once, segments are
//     address ranges never touched), over one rank of Llama 3 8B on 8 GPUs and of 70B on 64:
//     the executor's own cost, what a GPU run adds to each kernel launch;
//   - the host device over the tiny Llama of tests/backend (a real CPU step, lanes as threads).
// The counter `issue_us_per_op` is the figure; `ops` how many were issued per step.
//
// Run: build/bench/backend_benchmark --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <atomic>
#include <string>

#include "backend/backends.h"
#include "backend/exec/executor.h"
#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_options.h"
#include "sim/engine/simulator.h"

namespace shardscope::backend {
namespace {

// Events are done when recorded; kernels enqueue nothing; memory is bookkeeping only.
class CountingDevice final : public Device {
 public:
  CountingDevice() : Device(0) {}
  ~CountingDevice() override { ReleaseAllMemory(); }
  DeviceDescription Describe() const override {
    return {DeviceKind::kCpu, "counting", 0, 0, 0, {}};
  }
  struct Ev : DeviceEvent {
    int64_t ns = 0;
  };
  Result<std::shared_ptr<DeviceEvent>> Record(Lane) override {
    auto e = std::make_shared<Ev>();
    e->ns = ++clock_;
    return std::shared_ptr<DeviceEvent>(std::move(e));
  }
  Status Wait(Lane, const DeviceEvent&) override { return Status::Ok(); }
  bool Done(const DeviceEvent&) override { return true; }
  Result<int64_t> ElapsedNs(const DeviceEvent& a, const DeviceEvent& b) override {
    return static_cast<const Ev&>(b).ns - static_cast<const Ev&>(a).ns;
  }
  Status Synchronize(std::chrono::nanoseconds) override { return Status::Ok(); }
  Status HostTask(Lane, std::function<Status()>) override { return Status::Ok(); }
  Status Gemm(Lane, const GemmArgs&) override { return Status::Ok(); }
  Status AttentionForward(Lane, const AttentionArgs&) override { return Status::Ok(); }
  Status AttentionBackward(Lane, const AttentionArgs&) override { return Status::Ok(); }
  Status RmsNorm(Lane, const NormArgs&) override { return Status::Ok(); }
  Status Eltwise(Lane, const EltwiseArgs&) override { return Status::Ok(); }
  Status Cast(Lane, const CastArgs&) override { return Status::Ok(); }
  Status FsdpCopy(Lane, const FsdpCopyArgs&) override { return Status::Ok(); }
  Status AdamW(Lane, const AdamWArgs&) override { return Status::Ok(); }
  Status Fill(Lane, const FillArgs&) override { return Status::Ok(); }
  Status Memcpy(Lane, void*, const void*, int64_t) override { return Status::Ok(); }
  Status Memset(Lane, void*, int, int64_t) override { return Status::Ok(); }
  Status Hold(Lane, const HoldArgs&) override { return Status::Ok(); }

 protected:
  // Address ranges only: no kernel of this device ever touches them.
  void* RawAllocate(int64_t bytes, bool) override {
    const uintptr_t p = next_;
    next_ += static_cast<uintptr_t>(bytes + 4096);
    return reinterpret_cast<void*>(p);
  }
  void RawFree(void*, bool) override {}

 private:
  int64_t clock_ = 0;
  uintptr_t next_ = uintptr_t{1} << 40;
};

struct Job {
  Scenario sc;
  ModelTree tree;
  Plan plan;
  Schedule schedule;
  sim::ScenarioPricing pricing;
};

Job Load(nlohmann::json doc, const std::string& source) {
  Job j;
  j.sc = ParseScenario(std::move(doc), source, SHARDSCOPE_BENCH_DIR, {}).value();
  j.tree = LoadModel(j.sc.model, ModelBuildOptions{}).value();
  j.plan = PlanScenario(j.sc, j.tree).value();
  ScheduleOptions so = ScheduleOptionsFromScenario(j.sc);
  so.rank = 0;
  j.schedule = BuildSchedule(j.tree, j.plan, so).value();
  j.pricing = sim::PriceScenario(j.sc, j.tree).value();
  return j;
}

nlohmann::json Llama(const char* model, int nodes) {
  return {{"model", model},
          {"cluster", {{"gpu", "h100-sxm"}, {"nodes", nodes}, {"gpus_per_node", 8}}},
          {"training",
           {{"local_batch", 1}, {"seq_len", 8192}, {"activation_checkpoint", "selective_op:2"}}}};
}

void Issue(benchmark::State& state, Job& job, Device& device) {
  EmulationOptions e;
  e.world_size = job.sc.cluster.world_size();
  e.gpus_per_node = job.sc.cluster.gpus_per_node;
  e.cost = job.pricing.cost.get();
  auto comms = MakeEmulatedCommFactory(e)->MakeCommunicators(job.schedule.groups, device).value();
  double total_ns = 0;
  int64_t runs = 0;
  for (auto _ : state) {
    StepRun run = RunSchedule(job.schedule, job.plan, device, comms, ExecOptions{}).value();
    if (!run.failure.ok()) {
      state.SkipWithError(run.failure.message().c_str());
      return;
    }
    total_ns += static_cast<double>(run.issue_ns_per_op);
    ++runs;
  }
  state.counters["issue_us_per_op"] = runs > 0 ? total_ns / runs / 1e3 : 0;
  state.counters["ops"] = static_cast<double>(job.schedule.ops.size());
}

void BM_IssueCountingDevice_Llama3_8B_8Gpus(benchmark::State& state) {
  static Job job = Load(Llama("llama3-8b", 1), "<bench 8b>");
  CountingDevice device;
  Issue(state, job, device);
}
BENCHMARK(BM_IssueCountingDevice_Llama3_8B_8Gpus)->Unit(benchmark::kMillisecond);

void BM_IssueCountingDevice_Llama3_70B_64Gpus(benchmark::State& state) {
  static Job job = Load(Llama("llama3-70b", 8), "<bench 70b>");
  CountingDevice device;
  Issue(state, job, device);
}
BENCHMARK(BM_IssueCountingDevice_Llama3_70B_64Gpus)->Unit(benchmark::kMillisecond);

void BM_HostDevice_TinyLlama_8Gpus(benchmark::State& state) {
  nlohmann::json doc = {
      {"model",
       {{"hf_config", std::string(SHARDSCOPE_BENCH_DIR) +
                          "/../tests/backend/scenarios/tiny_llama.config.json"}}},
      {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 8}}},
      {"training",
       {{"local_batch", 2}, {"seq_len", 64}, {"activation_checkpoint", "selective_op"}}}};
  static Job job = Load(doc, "<bench tiny>");
  DeviceOptions o;
  std::unique_ptr<Device> device = MakeHostDevice(o).value();
  Issue(state, job, *device);
}
BENCHMARK(BM_HostDevice_TinyLlama_8Gpus)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardscope::backend

BENCHMARK_MAIN();
