// `shardscope run SCENARIO [--device cpu|cuda] [--steps N] [--emulate-world N [--rank R]]
// [--trace FILE] [--summary FILE] [--timeout S] [--memory-limit GIB] [--set path=value ...]`:
// executes this rank's schedule of the plan for real (backend/exec/executor.h) and writes the
// measured trace and summary in the formats of the predicted ones (kind "measured"): the one
// MakeTrace and the summary the simulator and `stats` compute, so `diff` compares the two.
#include <fmt/core.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/backends.h"
#include "backend/check/step_check.h"
#include "backend/exec/executor.h"
#include "backend/exec/measured_output.h"
#include "core/config/scenario.h"
#include "core/model/model_source.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_options.h"
#include "core/trace/trace_io.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/output_files.h"
#include "core/util/units.h"
#include "sim/engine/simulator.h"
#include "tools/shardscope/command.h"
#include "tools/shardscope/scenario_files.h"

#ifndef SHARDSCOPE_VERSION
#define SHARDSCOPE_VERSION "dev"
#endif

namespace shardscope::cli {
namespace {

struct RunArgs {
  std::string scenario;
  std::string device;
  int steps = 1;
  int emulate_world = 0;
  int rank = -1;
  std::string trace;
  std::string summary;
  double timeout_s = 300;
  double memory_limit_gib = 0;
  std::vector<std::string> sets;
  bool check = false;  // verify the step's data (backend/check/step_check.h)
};

Result<std::unique_ptr<backend::Device>> MakeDevice(const std::string& kind,
                                                    const backend::DeviceOptions& options) {
  if (kind == "cpu") return backend::MakeHostDevice(options);
#if defined(SHARDSCOPE_HAVE_CUDA_DEVICE)
  Result<std::unique_ptr<backend::Device>> d = backend::MakeCudaDevice(options);
  if (!d.ok()) {
    return RuntimeError(
        fmt::format("--device cuda: {}; run on the CPU with --device cpu", d.status().message()));
  }
  return d;
#else
  (void)options;
  return RuntimeError(
      "--device cuda: this shardscope was built without the CUDA device; run on the CPU with "
      "--device cpu");
#endif
}

// Which world this process is a rank of, and who makes its communicators.
struct World {
  int size = 1;
  int rank = 0;
  int local_rank = 0;
  bool emulated = true;
  bool launched = false;  // one of several processes started by a launcher (MPI)
};

Result<World> ResolveWorld(const RunArgs& args, const Scenario& sc) {
  const int scenario_world = sc.cluster.world_size();
  const backend::LaunchInfo launch = backend::DetectLaunch();
  World w;
  w.local_rank = launch.local_rank;
  if (args.emulate_world > 0) {
    // Every process would run the same emulated rank and write the same files.
    if (launch.launched() && launch.world_size > 1) {
      return InvalidInput(fmt::format(
          "--emulate-world runs one rank alone, but {} started {} processes: launch one, or "
          "drop --emulate-world to run every rank",
          launch.launcher, launch.world_size));
    }
    if (args.emulate_world != scenario_world) {
      return InvalidInput(
          fmt::format("--emulate-world {}: the scenario {} runs on {} ranks (cluster.nodes x "
                      "cluster.gpus_per_node); set --emulate-world {} or change the cluster",
                      args.emulate_world, sc.source, scenario_world, scenario_world));
    }
    w.size = args.emulate_world;
    w.rank = args.rank < 0 ? 0 : args.rank;
    if (w.rank >= w.size) {
      return InvalidInput(
          fmt::format("--rank {}: the emulated world has ranks 0..{}", w.rank, w.size - 1));
    }
    return w;
  }
  if (args.rank >= 0) return InvalidInput("--rank needs --emulate-world N");
  if (launch.launched() && launch.world_size != scenario_world) {
    return InvalidInput(
        fmt::format("{} started {} ranks but the scenario {} runs on {} (cluster.nodes x "
                    "cluster.gpus_per_node); launch {} ranks or use --emulate-world {}",
                    launch.launcher, launch.world_size, sc.source, scenario_world, scenario_world,
                    scenario_world));
  }
  if (!launch.launched() && scenario_world > 1) {
    return InvalidInput(fmt::format(
        "the scenario {} runs on {} ranks: launch them with `mpirun -np {} shardscope run ...` "
        "(or srun), or run one of them with --emulate-world {} [--rank R]",
        sc.source, scenario_world, scenario_world, scenario_world));
  }
  w.size = scenario_world;
  w.rank = launch.world_rank;
  w.emulated = scenario_world == 1;
  w.launched = !w.emulated;
  return w;
}

Result<std::unique_ptr<backend::CommFactory>> MakeComms(const World& w, const std::string& device,
                                                        const CostModel& cost, int gpus_per_node,
                                                        std::chrono::nanoseconds timeout,
                                                        backend::Device& dev) {
  (void)device;
  (void)dev;
  (void)timeout;
  if (w.emulated) {
    backend::EmulationOptions e;
    e.world_size = w.size;
    e.rank = w.rank;
    e.gpus_per_node = gpus_per_node;
    e.cost = &cost;
    return backend::MakeEmulatedCommFactory(e);
  }
  backend::LaunchInfo launch = backend::DetectLaunch();
#if defined(SHARDSCOPE_HAVE_MPI)
  if (device == "cuda") {
#if defined(SHARDSCOPE_HAVE_NCCL_COMM)
    return backend::MakeNcclCommFactory(launch, dev);
#else
    return RuntimeError(
        "--device cuda under a launcher needs the NCCL communicators, which this build lacks; "
        "run the ranks with --device cpu");
#endif
  }
  backend::MpiCommOptions mpi;
  mpi.timeout = timeout;
  return backend::MakeMpiCommFactory(launch, mpi);
#else
  return RuntimeError(
      fmt::format("{} started rank {} of {}, but this shardscope was built without MPI (install "
                  "libopenmpi-dev and rebuild), or run one rank with --emulate-world {}",
                  launch.launcher, launch.world_rank, launch.world_size, w.size));
#endif
}

// 90% of this host's physical memory over the `ranks` that share it (0 when unknown): the
// rest is the process's own and the system's.
int64_t HostMemoryShare(int ranks) {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0 || ranks < 1) return 0;
  return static_cast<int64_t>(0.9 * static_cast<double>(pages) * static_cast<double>(page)) / ranks;
}

// What every rank must agree on (CommFactory::CheckSameInputs): the resolved scenario and the
// flags that change the step. File paths count by name only: nodes may mount the same files
// under different folders.
std::string InputsDigest(const Scenario& sc, const RunArgs& args, const std::string& device) {
  nlohmann::json r = sc.resolved;
  auto by_name = [](nlohmann::json& v) {
    if (v.is_string()) v = std::filesystem::path(v.get<std::string>()).filename().string();
  };
  if (r.contains("model") && r["model"].is_object()) {
    for (const char* key : {"hf_config", "module_tree"}) {
      if (r["model"].contains(key)) by_name(r["model"][key]);
    }
  }
  if (r.contains("cluster") && r["cluster"].is_object() && r["cluster"].contains("cost_model")) {
    by_name(r["cluster"]["cost_model"]);
  }
  return fmt::format("{}\n{} {} {} {}", r.dump(), args.steps, args.check, args.timeout_s, device);
}

// The file this rank writes for `path`: every "{rank}" replaced by the rank (runs/{rank}/
// o{rank}.json); a launched world's ranks other than 0 write none without it ("" then), so they
// never overwrite each other.
std::string RankPath(const std::string& path, const World& w) {
  if (path.empty()) return path;
  constexpr std::string_view kRank = "{rank}";
  if (path.find(kRank) == std::string::npos) {
    return w.launched && w.rank != 0 ? std::string() : path;
  }
  std::string out;
  size_t from = 0;
  for (size_t at = path.find(kRank); at != std::string::npos; at = path.find(kRank, from)) {
    out += path.substr(from, at - from) + std::to_string(w.rank);
    from = at + kRank.size();
  }
  return out + path.substr(from);
}

void PrintRun(const sim::Summary& s, const backend::StepRun& run,
              const backend::DeviceDescription& d, const World& w) {
  fmt::print("Measured step {} of {}: rank {} of {}{} on {} ({})\n", run.steps_run, run.steps_run,
             w.rank, w.size, w.emulated && w.size > 1 ? " (emulated world)" : "", d.name,
             backend::DeviceKindName(d.kind));
  fmt::print("  step time          {:10.4f} s\n", s.step_time_s);
  if (run.step_ns_each.size() > 2) {
    fmt::print("  steady step time   {:10.4f} s (median of steps 2-{})\n",
               static_cast<double>(backend::SteadyStepNs(run)) / 1e9, run.step_ns_each.size());
  }
  fmt::print("  tokens/s/GPU       {:10.0f}\n", s.tokens_per_s_per_gpu);
  fmt::print("  compute            {:10.4f} s   exposed comm {:.4f} s   overlap {:.1f}%\n",
             s.compute_s, s.exposed_comm_s, 100.0 * s.overlap_ratio);
  fmt::print("  peak allocated     {:10.2f} GiB ({}); peak reserved {:.2f} GiB (allocator)\n",
             s.peak_memory_allocated_gib, s.peak_memory_op, s.peak_memory_reserved_gib);
  fmt::print("  host issue         {:10.2f} us per op; kernel workspace {:.3f} GiB\n",
             static_cast<double>(run.issue_ns_per_op) / 1e3, ToGiB(run.workspace_bytes));
}

Status Run(const RunArgs& args) {
  SS_ASSIGN_OR_RETURN(Scenario sc, LoadScenario(args.scenario, args.sets));
  std::string device_kind = args.device;
#if defined(SHARDSCOPE_HAVE_CUDA_DEVICE)
  if (device_kind.empty()) device_kind = "cuda";
#else
  if (device_kind.empty()) device_kind = "cpu";
#endif
  SS_ASSIGN_OR_RETURN(World world, ResolveWorld(args, sc));
  // Launched ranks: "{rank}" in a path names each rank's file; without it rank 0 writes. The
  // outputs are checked before the step runs and written together after it.
  const std::string summary_path = RankPath(args.summary, world);
  const std::string trace_path = RankPath(args.trace, world);
  SS_RETURN_IF_ERROR(CheckOutputs({{"--summary", summary_path}, {"--trace", trace_path}},
                                  ScenarioFiles(sc, args.scenario)));
  // Every rank checks every rank's files: `--trace o{rank}.json --summary o1.json` has rank 1's
  // trace and rank 0's summary in one file, which no rank alone sees.
  if (world.launched) {
    std::vector<NamedPath> all;
    for (int r = 0; r < world.size; ++r) {
      World other = world;
      other.rank = r;
      all.push_back({fmt::format("--summary (rank {})", r), RankPath(args.summary, other)});
      all.push_back({fmt::format("--trace (rank {})", r), RankPath(args.trace, other)});
    }
    SS_RETURN_IF_ERROR(CheckDistinctFiles(all, {}));
  }
  if (args.check && world.emulated && world.size > 1) {
    return InvalidInput(fmt::format(
        "--check verifies what the ranks exchange, so it needs all {} of them: launch them with "
        "`mpirun -np {} shardscope run ... --check` (or srun), not --emulate-world",
        world.size, world.size));
  }

  SS_ASSIGN_OR_RETURN(ModelTree tree, LoadScenarioModel(sc));
  SS_ASSIGN_OR_RETURN(Plan plan, PlanScenario(sc, tree));
  ScheduleOptions so = ScheduleOptionsFromScenario(sc);
  so.rank = world.rank;
  SS_ASSIGN_OR_RETURN(Schedule schedule, BuildSchedule(tree, plan, so));
  SS_ASSIGN_OR_RETURN(sim::ScenarioPricing pricing, sim::PriceScenario(sc, tree));

  backend::DeviceOptions dopt;
  dopt.local_rank = world.local_rank;
  // The host stands for one GPU of the scenario: its usable memory is the capacity, but no more
  // than this host's share for the rank. A GPU's 78 GiB on a 24 GiB machine left the kernel's
  // OOM killer to end the run; at the share, the allocator refuses with exit 3 naming the op.
  dopt.memory_limit_bytes = args.memory_limit_gib > 0
                                ? GiBToBytes(args.memory_limit_gib)
                                : (device_kind == "cpu" ? pricing.ctx.usable_bytes : 0);
  if (args.memory_limit_gib <= 0 && device_kind == "cpu") {
    const int64_t share = HostMemoryShare(world.launched ? backend::DetectLaunch().local_size : 1);
    if (share > 0 && share < dopt.memory_limit_bytes) {
      // Said once per host (its first rank): every rank of the host has the same share.
      if (!world.launched || world.local_rank == 0) {
        fmt::print(
            "note: the device may reserve {:.2f} GiB, this host's memory over its ranks, not the "
            "{:.2f} GiB the scenario's GPU offers (--memory-limit sets it)\n",
            ToGiB(share), ToGiB(dopt.memory_limit_bytes));
      }
      dopt.memory_limit_bytes = share;
    }
  }
  // The measured summary's usable memory and fit are the run's: the device's limit where one
  // is set (they were the scenario GPU's, 15.5 GiB, on a run limited to 5.3).
  if (dopt.memory_limit_bytes > 0) pricing.ctx.usable_bytes = dopt.memory_limit_bytes;
  dopt.allocator = pricing.ctx.allocator;
  if (device_kind == "cuda" && dopt.allocator.expandable_segments) {
    return InvalidInput(fmt::format(
        "{}: training.expandable_segments: the CUDA device does not map memory on demand "
        "(cuMemMap) yet; set it to false to run on GPUs, or run on the CPU with --device cpu",
        sc.source));
  }
  SS_ASSIGN_OR_RETURN(std::unique_ptr<backend::Device> device, MakeDevice(device_kind, dopt));
  const auto timeout = std::chrono::nanoseconds(static_cast<int64_t>(args.timeout_s * 1e9));
  SS_ASSIGN_OR_RETURN(
      std::unique_ptr<backend::CommFactory> factory,
      MakeComms(world, device_kind, *pricing.cost, sc.cluster.gpus_per_node, timeout, *device));
  SS_ASSIGN_OR_RETURN(const std::string run_id,
                      factory->CheckSameInputs(InputsDigest(sc, args, device_kind)));
  SS_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<backend::Communicator>> comms,
                      factory->MakeCommunicators(schedule.groups, *device));

