#include "tools/shardscope/sweep_ranks.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "backend/launch.h"
#if defined(SHARDSCOPE_HAVE_MPI)
#include "backend/comm/mpi_roll_call.h"  // MpiWorld holds one
#include "backend/comm/mpi_world.h"
#include "core/util/json_guard.h"
#endif

namespace shardscope::cli {
namespace {

// JSON has no infinity or NaN: those travel as strings, so every double comes back as it was.
nlohmann::json Number(double x) {
  if (std::isfinite(x)) return x;
  return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
}
double NumberFrom(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.get<std::string>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  return s == "inf" ? HUGE_VAL : -HUGE_VAL;
}
nlohmann::json Optional(const std::optional<double>& v) {
  return v ? Number(*v) : nlohmann::json();
}
std::optional<double> OptionalFrom(const nlohmann::json& j) {
  return j.is_null() ? std::nullopt : std::optional<double>(NumberFrom(j));
}

#if defined(SHARDSCOPE_HAVE_MPI)
// Every rank's `text`, in rank order (two all-gathers: the lengths, then the padded texts).
Result<std::vector<std::string>> GatherTexts(const backend::MpiWorld& world,
                                             const std::string& text) {
  const int64_t length = static_cast<int64_t>(text.size());
  SS_ASSIGN_OR_RETURN(std::vector<char> lengths, world.AllGatherBytes(&length, sizeof(length)));
  int64_t longest = 0;
  std::vector<int64_t> sizes(world.size());
  for (int r = 0; r < world.size(); ++r) {
    std::memcpy(&sizes[r], lengths.data() + r * sizeof(int64_t), sizeof(int64_t));
    longest = std::max(longest, sizes[r]);
  }
  std::string padded = text;
  padded.resize(static_cast<size_t>(std::max<int64_t>(longest, 1)), ' ');
  SS_ASSIGN_OR_RETURN(std::vector<char> all,
                      world.AllGatherBytes(padded.data(), static_cast<int64_t>(padded.size())));
  std::vector<std::string> out;
  for (int r = 0; r < world.size(); ++r) {
    out.emplace_back(all.data() + r * padded.size(), static_cast<size_t>(sizes[r]));
  }
  return out;
}
#endif

}  // namespace

nlohmann::json VariantToJson(const sim::VariantResult& v) {
  const sim::VariantFigures& f = v.figures;
  return {{"sets", v.sets},
          {"outcome", static_cast<int>(v.outcome)},
          {"reason", v.reason},
          {"message", v.message},
          {"gpu", f.gpu},
          {"world_size", f.world_size},
          {"figures",
           {Number(f.tokens_per_s_per_gpu), Number(f.step_time_s), Number(f.peak_reserved_gib),
            Number(f.usable_gib), Number(f.headroom_gib), Number(f.exposed_comm_s),
            Number(f.compute_s), Number(f.idle_s), Number(f.mfu), Number(f.s_per_mtok)}},
          {"usd_per_gpu_hour", Optional(f.usd_per_gpu_hour)},
          {"cost_per_mtok_usd", Optional(f.cost_per_mtok_usd)}};
}

sim::VariantResult VariantFromJson(const nlohmann::json& j) {
  sim::VariantResult v;
  v.sets = j["sets"].get<std::vector<std::string>>();
  v.outcome = static_cast<sim::VariantOutcome>(j["outcome"].get<int>());
  v.reason = j["reason"].get<std::string>();
  v.message = j["message"].get<std::string>();
  sim::VariantFigures& f = v.figures;
  f.gpu = j["gpu"].get<std::string>();
  f.world_size = j["world_size"].get<int>();
  const nlohmann::json& x = j["figures"];
  double* fields[] = {&f.tokens_per_s_per_gpu,
                      &f.step_time_s,
                      &f.peak_reserved_gib,
                      &f.usable_gib,
                      &f.headroom_gib,
                      &f.exposed_comm_s,
                      &f.compute_s,
                      &f.idle_s,
                      &f.mfu,
                      &f.s_per_mtok};
  for (size_t i = 0; i < std::size(fields); ++i) *fields[i] = NumberFrom(x[i]);
  f.usd_per_gpu_hour = OptionalFrom(j["usd_per_gpu_hour"]);
  f.cost_per_mtok_usd = OptionalFrom(j["cost_per_mtok_usd"]);
  return v;
}

struct SweepRanks::World {
#if defined(SHARDSCOPE_HAVE_MPI)
  std::unique_ptr<backend::MpiWorld> mpi;
#endif
};

SweepRanks::~SweepRanks() = default;

Result<std::unique_ptr<SweepRanks>> SweepRanks::Start() {
  std::unique_ptr<SweepRanks> ranks(new SweepRanks());
  // The launcher's numbering (MpiWorld::Init checks that MPI's agrees). A build without MPI
  // sweeps whole in every process, rank 0 alone showing progress.
  const backend::LaunchInfo launch = backend::DetectLaunch();
  ranks->rank_ = launch.world_rank;
  ranks->size_ = launch.world_size;
#if defined(SHARDSCOPE_HAVE_MPI)
  if (launch.launched() && launch.world_size > 1) {
    ranks->world_ = std::make_unique<World>();
    SS_ASSIGN_OR_RETURN(ranks->world_->mpi, backend::MpiWorld::Init(launch));
  }
#endif
  return ranks;
}

Status SweepRanks::Agree(Status status) const {
#if defined(SHARDSCOPE_HAVE_MPI)
  if (world_ == nullptr) return status;
  // Each rank's error as "<exit code> <message>"; "" where it has none.
  const std::string mine =
      status.ok() ? std::string() : fmt::format("{} {}", status.exit_code(), status.message());
  Result<std::vector<std::string>> all = GatherTexts(*world_->mpi, mine);
  if (!all.ok()) return status.ok() ? all.status() : status;  // each rank says its own
  const std::vector<std::string>& texts = *all;
  int said = -1;  // the rank whose error rank 0 says: its own, else the first that has one
  for (int r = 0; r < size_ && said < 0; ++r) {
    if (!texts[static_cast<size_t>(r)].empty()) said = r;
  }
  if (said < 0) return Status::Ok();
  const std::string& said_text = texts[static_cast<size_t>(said)];
  const auto where = [this](int r) { return fmt::format("rank {} of {}", r, size_); };
  // The error rank 0 says, for a rank that has none of its own (or the same).
  const auto said_status = [&] {
    return Status(static_cast<ErrorCode>(said_text[0] - '0'), said_text.substr(2));
  };
  if (rank_ == 0) return status.ok() ? said_status().WithContext(where(said)) : status;
  // An error rank 0 does not say: this rank says it.
  if (!status.ok() && mine != said_text) return status.WithContext(where(rank_));
  // Fine here, or the error rank 0 says: this rank ends with it, silently.
  return (status.ok() ? said_status() : std::move(status)).SaidElsewhere();
#else
  return status;
#endif
}

Result<sim::SweepResult> SweepRanks::Sweep(const sim::SweepBase& base,
                                           const std::vector<sim::VaryAxis>& axes,
                                           const sim::SweepOptions& options, bool* print) const {
  *print = true;
#if defined(SHARDSCOPE_HAVE_MPI)
  if (world_ != nullptr) {
    const backend::MpiWorld* world = world_->mpi.get();
    const int n = world->size();
    const int rank = world->rank();
    SS_ASSIGN_OR_RETURN(const int64_t count, sim::CombinationCount(axes));
    // Variants that share schedules stay on one rank (a GPU comparison keeps its sharing).
    const std::vector<int> part_of = sim::DealCombinations(axes, count, n, options.share_schedules);
    std::vector<std::vector<std::string>> mine;
    for (int64_t i = 0; i < count; ++i) {
      if (part_of[static_cast<size_t>(i)] == rank) mine.push_back(sim::CombinationSets(axes, i));
    }
    fmt::print(stderr, "sweep: rank {} of {} simulates {} of the {} combinations\n", rank, n,
               mine.size(), count);
    sim::SweepOptions local = options;
    if (rank != 0) local.progress = nullptr;
    // An error still joins the gathers below, so no rank waits for one that left; then every
    // rank ends with it, said once (Agree).
    Result<sim::SweepResult> part = sim::RunVariants(base, std::move(mine), local);
    nlohmann::json sent = nlohmann::json::array();
    if (part.ok()) {
      for (const sim::VariantResult& v : part->variants) sent.push_back(VariantToJson(v));
    }
    SS_ASSIGN_OR_RETURN(std::vector<std::string> texts, GatherTexts(*world, DumpJson(sent)));
    SS_RETURN_IF_ERROR(Agree(part.ok() ? Status::Ok() : part.status()));
    *print = rank == 0;
    if (rank != 0) return sim::SweepResult();
    std::vector<nlohmann::json> parts;
    for (const std::string& t : texts) parts.push_back(nlohmann::json::parse(t));
    sim::SweepResult result = std::move(*part);
    result.variants.assign(static_cast<size_t>(count), sim::VariantResult());
    // Each rank's results in the order it took its combinations: ascending, as dealt.
    std::vector<size_t> next(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < count; ++i) {
      const int r = part_of[static_cast<size_t>(i)];
      const nlohmann::json& sent_back = parts[static_cast<size_t>(r)];
      if (next[r] >= sent_back.size()) {
        return RuntimeError(fmt::format("sweep: rank {} sent {} results, fewer than it was dealt",
                                        r, sent_back.size()));
      }
      result.variants[static_cast<size_t>(i)] = VariantFromJson(sent_back[next[r]++]);
    }
    sim::FinishSweep(options.objective, &result);
    return result;
  }
#endif
  return sim::RunSweep(base, axes, options);
}

}  // namespace shardscope::cli
