#include "sim/engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <queue>
#include <string>

namespace shardscope::sim {
namespace {

struct Event {
  int64_t time_ns;
  uint64_t seq;
  int op;
  uint32_t version;
};

// Min-heap order on (time, sequence): ties resolve by insertion order, deterministically.
struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.seq > b.seq;
  }
};

// Compressed lists: items of bucket b are items[begin[b] .. begin[b+1]).
struct Buckets {
  std::vector<int> begin;
  std::vector<int> items;
};

Buckets MakeBuckets(int num_buckets, const std::vector<int>& bucket_of) {
  Buckets b;
  b.begin.assign(num_buckets + 1, 0);
  for (int k : bucket_of) {
    if (k >= 0) ++b.begin[k + 1];
  }
  for (int k = 0; k < num_buckets; ++k) b.begin[k + 1] += b.begin[k];
  b.items.resize(b.begin[num_buckets]);
  std::vector<int> fill(b.begin.begin(), b.begin.end() - 1);
  for (int i = 0; i < static_cast<int>(bucket_of.size()); ++i) {
    if (bucket_of[i] >= 0) b.items[fill[bucket_of[i]]++] = i;
  }
  return b;
}

class Engine {
 public:
  Engine(const Schedule& schedule, std::span<const int64_t> base_ns, const EngineOptions& options)
      : s_(schedule),
        base_ns_(base_ns),
        slowdown_(options.overlap_slowdown),
        contention_(options.contention),
        stretches_(options.contention != nullptr || options.overlap_slowdown != 1.0) {}

  Result<Timeline> Run() {
    SS_RETURN_IF_ERROR(Setup());
    for (int key = 0; key < num_lane_keys_; ++key) {
      if (lanes_.begin[key] < lanes_.begin[key + 1])
        worklist_.push_back(lanes_.items[lanes_.begin[key]]);
    }
    DrainWorklist(0);
    while (!heap_.empty()) {
      const Event e = heap_.top();
      heap_.pop();
      ++tl_.events_processed;
      if (e.version != version_[e.op]) continue;  // superseded by a re-rate
      End(e.op, e.time_ns);
      DrainWorklist(e.time_ns);
    }
    if (done_ < n_) return DeadlockError();
    for (int64_t t : tl_.role_end_ns) tl_.step_ns = std::max(tl_.step_ns, t);
    return std::move(tl_);
  }

 private:
  std::string Describe(int op) const {
    const ScheduleOp& o = s_.ops[op];
    return fmt::format("'{}' (op {}, role {}, lane {})", OpIdOf(s_, o), op, o.role,
                       static_cast<int>(o.lane));
  }