  backend::ExecOptions eo;
  eo.steps = args.steps;
  eo.timeout = timeout;
  std::unique_ptr<backend::StepChecker> checker;
  if (args.check) {
    checker = std::make_unique<backend::StepChecker>(schedule, plan, eo);
    eo.observer = checker.get();
  }
  Result<backend::StepRun> ran = backend::RunSchedule(schedule, plan, *device, comms, eo);
  if (!ran.ok()) {
    factory->Abandon();
    return ran.status();
  }
  backend::StepRun run = std::move(ran).value();
  // An error of this rank's own: the outputs below are written, then it leaves without
  // waiting for the others at the end (CommFactory::Abandon).
  if (!run.failure.ok()) factory->Abandon();
  // Verified before the schedule moves on (the checker refers to it); every rank its own.
  Status checked;
  if (checker != nullptr && run.failure.ok()) {
    backend::CheckReport report;
    checked = checker->Verify(&report);
    fmt::print("{}\n", report.Text(world.rank));
  }

  backend::MeasuredContext mc;
  mc.tool_version = std::string("shardscope ") + SHARDSCOPE_VERSION;
  mc.run_id = run_id;
  mc.scenario = sc.resolved;
  mc.scenario_gpu = sc.cluster.gpu;
  mc.gpus_per_node = sc.cluster.gpus_per_node;
  mc.pricing = &pricing;
  mc.device = device->Describe();
  mc.world_size = world.size;
  mc.rank = world.rank;
  mc.communicators = factory->name();
  mc.versions = mc.device.versions;
  for (const auto& [k, v] : factory->versions()) mc.versions[k] = v;
  SS_ASSIGN_OR_RETURN(backend::MeasuredOutput out, backend::MakeMeasuredOutput(schedule, run, mc));
  const Trace& trace = out.trace;
  nlohmann::json& summary_json = out.summary_json;
  if (run.failure.ok() && (!world.launched || world.rank == 0)) {
    PrintRun(out.summary, run, mc.device, world);
  }
  std::vector<std::pair<std::string, std::string>> files;
  if (!summary_path.empty()) files.emplace_back(summary_path, DumpJson(summary_json, 2) + "\n");
  if (!trace_path.empty()) files.emplace_back(trace_path, SerializeTrace(trace));
  SS_RETURN_IF_ERROR(WriteFilesAtomic(files));
  if (!summary_path.empty()) fmt::print("Summary written to {}\n", summary_path);
  if (!trace_path.empty()) {
    fmt::print("Trace written to {} ({} events{})\n", trace_path, trace.events.size(),
               run.failure.ok() ? "" : ", up to the failure");
  }
  if (!run.failure.ok()) return run.failure;
  return checked;
}

