#include "core/trace/kineto_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/trace/trace_io.h"

namespace shardscope::trace_internal {
namespace {

using Cat = KinetoSink::Cat;
using Event = KinetoSink::Event;

Cat CatOf(std::string_view c) {
  if (c == "cpu_op") return Cat::kCpuOp;
  if (c == "user_annotation") return Cat::kUserAnnotation;
  if (c == "gpu_user_annotation") return Cat::kGpuUserAnnotation;
  if (c == "kernel") return Cat::kKernel;
  if (c == "gpu_memcpy") return Cat::kMemcpy;
  if (c == "gpu_memset") return Cat::kMemset;
  if (c == "cuda_runtime" || c == "cuda_driver") return Cat::kRuntime;
  return Cat::kOther;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The collective lane a name stands for, or 0. Matches NCCL kernel names
// (ncclDevKernel_AllGather_RING_LL, ncclKernel_ReduceScatter_...), gloo ranges (gloo:all_gather)
// and c10d ops (c10d::_allgather_base_, c10d::_reduce_scatter_base_, c10d::allreduce_).
int CollectiveLane(std::string_view name) {
  const std::string n = Lower(name);
  auto has = [&](std::string_view w) { return n.find(w) != std::string::npos; };
  if (has("allgather") || has("all_gather")) return kLaneAllGather;
  if (has("reducescatter") || has("reduce_scatter")) return kLaneReduceScatter;
  if (has("allreduce") || has("all_reduce")) return kLaneAllReduce;
  if (has("sendrecv") || has("alltoall") || has("all_to_all") || has("send") || has("recv"))
    return kLaneP2P;
  if (has("broadcast") || has("reduce")) return kLaneAllReduce;
  return 0;
}

bool IsNccl(std::string_view name) { return Lower(name).find("nccl") != std::string::npos; }

// "FSDP::all_gather (layers.0)" → ("all_gather", "layers.0"); "FSDP::pre_forward" → ("pre_forward",
// "root"); "FSDP::backward_prefetch for layers.1" → ("backward_prefetch", "layers.1").
struct Label {
  std::string kind;
  std::string unit;
  bool has_unit = false;
};
Label ParseFsdpLabel(std::string_view name) {
  Label l;
  std::string_view rest = name.substr(6);  // after "FSDP::"
  const auto paren = rest.find(" (");
  const auto for_pos = rest.find(" for ");
  if (paren != std::string_view::npos && rest.back() == ')') {
    l.kind = std::string(rest.substr(0, paren));
    l.unit = std::string(rest.substr(paren + 2, rest.size() - paren - 3));
    l.has_unit = true;
  } else if (for_pos != std::string_view::npos) {
    l.kind = std::string(rest.substr(0, for_pos));
    l.unit = std::string(rest.substr(for_pos + 5));
    l.has_unit = true;
  } else {
    l.kind = std::string(rest);
    // The root's hooks carry no FQN ("FSDP::pre_forward", "FSDP::post_backward_reduce").
    l.has_unit = !StartsWith(l.kind, "root_") && l.kind != "backward_prefetch";
  }
  if (l.has_unit && l.unit.empty()) l.unit = "root";
  return l;
}

struct LabelRange {
  int64_t start_ns, end_ns;
  Label label;
};

// Phase and unit of a moment on the main thread, from the FSDP labels.
class Timeline {
 public:
  Timeline(std::vector<LabelRange> labels, std::vector<std::pair<int64_t, int64_t>> optimizer,
           std::vector<int64_t> step_starts)
      : labels_(std::move(labels)),
        optimizer_(std::move(optimizer)),
        steps_(std::move(step_starts)) {
    std::sort(labels_.begin(), labels_.end(),
              [](const LabelRange& a, const LabelRange& b) { return a.start_ns < b.start_ns; });
    // Unit changes: a unit's pre-hook ends → its compute runs; its post-hook starts → back to
    // the enclosing unit. Kept as a stack so nested units (blocks inside the root) resolve.
    struct Change {
      int64_t t;
      bool push;
      std::string unit;
    };
    std::vector<Change> changes;
    for (const auto& r : labels_) {
      const Label& l = r.label;
      if (!l.has_unit) continue;
      if (l.kind == "pre_forward" || l.kind == "pre_backward")
        changes.push_back({r.end_ns, true, l.unit});
      if (l.kind == "post_forward" || StartsWith(l.kind, "post_backward"))
        changes.push_back({r.start_ns, false, l.unit});
      if (l.kind == "pre_backward" &&
          (backward_starts_.empty() || !SameStep(backward_starts_.back(), r.start_ns))) {
        backward_starts_.push_back(r.start_ns);
      }
    }
    std::stable_sort(changes.begin(), changes.end(),
                     [](const Change& a, const Change& b) { return a.t < b.t; });
    std::vector<std::string> stack;
    for (const auto& c : changes) {
      if (c.push) {
        stack.push_back(c.unit);
      } else {
        auto it = std::find(stack.rbegin(), stack.rend(), c.unit);
        if (it == stack.rend()) continue;
        stack.erase(std::next(it).base(), stack.end());
      }
      segments_.push_back({c.t, stack.empty() ? std::string("root") : stack.back()});
    }
  }

  std::string Phase(int64_t t) const {
    for (const auto& [s, e] : optimizer_) {
      if (t >= s && t < e) return "step";
    }
    for (int64_t b : backward_starts_) {
      if (t >= b && SameStep(b, t)) return "bwd";
    }
    return "fwd";
  }
  std::string Unit(int64_t t) const {
    auto it = std::upper_bound(
        segments_.begin(), segments_.end(), t,
        [](int64_t v, const std::pair<int64_t, std::string>& s) { return v < s.first; });
    if (it == segments_.begin()) return "root";
    return std::prev(it)->second;
  }
  // The innermost FSDP label with a unit that contains t (e.g. "FSDP::all_gather (layers.0)").
  const Label* Enclosing(int64_t t) const {
    const Label* best = nullptr;
    int64_t best_len = INT64_MAX;
    for (const auto& r : labels_) {
      if (r.start_ns > t) break;
      if (t < r.end_ns && r.label.has_unit && r.end_ns - r.start_ns < best_len) {
        best = &r.label;
        best_len = r.end_ns - r.start_ns;
      }
    }
    return best;
  }
  std::string OpId(int64_t t, std::string_view what) const {
    const std::string phase = Phase(t);
    if (phase == "step") return what == "compute" ? "step/optimizer" : fmt::format("step/{}", what);
    const Label* l = Enclosing(t);
    const std::string unit = (l != nullptr && what != "compute") ? l->unit : Unit(t);
    return fmt::format("{}/{}/{}", phase, unit, what);
  }

 private:
  bool SameStep(int64_t a, int64_t b) const {
    auto step = [&](int64_t t) {
      return std::upper_bound(steps_.begin(), steps_.end(), t) - steps_.begin();
    };
    return step(a) == step(b);
  }
  std::vector<LabelRange> labels_;
  std::vector<std::pair<int64_t, int64_t>> optimizer_;
  std::vector<int64_t> steps_;
  std::vector<int64_t> backward_starts_;
  std::vector<std::pair<int64_t, std::string>> segments_;
};

}  // namespace

int64_t KinetoSink::Id(const RawValue& v) {
  if (v.type == RawValue::Type::kInt) return v.i;
  auto [it, inserted] =
      string_ids_.try_emplace(v.ToJsonText(), -1 - static_cast<int64_t>(string_ids_.size()));
  return it->second;
}

void KinetoSink::Unknown(const std::string& what) {
  ++trace_->import.unknown_events;
  ++trace_->import.unknown_by_name[what];
}

Status KinetoSink::OnTopLevel(const std::string& key, const std::string& json_text, bool) {
  if (key == "distributedInfo") {
    const auto j = nlohmann::json::parse(json_text, nullptr, false);
    if (j.is_object() && j.contains("rank")) {
      if (!j["rank"].is_number_integer() || j["rank"].get<int64_t>() < 0 ||
          j["rank"].get<int64_t>() > INT32_MAX) {
        return InvalidInput(source_ + ": distributedInfo.rank: expected an integer ≥ 0");
      }
      rank_ = j["rank"].get<int>();
    }
    trace_->metadata.extra["distributedInfo"] = j;
  } else if (key == "deviceProperties") {
    trace_->metadata.device = nlohmann::json::parse(json_text, nullptr, false);
  } else if (key == "schemaVersion" || key == "baseTimeNanoseconds" || key == "host_name") {
    trace_->metadata.extra["kineto_" + key] = nlohmann::json::parse(json_text, nullptr, false);
  }
  return Status::Ok();
}

Status KinetoSink::OnEvent(const RawEvent& e) {
  ++trace_->import.events_read;
  if (e.ph.type != RawValue::Type::kString || e.ph.text.empty()) {
    return InvalidInput(FieldPath(source_, e.index, "ph") + ": expected a string, got " +
                        std::string(e.ph.TypeName()));
  }
  const std::string cat = e.cat.type == RawValue::Type::kString ? e.cat.text : std::string();
  const char ph = e.ph.text[0];
  if (ph == 'M') {
    Unknown("M " + (e.name.type == RawValue::Type::kString ? e.name.text : std::string("?")));
    return Status::Ok();
  }
  if (ph == 'i' && e.name.type == RawValue::Type::kString && e.name.text == "[memory]") {
    MemorySample m;
    int64_t ns = 0;
    if (!RawToNs(e.ts, &ns)) {
      return InvalidInput(FieldPath(source_, e.index, "ts") +
                          ": expected a number of microseconds");
    }
    m.time_ns = ns;
    auto arg_int = [&](std::string_view key, int64_t* out) -> Status {
      const RawArg* a = e.FindArg(key);
      if (a == nullptr) return Status::Ok();
      if (!a->value.is_number()) {
        return InvalidInput(FieldPath(source_, e.index, "args." + std::string(key)) +
                            ": expected a number");
      }
      const double d =
          a->value.type == RawValue::Type::kInt ? static_cast<double>(a->value.i) : a->value.d;
      if (!(d >= -static_cast<double>(kMaxTraceBytes) &&
            d <= static_cast<double>(kMaxTraceBytes))) {
        return InvalidInput(FieldPath(source_, e.index, "args." + std::string(key)) +
                            ": expected a byte count within ±2^60");
      }
      *out = a->value.type == RawValue::Type::kInt ? a->value.i : static_cast<int64_t>(d);
      return Status::Ok();
    };
    SS_RETURN_IF_ERROR(arg_int("Total Allocated", &m.allocated));
    SS_RETURN_IF_ERROR(arg_int("Total Reserved", &m.reserved));
    SS_RETURN_IF_ERROR(arg_int("Device Type", &m.device_type));
    memory_.push_back(m);
    return Status::Ok();
  }
  if (ph != 'X') {
    Unknown(fmt::format("ph={} cat={}", e.ph.text, cat));
    return Status::Ok();
  }
  if (e.name.type != RawValue::Type::kString) {
    return InvalidInput(FieldPath(source_, e.index, "name") + ": expected a string, got " +
                        std::string(e.name.TypeName()));
  }
  Event ev;
  if (!RawToNs(e.ts, &ev.start_ns)) {
    return InvalidInput(FieldPath(source_, e.index, "ts") +
                        ": expected a number of microseconds, got " + std::string(e.ts.TypeName()));
  }
  if (!RawToNs(e.dur, &ev.dur_ns) || ev.dur_ns < 0) {
    return InvalidInput(FieldPath(source_, e.index, "dur") +
                        ": expected a duration ≥ 0 in microseconds");
  }
  if (ev.start_ns > INT64_MAX - ev.dur_ns) {
    return InvalidInput(FieldPath(source_, e.index, "dur") + ": ts + dur overflows");
  }
  ev.pid = Id(e.pid);
  ev.tid = Id(e.tid);
  ev.cat = CatOf(cat);
  if (ev.cat == Cat::kOther) {
    Unknown(fmt::format("X cat={}", cat));
    return Status::Ok();
  }
  ev.name = trace_->strings.Intern(e.name.text);
  if (const RawArg* a = e.FindArg("correlation");
      a != nullptr && a->value.type == RawValue::Type::kInt) {
    ev.correlation = a->value.i;
  }
  if (const RawArg* a = e.FindArg("stream");
      a != nullptr && a->value.type == RawValue::Type::kInt) {
    ev.stream = a->value.i;
  } else {
    ev.stream = ev.tid;
  }
  events_.push_back(ev);
  return Status::Ok();
}

Status KinetoSink::Finish() {
  Trace& t = *trace_;
  t.metadata.kind = "measured";
  t.metadata.tool_version = "pytorch profiler (kineto)";
  t.rank_names[rank_] = fmt::format("rank {}", rank_);

  // The main thread: the one with ProfilerStep ranges, else the one with the most CPU ops.
  std::map<std::pair<int64_t, int64_t>, int64_t> cpu_ops;
  std::pair<int64_t, int64_t> main{0, 0};
  bool main_found = false;
  for (const Event& e : events_) {
    if (e.cat == Cat::kUserAnnotation && StartsWith(t.Str(e.name), "ProfilerStep#")) {
      main = {e.pid, e.tid};
      main_found = true;
      break;
    }
    if (e.cat == Cat::kCpuOp) ++cpu_ops[{e.pid, e.tid}];
  }
  if (!main_found && !cpu_ops.empty()) {
    main = std::max_element(cpu_ops.begin(), cpu_ops.end(), [](const auto& a, const auto& b) {
             return a.second < b.second;
           })->first;
  }
  auto on_main = [&](const Event& e) { return e.pid == main.first && e.tid == main.second; };

  std::vector<LabelRange> labels;
  std::vector<std::pair<int64_t, int64_t>> optimizer;
  std::vector<int64_t> steps;
  std::map<int64_t, int64_t> launch_time;  // correlation → CPU launch time
  bool has_gpu = false;
  for (const Event& e : events_) {
    const std::string_view name = t.Str(e.name);
    if (e.cat == Cat::kKernel || e.cat == Cat::kMemcpy || e.cat == Cat::kMemset) has_gpu = true;
    if (e.cat == Cat::kRuntime && e.correlation >= 0) launch_time[e.correlation] = e.start_ns;
    if (e.cat != Cat::kUserAnnotation || !on_main(e)) continue;
    if (StartsWith(name, "ProfilerStep#")) {
      steps.push_back(e.start_ns);
      Marker& m = t.AddMarker(rank_, e.start_ns, "step_begin");
      const std::string n(name.substr(13));
      if (!n.empty() &&
          std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
          n.size() < 18) {
        t.SetExtraArgs(m, {{"step", std::stoll(n)}});
      }
      ++t.import.markers;
    } else if (StartsWith(name, "FSDP::")) {
      labels.push_back({e.start_ns, e.end_ns(), ParseFsdpLabel(name)});
      ++t.import.unit_labels;
    } else if (StartsWith(name, "Optimizer.step")) {
      optimizer.emplace_back(e.start_ns, e.end_ns());
    }
  }
  std::sort(steps.begin(), steps.end());
  const Timeline timeline(std::move(labels), std::move(optimizer), steps);

  auto add = [&](const Event& e, int lane, int64_t cpu_time, std::string_view what) {
    t.AddWork(rank_, lane, t.Str(e.name), timeline.OpId(cpu_time, what), e.start_ns, e.dur_ns);
    ++t.import.work_events;
  };
  auto what_of = [](int lane) { return std::string(TraceLaneName(lane)); };

  if (has_gpu) {
    // A stream that carries NCCL kernels is that collective's lane for all its kernels.
    std::map<std::pair<int64_t, int64_t>, int> stream_lane;
    for (const Event& e : events_) {
      if (e.cat == Cat::kKernel && IsNccl(t.Str(e.name))) {
        const int lane = CollectiveLane(t.Str(e.name));
        stream_lane.emplace(std::make_pair(e.pid, e.stream), lane == 0 ? kLaneAllReduce : lane);
      }
    }
    for (const Event& e : events_) {
      if (e.cat != Cat::kKernel && e.cat != Cat::kMemcpy && e.cat != Cat::kMemset) {
        if (e.cat == Cat::kGpuUserAnnotation || e.cat == Cat::kRuntime)
          Unknown(e.cat == Cat::kRuntime ? "cuda_runtime" : "gpu_user_annotation");
        continue;
      }
      const std::string_view name = t.Str(e.name);
      int lane = kLaneCompute;
      if (auto it = stream_lane.find({e.pid, e.stream}); it != stream_lane.end()) lane = it->second;
      if (e.cat == Cat::kKernel && IsNccl(name)) {
        lane = CollectiveLane(name);
        if (lane == 0) lane = kLaneAllReduce;
      }
      if (e.cat == Cat::kMemcpy) {
        const std::string n = Lower(name);
        if (n.find("htod") != std::string::npos) lane = kLaneH2D;
        if (n.find("dtoh") != std::string::npos) lane = kLaneD2H;
      }
      auto it = launch_time.find(e.correlation);
      const int64_t cpu_time = it != launch_time.end() ? it->second : e.start_ns;
      add(e, lane, cpu_time, lane == kLaneCompute ? "compute" : what_of(lane));
    }
    for (const Event& e : events_) {
      if (e.cat == Cat::kCpuOp || e.cat == Cat::kUserAnnotation)
        Unknown(e.cat == Cat::kCpuOp ? "cpu_op (GPU trace)" : "user_annotation");
    }
  } else {
    // CPU run: collectives issued by c10d ops on the main thread, executed as gloo ranges on
    // worker threads, paired in issue order when the counts agree.
    std::vector<const Event*> issues, works, main_ops;
    for (const Event& e : events_) {
      const std::string_view name = t.Str(e.name);
      if (on_main(e) && e.cat == Cat::kCpuOp && StartsWith(name, "c10d::") &&
          CollectiveLane(name) != 0) {
        issues.push_back(&e);
      }
      if (!on_main(e) && e.cat == Cat::kUserAnnotation &&
          (StartsWith(name, "gloo:") || StartsWith(name, "nccl:"))) {
        works.push_back(&e);
      }
      if (on_main(e) && e.cat == Cat::kCpuOp) main_ops.push_back(&e);
    }
    auto by_start = [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; };
    std::stable_sort(issues.begin(), issues.end(), by_start);
    std::stable_sort(works.begin(), works.end(), by_start);
    const bool paired = issues.size() == works.size();
    for (size_t i = 0; i < works.size(); ++i) {
      const Event& w = *works[i];
      const Event* issue = paired ? issues[i] : nullptr;
      int lane = CollectiveLane(t.Str(issue != nullptr ? issue->name : w.name));
      if (lane == 0) lane = kLaneAllReduce;
      add(w, lane, issue != nullptr ? issue->start_ns : w.start_ns, what_of(lane));
    }
    // Compute: the outermost CPU ops of the main thread (nested ones are inside them).
    std::stable_sort(main_ops.begin(), main_ops.end(), [](const Event* a, const Event* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->dur_ns > b->dur_ns;
    });
    int64_t covered_until = INT64_MIN;
    int64_t nested = 0;
    for (const Event* e : main_ops) {
      if (e->start_ns < covered_until) {
        ++nested;
        continue;
      }
      covered_until = e->end_ns();
      add(*e, kLaneCompute, e->start_ns, "compute");
    }
    t.import.unknown_by_name["cpu_op nested (inside a kept op)"] += nested;
    t.import.unknown_events += nested;
    const int64_t other = static_cast<int64_t>(events_.size()) -
                          static_cast<int64_t>(works.size()) -
                          static_cast<int64_t>(main_ops.size());
    t.import.unknown_by_name["other cpu ranges (annotations, worker-thread ops)"] += other;
    t.import.unknown_events += other;
  }

  // Memory: the GPU's allocator when present, else the CPU's.
  const bool gpu_memory = std::any_of(memory_.begin(), memory_.end(),
                                      [](const MemorySample& m) { return m.device_type != 0; });
  std::sort(memory_.begin(), memory_.end(),
            [](const MemorySample& a, const MemorySample& b) { return a.time_ns < b.time_ns; });
  int64_t last_alloc = -1, last_reserved = -1;
  for (const MemorySample& m : memory_) {
    if ((m.device_type != 0) != gpu_memory) continue;
    if (m.allocated != last_alloc) {
      t.AddCounter(rank_, m.time_ns, "allocated_bytes", m.allocated);
      last_alloc = m.allocated;
      ++t.import.counter_samples;
    }
    if (m.reserved != last_reserved) {
      t.AddCounter(rank_, m.time_ns, "reserved_bytes", m.reserved);
      last_reserved = m.reserved;
      ++t.import.counter_samples;
    }
  }
  return Status::Ok();
}

}  // namespace shardscope::trace_internal