  // One pass over the (large) ScheduleOps validates them and gathers all the loop needs into
  // dense per-op arrays, so the event loop never touches a ScheduleOp again: on 10^5+ ops
  // memory traffic, not arithmetic, is what the engine's speed depends on.
  Status Setup() {
    n_ = static_cast<int>(s_.ops.size());
    if (static_cast<int>(base_ns_.size()) != n_) {
      return InvalidInput(
          fmt::format("engine: {} durations given for {} ops", base_ns_.size(), n_));
    }
    const int roles = static_cast<int>(s_.roles.size());
    const int groups = static_cast<int>(s_.groups.size());
    num_lane_keys_ = roles * kNumLanes;
    std::vector<int> lane_of(n_), group_of(n_, -1), dep_count(n_);
    // (role, group) communicator → dense id, by CommunicatorKey (< roles · groups).
    std::vector<int> group_ids(static_cast<size_t>(roles) * s_.groups.size(), -1);
    int num_group_ids = 0;
    role_.resize(n_);
    flags_.resize(n_);
    deps_.begin.assign(n_ + 1, 0);
    deps_.items.reserve(2 * static_cast<size_t>(n_));
    for (int i = 0; i < n_; ++i) {
      const ScheduleOp& o = s_.ops[i];
      SS_RETURN_IF_ERROR(Check(i, o, roles, groups));
      // The lane and communicator rules come from the contract in core/schedule/schedule.h.
      lane_of[i] = LaneKey(o);
      if (const int64_t key = CommunicatorKey(o, s_.groups.size()); key >= 0) {
        int& id = group_ids[static_cast<size_t>(key)];
        if (id < 0) id = num_group_ids++;
        group_of[i] = id;
      }
      const std::span<const int> deps = DepsOf(s_, o);
      dep_count[i] = static_cast<int>(deps.size());
      deps_.begin[i + 1] = deps_.begin[i] + dep_count[i];
      deps_.items.insert(deps_.items.end(), deps.begin(), deps.end());
      role_[i] = o.role;
      const bool collective = IsCollective(o.type);
      uint8_t f = 0;
      if (stretches_ && o.lane == Lane::kCompute && !collective && !o.on_host) f |= kStretchable;
      if (stretches_ && o.lane != Lane::kCompute && collective) f |= kSlowsCompute;
      // Rule 3 of the execution contract (schedule.h): one collective at a time per
      // communicator.
      if (SerializesOnCommunicator(o.type)) f |= kHoldsCommunicator;
      flags_[i] = f;
    }
    lanes_ = MakeBuckets(num_lane_keys_, lane_of);
    groups_ = MakeBuckets(num_group_ids, group_of);
    // Dependents in CSR form, built from the flattened deps lists.
    dependents_.begin.assign(n_ + 1, 0);
    for (int d : deps_.items) ++dependents_.begin[d + 1];
    for (int k = 0; k < n_; ++k) dependents_.begin[k + 1] += dependents_.begin[k];
    dependents_.items.resize(dependents_.begin[n_]);
    std::vector<int> fill(dependents_.begin.begin(), dependents_.begin.end() - 1);
    for (int i = 0; i < n_; ++i) {
      for (int k = deps_.begin[i]; k < deps_.begin[i + 1]; ++k)
        dependents_.items[fill[deps_.items[k]]++] = i;
    }
    lane_key_ = std::move(lane_of);
    group_key_ = std::move(group_of);
    deps_left_ = std::move(dep_count);
    lane_pos_.assign(lanes_.begin.begin(), lanes_.begin.end() - 1);
    group_pos_.assign(groups_.begin.begin(), groups_.begin.end() - 1);
    group_busy_.assign(group_pos_.size(), 0);
    lane_busy_.assign(num_lane_keys_, 0);
    version_.assign(n_, 0);
    remaining_.assign(n_, 0.0);
    last_update_ns_.assign(n_, 0);
    factor_.assign(n_, 1.0);
    running_compute_.assign(roles, -1);
    comm_running_.assign(roles, 0);
    comm_blocks_.assign(roles, 0);
    comm_hbm_gbps_.assign(roles, 0.0);
    tl_.ops.assign(n_, OpTiming{});
    tl_.log.reserve(2 * static_cast<size_t>(n_));
    tl_.role_end_ns.assign(roles, 0);
    worklist_.reserve(64);
    return Status::Ok();
  }

  // Indices and duration of op i in range.
  Status Check(int i, const ScheduleOp& o, int roles, int groups) const {
    if (o.role < 0 || o.role >= roles) {
      return InvalidInput(
          fmt::format("schedule: op {}: role {} out of range [0, {})", Describe(i), o.role, roles));
    }
    const int lane = static_cast<int>(o.lane);
    if (lane < 1 || lane > kNumLanes) {
      return InvalidInput(fmt::format("schedule: op {}: lane {} is not a known lane (1..{})",
                                      Describe(i), lane, kNumLanes));
    }
    if (o.group < -1 || o.group >= groups) {
      return InvalidInput(fmt::format("schedule: op {}: group {} out of range [0, {})", Describe(i),
                                      o.group, groups));
    }
    if (base_ns_[i] < 0) {
      return InvalidInput(
          fmt::format("schedule: op {}: negative duration {} ns", Describe(i), base_ns_[i]));
    }
    if (!OpListsInRange(s_, o)) {
      return InvalidInput(OpListsRangeError(s_, o, fmt::format("schedule: op {}", Describe(i))));
    }
    for (int d : DepsOf(s_, o)) {
      if (d < 0 || d >= n_) {
        return InvalidInput(
            fmt::format("schedule: op {}: dependency {} out of range [0, {})", Describe(i), d, n_));
      }
      if (d == i)
        return InvalidInput(fmt::format("schedule: op {} depends on itself", Describe(i)));
    }
    return Status::Ok();
  }

  // Per-op flags (Setup).
  static constexpr uint8_t kStretchable = 1;        // compute that overlap slows
  static constexpr uint8_t kSlowsCompute = 2;       // communication that slows compute
  static constexpr uint8_t kHoldsCommunicator = 4;  // rule 3: serializes on its communicator
  bool Stretchable(int op) const { return flags_[op] & kStretchable; }
  bool SlowsCompute(int op) const { return flags_[op] & kSlowsCompute; }
  bool HoldsCommunicator(int op) const { return flags_[op] & kHoldsCommunicator; }