// Under a launcher every rank reports its own error, since whichever exits first makes the
// launcher end the others and a rank left silent could be the one that had it: each names its
// rank, as a launched sweep's ranks do (sweep_ranks.h), so that eight lines read as eight ranks'
// and a rank whose input differs (a file its node lacks) stands out.
Status NamingTheRank(Status status) {
  if (status.ok()) return status;
  const backend::LaunchInfo launch = backend::DetectLaunch();
  if (!launch.launched() || launch.world_size <= 1) return status;
  return status.WithContext(fmt::format("rank {} of {}", launch.world_rank, launch.world_size));
}

}  // namespace

void RegisterRunCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand(
      "run", "execute this rank's step of the plan on a GPU or the CPU and measure it");
  sub->add_option("scenario", args->scenario, "scenario JSON file")->required();
  sub->add_option("--device", args->device, "cuda (default when built with CUDA) or cpu")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--steps", args->steps, "steps to run; the last one is reported (default 1)")
      ->check(Positive());
  sub->add_option("--emulate-world", args->emulate_world,
                  "run one rank of an N-rank plan alone; collectives become local operations "
                  "held for their predicted time")
      ->check(Positive());
  sub->add_option("--rank", args->rank, "the rank --emulate-world runs (default 0)")
      ->check(NonNegative());
  sub->add_option("--trace", args->trace, "write the measured trace (Chrome trace JSON) here")
      ->check(NonEmptyText());
  sub->add_option("--summary", args->summary, "write the measured summary JSON here")
      ->check(NonEmptyText());
  sub->add_option("--timeout", args->timeout_s,
                  "seconds a collective (or the device at the step's end) may take to complete "
                  "once waited on before it is an error; not a limit on the whole step "
                  "(default 300)")
      ->check(NumberIn(0, 1e6));
  sub->add_option("--memory-limit", args->memory_limit_gib,
                  "GiB the device may reserve (default: the scenario GPU's usable memory, at most "
                  "this host's share, on the "
                  "CPU, the whole GPU on CUDA)")
      ->check(NumberIn(0, 1e6));
  sub->add_flag("--check", args->check,
                "after the step, verify every all-gather, reduction and optimizer update of this "
                "rank against the plan's references (exit 1 naming op, rank and element)");
  sub->add_option("--set", args->sets, "override a scenario field: path=value (repeatable)")
      ->allow_extra_args(false);
  registry.Add(sub, [args] { return NamingTheRank(Run(*args)); });
}

}  // namespace shardscope::cli