  // Stretch of compute op `op` under the role's current communication load (engine.h).
  double Factor(int op, int role) const {
    if (comm_running_[role] == 0) return 1.0;
    if (contention_ == nullptr) return slowdown_;
    const OverlapContention& c = *contention_;
    double f = 1.0;
    if (c.sm_count > 0 && !c.sm_share.empty()) {
      const double sms = c.sm_count;
      const double taken = std::min(static_cast<double>(comm_blocks_[role]), 0.5 * sms);
      f += c.sm_share[op] * (sms / (sms - taken) - 1.0);
    }
    if (c.hbm_gbps > 0 && !c.hbm_share.empty()) {
      const double used = std::min(comm_hbm_gbps_[role] / c.hbm_gbps, 0.5);
      f += c.hbm_share[op] * (1.0 / (1.0 - used) - 1.0);
    }
    return f;
  }

  void AddCommLoad(int op, int sign) {
    const int role = role_[op];
    comm_running_[role] += sign;
    if (contention_ == nullptr) return;
    if (!contention_->comm_blocks.empty())
      comm_blocks_[role] += sign * contention_->comm_blocks[op];
    if (!contention_->comm_hbm_gbps.empty())
      comm_hbm_gbps_[role] += sign * static_cast<double>(contention_->comm_hbm_gbps[op]);
    if (comm_running_[role] == 0) {  // no drift from adding and removing floats
      comm_blocks_[role] = 0;
      comm_hbm_gbps_[role] = 0.0;
    }
  }

  bool CanStart(int op) const {
    if (tl_.ops[op].start_ns >= 0 || deps_left_[op] != 0) return false;
    const int lk = lane_key_[op];
    if (lane_busy_[lk] || lane_pos_[lk] >= lanes_.begin[lk + 1] ||
        lanes_.items[lane_pos_[lk]] != op) {
      return false;
    }
    const int gk = group_key_[op];
    return gk < 0 || (groups_.items[group_pos_[gk]] == op && !group_busy_[gk]);
  }

  void Push(int op, int64_t time_ns) { heap_.push(Event{time_ns, seq_++, op, version_[op]}); }

  static int64_t ScaledNs(double work_ns, double factor) {
    const double ns = work_ns * factor;
    // A hair below an integer is that integer: the loss comes from the divide in Rerate.
    return std::max<int64_t>(0, static_cast<int64_t>(std::ceil(ns - 1e-6)));
  }

  void Start(int op, int64_t t) {
    const int role = role_[op];
    tl_.ops[op].start_ns = t;
    lane_busy_[lane_key_[op]] = 1;
    tl_.log.push_back({t, op, true});
    if (const int gk = group_key_[op]; gk >= 0) {
      if (HoldsCommunicator(op)) group_busy_[gk] = 1;
      ++group_pos_[gk];
      if (group_pos_[gk] < groups_.begin[gk + 1])
        worklist_.push_back(groups_.items[group_pos_[gk]]);
    }
    if (Stretchable(op)) {
      running_compute_[role] = op;
      remaining_[op] = static_cast<double>(base_ns_[op]);
      last_update_ns_[op] = t;
      factor_[op] = Factor(op, role);
      Push(op, t + ScaledNs(remaining_[op], factor_[op]));
    } else {
      Push(op, t + base_ns_[op]);
    }
    if (SlowsCompute(op)) {
      AddCommLoad(op, +1);
      Rerate(role, t);
    }
  }

  void End(int op, int64_t t) {
    const int role = role_[op];
    tl_.ops[op].end_ns = t;
    const int lk = lane_key_[op];
    lane_busy_[lk] = 0;
    ++lane_pos_[lk];
    tl_.log.push_back({t, op, false});
    ++done_;
    if (const int gk = group_key_[op]; gk >= 0 && HoldsCommunicator(op)) {
      group_busy_[gk] = 0;
      if (group_pos_[gk] < groups_.begin[gk + 1])
        worklist_.push_back(groups_.items[group_pos_[gk]]);
    }
    tl_.role_end_ns[role] = std::max(tl_.role_end_ns[role], t);
    if (running_compute_[role] == op) {
      running_compute_[role] = -1;
      tl_.stretched_ns += (t - tl_.ops[op].start_ns) - base_ns_[op];
    }
    if (SlowsCompute(op)) {
      AddCommLoad(op, -1);
      Rerate(role, t);
    }
    if (lane_pos_[lk] < lanes_.begin[lk + 1]) worklist_.push_back(lanes_.items[lane_pos_[lk]]);
    for (int k = dependents_.begin[op]; k < dependents_.begin[op + 1]; ++k) {
      const int d = dependents_.items[k];
      if (--deps_left_[d] == 0) worklist_.push_back(d);
    }
  }

  // The role's communication load changed at time t: if that changes its running compute op's
  // speed, account the work done so far at the old rate and reschedule its end at the new one.
  void Rerate(int role, int64_t t) {
    const int op = running_compute_[role];
    if (op < 0) return;
    const double factor = Factor(op, role);
    if (factor == factor_[op]) return;
    const double elapsed = static_cast<double>(t - last_update_ns_[op]);
    remaining_[op] = std::max(0.0, remaining_[op] - elapsed / factor_[op]);
    last_update_ns_[op] = t;
    factor_[op] = factor;
    ++version_[op];
    Push(op, t + ScaledNs(remaining_[op], factor));
  }

  void DrainWorklist(int64_t t) {
    for (size_t k = 0; k < worklist_.size(); ++k) {
      const int op = worklist_[k];
      if (CanStart(op)) Start(op, t);
    }
    worklist_.clear();
  }

  Status DeadlockError() const {
    std::string detail;
    int listed = 0;
    for (int lk = 0; lk < num_lane_keys_ && listed < 8; ++lk) {
      if (lane_pos_[lk] >= lanes_.begin[lk + 1]) continue;
      const int op = lanes_.items[lane_pos_[lk]];
      if (tl_.ops[op].start_ns >= 0) continue;  // running forever cannot happen; skip
      std::string why;
      for (int d : DepsOf(s_, s_.ops[op])) {
        if (tl_.ops[d].end_ns < 0) {
          why = fmt::format("waits for {} which never {}", Describe(d),
                            tl_.ops[d].start_ns < 0 ? "starts" : "ends");
          break;
        }
      }
      if (why.empty() && group_key_[op] >= 0) {
        const int gk = group_key_[op];
        why = fmt::format("group '{}' must first start {}", s_.groups[s_.ops[op].group].name,
                          Describe(groups_.items[group_pos_[gk]]));
      }
      detail += fmt::format("\n  {} {}", Describe(op), why);
      ++listed;
    }
    return InvalidInput(fmt::format(
        "schedule deadlocks: {} of {} ops can never start (a dependency cycle or an order "
        "that contradicts a lane's or a group's issue order); stuck at lane heads:{}",
        n_ - done_, n_, detail));
  }

  const Schedule& s_;
  std::span<const int64_t> base_ns_;
  double slowdown_;
  const OverlapContention* contention_;
  bool stretches_;
  int n_ = 0;
  int num_lane_keys_ = 0;
  int done_ = 0;
  uint64_t seq_ = 0;
  Buckets lanes_, groups_, deps_, dependents_;
  std::vector<int> role_;       // per op
  std::vector<uint8_t> flags_;  // per op: kStretchable | kSlowsCompute | kHoldsCommunicator
  std::vector<int> lane_key_, group_key_, deps_left_, lane_pos_, group_pos_;
  std::vector<char> lane_busy_, group_busy_;
  std::vector<double> factor_;  // stretch of each running compute op's remaining work
  std::vector<uint32_t> version_;
  std::vector<double> remaining_;
  std::vector<int64_t> last_update_ns_;
  std::vector<int> running_compute_, comm_running_, comm_blocks_;  // per role
  std::vector<double> comm_hbm_gbps_;                              // per role
  std::vector<int> worklist_;
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  Timeline tl_;
};

}  // namespace

Result<Timeline> RunEngine(const Schedule& schedule, std::span<const int64_t> base_duration_ns,
                           const EngineOptions& options) {
  if (!(options.overlap_slowdown >= 1.0) || !std::isfinite(options.overlap_slowdown)) {
    return InvalidInput(fmt::format("engine: overlap slowdown must be a finite number >= 1, got {}",
                                    options.overlap_slowdown));
  }
  if (const OverlapContention* c = options.contention) {
    const size_t n = schedule.ops.size();
    const auto sized = [n](size_t size) { return size == 0 || size == n; };
    if (!sized(c->sm_share.size()) || !sized(c->hbm_share.size()) ||
        !sized(c->comm_blocks.size()) || !sized(c->comm_hbm_gbps.size())) {
      return InvalidInput(
          fmt::format("engine: overlap contention figures must be empty or one per op ({})", n));
    }
    if (c->sm_count < 0 || !(c->hbm_gbps >= 0) || !std::isfinite(c->hbm_gbps)) {
      return InvalidInput(
          fmt::format("engine: overlap contention needs sm_count >= 0 and a finite "
                      "hbm_gbps >= 0, got {} and {}",
                      c->sm_count, c->hbm_gbps));
    }
  }
  Engine engine(schedule, base_duration_ns, options);
  return engine.Run();
}

}  // namespace shardscope::sim
