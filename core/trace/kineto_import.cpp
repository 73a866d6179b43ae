#include "core/trace/kineto_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>

#include "core/trace/kineto_import_timeline.h"
#include "core/trace/op_id.h"
#include "core/trace/trace_io.h"
#include "core/util/ascii_case.h"
#include "core/util/terminal_text.h"

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

// The collective lane a name stands for, or 0. Matches NCCL kernel names
// (ncclDevKernel_AllGather_RING_LL, ncclKernel_ReduceScatter_...), gloo ranges (gloo:all_gather)
// and c10d ops (c10d::_allgather_base_, c10d::_reduce_scatter_base_, c10d::allreduce_).
int CollectiveLane(std::string_view name) {
  const std::string n = AsciiLower(name);
  auto has = [&](std::string_view w) { return n.find(w) != std::string::npos; };
  if (has("allgather") || has("all_gather")) return kLaneAllGather;
  if (has("reducescatter") || has("reduce_scatter")) return kLaneReduceScatter;
  if (has("allreduce") || has("all_reduce")) return kLaneAllReduce;
  if (has("sendrecv") || has("alltoall") || has("all_to_all") || has("send") || has("recv"))
    return kLaneP2P;
  if (has("broadcast") || has("reduce")) return kLaneAllReduce;
  return 0;
}

bool IsNccl(std::string_view name) {
  constexpr std::string_view kNccl = "nccl";
  return std::search(name.begin(), name.end(), kNccl.begin(), kNccl.end(),
                     [](char a, char b) { return AsciiLower(a) == b; }) != name.end();
}

bool IsAutogradNode(std::string_view name) {
  return name.starts_with("autograd::engine::evaluate_function");
}

// The language-model loss, which the schedule runs as its own op each way (step_builder.cpp):
// forward, cross_entropy (log_softmax, then nll_loss inside it) or nll_loss alone; backward,
// the autograd node of nll_loss, then log_softmax's.
bool IsLossForward(std::string_view name) {
  // Not aten::nll_loss_backward, which runs inside the backward node.
  return name == "aten::cross_entropy_loss" || name == "aten::nll_loss_nd" ||
         name == "aten::nll_loss" || name == "aten::nll_loss2d";
}
bool IsLossBackwardNode(std::string_view name) {
  return IsAutogradNode(name) && name.find("NllLoss") != std::string_view::npos;
}
bool IsLogSoftmaxBackwardNode(std::string_view name) {
  return IsAutogradNode(name) && name.ends_with("LogSoftmaxBackward0");
}

// Activation checkpointing's re-run forwards (non-reentrant: PyTorch runs the checkpointed
// block's forward again inside the first backward node that unpacks a saved tensor, with no
// label around it): per outermost autograd node on the main thread, the span of the forward ops
// inside it. `nodes` and `forward_ops`: (start, end), sorted by start.
std::vector<std::pair<int64_t, int64_t>> RecomputeRanges(
    const std::vector<std::pair<int64_t, int64_t>>& nodes,
    const std::vector<std::pair<int64_t, int64_t>>& forward_ops) {
  std::vector<std::pair<int64_t, int64_t>> outermost;
  for (const auto& n : nodes) {
    if (outermost.empty() || n.first >= outermost.back().second) outermost.push_back(n);
  }
  std::vector<std::pair<int64_t, int64_t>> out(outermost.size(), {INT64_MAX, INT64_MIN});
  for (const auto& [start, end] : forward_ops) {
    auto it =
        std::upper_bound(outermost.begin(), outermost.end(), std::make_pair(start, INT64_MAX));
    if (it == outermost.begin()) continue;
    --it;
    if (end > it->second) continue;  // not inside that node
    auto& r = out[it - outermost.begin()];
    r = {std::min(r.first, start), std::max(r.second, end)};
  }
  std::erase_if(out, [](const auto& r) { return r.first > r.second; });
  return out;
}

// The loss's time ranges on the main thread (`ops`: its CPU ops sorted by start): each
// outermost loss forward, and each loss backward node with the log_softmax backward node that
// runs right after it (the next autograd node to start after it ends).
std::vector<std::pair<int64_t, int64_t>> LossRanges(
    const std::vector<std::pair<std::string_view, std::pair<int64_t, int64_t>>>& ops) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t open_until = INT64_MIN;  // the last forward range's end: nested loss ops are inside it
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& [name, range] = ops[i];
    if (IsLossForward(name)) {
      if (range.first >= open_until) out.push_back(range);
      open_until = std::max(open_until, range.second);
    } else if (IsLossBackwardNode(name)) {
      std::pair<int64_t, int64_t> r = range;
      for (size_t j = i + 1; j < ops.size(); ++j) {
        // Nodes inside it (FSDP's pre-backward hook runs in the loss's node) are its own.
        if (!IsAutogradNode(ops[j].first) || ops[j].second.first < range.second) continue;
        if (IsLogSoftmaxBackwardNode(ops[j].first)) r.second = ops[j].second.second;
        break;
      }
      out.push_back(r);
    }
  }
  return out;
}

// A c10d collective issued from the main thread (c10d::_allgather_base_, allreduce_, ...).
bool IsC10dCollective(std::string_view name) {
  return name.starts_with("c10d::") && CollectiveLane(name) != 0;
}

// The op_id `what` of work on a lane that is not compute (the lane's own operation).
std::string_view LaneWhat(int lane) {
  switch (lane) {
    case kLaneAllGather:
      return op_what::kAllGather;
    case kLaneReduceScatter:
      return op_what::kReduceScatter;
    case kLaneAllReduce:
      return op_what::kAllReduce;
    case kLaneH2D:
      return op_what::kH2D;
    case kLaneD2H:
      return op_what::kD2H;
    case kLaneCompute:
      return op_what::kCompute;
    default:
      return TraceLaneName(lane);
  }
}

// Bytes per element of a dtype as the profiler spells it: c10 ScalarType names in NCCL kernel
// args ("Float", "BFloat16") or C++ type names in `Input type` ("float", "c10::BFloat16",
// "long int"). 0 when unknown.
int DtypeBytes(std::string_view dtype) {
  const std::string d = AsciiLower(dtype);
  auto has = [&](std::string_view w) { return d.find(w) != std::string::npos; };
  if (has("float8") || has("char") || has("byte") || has("bool") || has("int8")) return 1;
  if (has("bfloat16") || has("half") || has("float16") || has("short") || has("int16")) return 2;
  if (has("double") || has("float64") || has("long") || has("int64")) return 8;
  if (has("float") || has("int")) return 4;
  return 0;
}

// Elements of one `Input Dims` entry: [a, b] → a·b; a tensor list [[a], [b]] → a + b; [] (not a
// tensor) → -1.
int64_t DimsNumel(const nlohmann::json& j) {
  if (!j.is_array() || j.empty()) return -1;
  if (std::all_of(j.begin(), j.end(),
                  [](const nlohmann::json& v) { return v.is_number_integer(); })) {
    int64_t n = 1;
    for (const auto& v : j) {
      const int64_t d = v.get<int64_t>();
      if (d < 0 || (d > 0 && n > kMaxTraceBytes / d)) return -1;
      n *= d;
    }
    return n;
  }
  int64_t sum = -1;
  for (const auto& v : j) {
    const int64_t n = DimsNumel(v);
    if (n >= 0) sum = std::max<int64_t>(sum, 0) + n;
  }
  return sum;
}

struct CommSize {
  int64_t bytes = 0;
  int32_t group_size = 0;
};

// A collective's size in the schedule's convention (schedule.h ScheduleOp::bytes): gathered
// bytes for an all-gather, input bytes for a reduce-scatter, the buffer for an all-reduce.
// `a` (the NCCL kernel or the c10d issue) is preferred over `b` (the gloo range).
CommSize SizeOf(int lane, const KinetoSink::CommArgs& a, const KinetoSink::CommArgs& b,
                int world_size) {
  auto pick = [](int64_t x, int64_t y) { return x >= 0 ? x : y; };
  const int64_t in = pick(a.in_numel, b.in_numel);
  const int64_t out = pick(a.out_numel, b.out_numel);
  const int elem = a.elem_bytes > 0 ? a.elem_bytes : b.elem_bytes;
  CommSize size;
  size.group_size = a.group_size > 0 ? a.group_size : b.group_size;
  if (size.group_size == 0 && in > 0 && out > 0) {
    if (lane == kLaneAllGather && out % in == 0) size.group_size = static_cast<int32_t>(out / in);
    if (lane == kLaneReduceScatter && in % out == 0) {
      size.group_size = static_cast<int32_t>(in / out);
    }
  }
  if (size.group_size == 0) size.group_size = world_size;
  int64_t numel = -1;
  if (lane == kLaneAllGather) {
    numel = out >= 0 ? out : (in >= 0 && size.group_size > 0 ? in * size.group_size : -1);
  } else if (lane == kLaneReduceScatter) {
    numel = in >= 0 ? in : (out >= 0 && size.group_size > 0 ? out * size.group_size : -1);
  } else {
    numel = in >= 0 ? in : out;
  }
  if (numel > 0 && elem > 0 && numel <= kMaxTraceBytes / elem) size.bytes = numel * elem;
  return size;
}

}  // namespace

bool IsKinetoTopLevelKey(std::string_view key) {
  return key == "schemaVersion" || key == "deviceProperties" || key == "distributedInfo" ||
         key == "baseTimeNanoseconds" || key == "trace_id";
}

Result<KinetoSink::CommArgs> KinetoSink::ReadCommArgs(const RawEvent& e) const {
  CommArgs c;
  const std::string_view name = e.name.text;
  // -1 when the profiler did not record it; a value it did record must be a count: read as
  // "unknown", a string or 1e300 made the collective 0 bytes without a word.
  auto count = [&](std::string_view key, int64_t lo, int64_t hi) -> Result<int64_t> {
    const RawArg* a = e.FindArg(key);
    if (a == nullptr) return int64_t{-1};
    if (a->value.type != RawValue::Type::kInt || a->value.i < lo || a->value.i > hi) {
      return InvalidInput(fmt::format("{}: expected an integer from {} to {}, got {}",
                                      FieldPath(source_, e.index, "args." + std::string(key)), lo,
                                      hi, Shortened(a->value.ToJsonText())));
    }
    return a->value.i;
  };
  SS_ASSIGN_OR_RETURN(c.in_numel, count("In msg nelems", 0, kMaxTraceBytes));
  SS_ASSIGN_OR_RETURN(c.out_numel, count("Out msg nelems", 0, kMaxTraceBytes));
  SS_ASSIGN_OR_RETURN(const int64_t group, count("Group size", 1, INT32_MAX));
  if (group > 0) c.group_size = static_cast<int32_t>(group);
  if (const RawArg* a = e.FindArg("dtype");
      a != nullptr && a->value.type == RawValue::Type::kString) {
    c.elem_bytes = DtypeBytes(a->value.text);
  }
  auto nested = [&](std::string_view key) {
    const RawArg* a = e.FindArg(key);
    return a != nullptr && a->value.type == RawValue::Type::kNested
               ? nlohmann::json::parse(a->value.text, nullptr, false)
               : nlohmann::json();
  };
  if (const nlohmann::json dims = nested("Input Dims"); dims.is_array() && !dims.empty()) {
    // c10d::_allgather_base_ / _reduce_scatter_base_ take (output, input); allreduce_ and the
    // gloo ranges one buffer.
    const int lane = CollectiveLane(name);
    const bool output_first =
        name.starts_with("c10d::") && (lane == kLaneAllGather || lane == kLaneReduceScatter);
    const int64_t first = DimsNumel(dims[0]);
    const int64_t second = dims.size() > 1 ? DimsNumel(dims[1]) : -1;
    if (c.in_numel < 0) c.in_numel = output_first ? second : first;
    if (c.out_numel < 0 && output_first) c.out_numel = first;
  }
  if (c.elem_bytes == 0) {
    const nlohmann::json types = nested("Input type");
    for (const auto& v : types) {
      if (v.is_string() && (c.elem_bytes = DtypeBytes(v.get<std::string>())) > 0) break;
    }
  }
  return c;
}

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
    if (j.is_object() && j.contains("world_size") && j["world_size"].is_number_integer() &&
        j["world_size"].get<int64_t>() > 0 && j["world_size"].get<int64_t>() <= INT32_MAX) {
      world_size_ = j["world_size"].get<int>();
    }
    if (rank_ >= 0 && world_size_ > 0 && rank_ >= world_size_) {
      return InvalidInput(fmt::format(
          "{}: distributedInfo.rank: {} is not a rank of its world_size {} (expected 0 .. {})",
          source_, rank_, world_size_, world_size_ - 1));
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
                        e.ph.Described());
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
                        e.name.Described());
  }
  Event ev;
  if (!RawToNs(e.ts, &ev.start_ns)) {
    return InvalidInput(FieldPath(source_, e.index, "ts") +
                        ": expected a number of microseconds, got " + e.ts.Described());
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
  const std::string_view name = e.name.text;
  if ((ev.cat == Cat::kCpuOp && name.starts_with("c10d::")) ||
      (ev.cat == Cat::kUserAnnotation &&
       (name.starts_with("gloo:") || name.starts_with("nccl:"))) ||
      (ev.cat == Cat::kKernel && IsNccl(name))) {
    ev.comm = static_cast<int32_t>(comms_.size());
    SS_ASSIGN_OR_RETURN(CommArgs args, ReadCommArgs(e));
    comms_.push_back(std::move(args));
  }
  if (const RawArg* a = e.FindArg("correlation");
      a != nullptr && a->value.type == RawValue::Type::kInt) {
    ev.correlation = a->value.i;
  }
  if (ev.cat == Cat::kCpuOp && e.FindArg("Sequence number") != nullptr) {
    const RawArg* fwd = e.FindArg("Fwd thread id");
    ev.forward_op = fwd != nullptr && fwd->value.type == RawValue::Type::kInt && fwd->value.i == 0;
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
    if (e.cat == Cat::kUserAnnotation && t.Str(e.name).starts_with("ProfilerStep#")) {
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

  // FSDP labels and step marks come from every CPU thread of the main process: a GPU run's
  // backward hooks run on autograd's device thread.
  std::vector<LabelRange> labels;
  std::vector<std::pair<int64_t, int64_t>> optimizer;
  std::vector<int64_t> steps, backward_marks;
  std::vector<std::pair<std::string_view, std::pair<int64_t, int64_t>>> loss_candidates;
  std::vector<std::pair<int64_t, int64_t>> autograd_nodes, forward_ops;
  std::unordered_map<int64_t, int64_t> launch_time;  // correlation → CPU launch time
  bool has_gpu = false;
  for (const Event& e : events_) {
    const std::string_view name = t.Str(e.name);
    if (e.cat == Cat::kKernel || e.cat == Cat::kMemcpy || e.cat == Cat::kMemset) has_gpu = true;
    if (e.cat == Cat::kRuntime && e.correlation >= 0) launch_time[e.correlation] = e.start_ns;
    const bool node = e.cat == Cat::kCpuOp && IsAutogradNode(name);
    if (node && e.pid == main.first) backward_marks.push_back(e.start_ns);
    if (e.cat == Cat::kCpuOp && on_main(e)) {  // what places the loss and the re-run forwards
      if (node || IsLossForward(name)) loss_candidates.push_back({name, {e.start_ns, e.end_ns()}});
      if (node) {
        autograd_nodes.emplace_back(e.start_ns, e.end_ns());
      } else if (e.forward_op) {
        forward_ops.emplace_back(e.start_ns, e.end_ns());
      }
    }
    if (e.cat != Cat::kUserAnnotation || e.pid != main.first) continue;
    if (on_main(e) && name.starts_with("ProfilerStep#")) {
      steps.push_back(e.start_ns);
      Marker& m = t.AddMarker(rank_, e.start_ns, "step_begin");
      const std::string n(name.substr(13));
      if (!n.empty() &&
          std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
          n.size() < 18) {
        t.SetExtraArgs(m, {{"step", std::stoll(n)}});
      }
      ++t.import.markers;
    } else if (name.starts_with("FSDP::")) {
      FsdpLabel label = ParseFsdpLabel(name);
      if (label.kind == FsdpKind::kOther) continue;
      labels.push_back({e.start_ns, e.end_ns(), std::move(label)});
      ++t.import.unit_labels;
    } else if (name.starts_with("Optimizer.step") || name.starts_with("Optimizer.zero_grad")) {
      optimizer.emplace_back(e.start_ns, e.end_ns());
    }
  }
  std::sort(labels.begin(), labels.end(), [](const LabelRange& a, const LabelRange& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::sort(loss_candidates.begin(), loss_candidates.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  std::sort(autograd_nodes.begin(), autograd_nodes.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  std::sort(forward_ops.begin(), forward_ops.end());
  const std::vector<std::pair<int64_t, int64_t>> recompute =
      RecomputeRanges(autograd_nodes, forward_ops);
  const StepTimeline timeline(labels, steps, std::move(backward_marks), std::move(optimizer),
                              LossRanges(loss_candidates), recompute);

  // Work to import, each with the CPU moment that places it in the step.
  struct Item {
    const Event* event;
    int lane;
    int64_t cpu_ns;
    bool collective;
    const CommArgs* a = nullptr;  // NCCL kernel or c10d issue
    const CommArgs* b = nullptr;  // gloo range
  };
  std::vector<Item> items;
  std::vector<std::pair<int64_t, int>> issues;  // (CPU time, lane) of every collective issue
  auto comm_of = [&](const Event* e) {
    return e != nullptr && e->comm >= 0 ? &comms_[e->comm] : nullptr;
  };

  if (has_gpu) {
    // NCCL kernels by name, classed once per distinct name: their lane, or 0 for other kernels.
    std::vector<int8_t> nccl_lane(t.strings.size(), -1);
    auto nccl_lane_of = [&](const Event& e) -> int {
      if (e.cat != Cat::kKernel) return 0;
      int8_t& lane = nccl_lane[e.name];
      if (lane < 0) {
        const std::string_view name = t.Str(e.name);
        const int l = IsNccl(name) ? CollectiveLane(name) : -1;
        lane = static_cast<int8_t>(l < 0 ? 0 : (l == 0 ? kLaneAllReduce : l));
      }
      return lane;
    };
    // A stream that carries NCCL kernels is that collective's lane for all its kernels.
    std::map<std::pair<int64_t, int64_t>, int> stream_lane;
    for (const Event& e : events_) {
      if (const int lane = nccl_lane_of(e); lane != 0) {
        stream_lane.emplace(std::make_pair(e.pid, e.stream), lane);
      }
    }
    int64_t runtime = 0, gpu_annotations = 0, cpu_ranges = 0, annotations = 0;
    for (const Event& e : events_) {
      if (e.cat != Cat::kKernel && e.cat != Cat::kMemcpy && e.cat != Cat::kMemset) {
        runtime += e.cat == Cat::kRuntime;
        gpu_annotations += e.cat == Cat::kGpuUserAnnotation;
        cpu_ranges += e.cat == Cat::kCpuOp;
        annotations += e.cat == Cat::kUserAnnotation;
        continue;
      }
      int lane = kLaneCompute;
      if (auto it = stream_lane.find({e.pid, e.stream}); it != stream_lane.end()) lane = it->second;
      const int nccl = nccl_lane_of(e);
      if (nccl != 0) lane = nccl;
      if (e.cat == Cat::kMemcpy) {
        const std::string n = AsciiLower(t.Str(e.name));
        if (n.find("htod") != std::string::npos) lane = kLaneH2D;
        if (n.find("dtoh") != std::string::npos) lane = kLaneD2H;
      }
      auto it = launch_time.find(e.correlation);
      const int64_t cpu_ns = it != launch_time.end() ? it->second : e.start_ns;
      items.push_back({&e, lane, cpu_ns, nccl != 0, comm_of(&e)});
      if (nccl != 0) issues.emplace_back(cpu_ns, lane);
    }
    for (const auto& [what, n] : {std::pair<const char*, int64_t>{"cuda_runtime", runtime},
                                  {"gpu_user_annotation", gpu_annotations},
                                  {"cpu_op (GPU trace)", cpu_ranges},
                                  {"user_annotation", annotations}}) {
      if (n == 0) continue;
      t.import.unknown_by_name[what] += n;
      t.import.unknown_events += n;
    }
  } else {
    // CPU run: collectives issued by c10d ops on the main thread, executed as gloo ranges on
    // worker threads. gloo runs a process group's collectives in issue order, so each range
    // pairs with the earliest unpaired issue of a compatible kind begun before it.
    std::vector<const Event*> c10d, works, main_ops;
    for (const Event& e : events_) {
      const std::string_view name = t.Str(e.name);
      if (on_main(e) && e.cat == Cat::kCpuOp) {
        main_ops.push_back(&e);
        if (IsC10dCollective(name)) c10d.push_back(&e);
      }
      if (!on_main(e) && e.cat == Cat::kUserAnnotation &&
          (name.starts_with("gloo:") || name.starts_with("nccl:")) && CollectiveLane(name) != 0) {
        works.push_back(&e);
      }
    }
    auto by_start = [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; };
    std::stable_sort(c10d.begin(), c10d.end(), by_start);
    std::stable_sort(works.begin(), works.end(), by_start);
    for (const Event* e : c10d) issues.emplace_back(e->start_ns, CollectiveLane(t.Str(e->name)));
    std::vector<bool> taken(c10d.size(), false);
    size_t head = 0;
    for (const Event* w : works) {
      const int work_lane = CollectiveLane(t.Str(w->name));
      const Event* issue = nullptr;
      while (head < c10d.size() && taken[head]) ++head;
      for (size_t i = head; i < c10d.size() && c10d[i]->start_ns <= w->start_ns; ++i) {
        const int issue_lane = CollectiveLane(t.Str(c10d[i]->name));
        const bool compatible = issue_lane == work_lane ||
                                (issue_lane == kLaneReduceScatter && work_lane == kLaneAllReduce);
        if (!taken[i] && compatible) {
          taken[i] = true;
          issue = c10d[i];
          break;
        }
      }
      const int lane = issue != nullptr ? CollectiveLane(t.Str(issue->name)) : work_lane;
      items.push_back({w, lane, issue != nullptr ? issue->start_ns : w->start_ns, true,
                       comm_of(issue), comm_of(w)});
    }
    // Compute: the outermost CPU ops of the main thread, except those that contain an FSDP
    // label (their pieces outside it are taken instead) and c10d issue calls.
    std::vector<std::pair<int64_t, int64_t>> label_ranges;
    for (const LabelRange& r : labels) label_ranges.emplace_back(r.start_ns, r.end_ns);
    // A re-run forward is cut out of its backward node as a label is: its ops are the
    // recompute run, the node's own ops its unit's compute.
    label_ranges.insert(label_ranges.end(), recompute.begin(), recompute.end());
    std::sort(label_ranges.begin(), label_ranges.end());
    auto contains_label = [&](const Event& e) {
      for (auto it = std::lower_bound(label_ranges.begin(), label_ranges.end(),
                                      std::make_pair(e.start_ns, INT64_MIN));
           it != label_ranges.end() && it->first < e.end_ns(); ++it) {
        // (A range that is the op itself, a re-run forward of one op, is that op.)
        if (it->second <= e.end_ns() && (it->first != e.start_ns || it->second != e.end_ns()))
          return true;
      }
      return false;
    };
    std::stable_sort(main_ops.begin(), main_ops.end(), [](const Event* a, const Event* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->dur_ns > b->dur_ns;
    });
    int64_t covered_until = INT64_MIN;
    int64_t nested = 0, issue_calls = 0, split = 0;
    for (const Event* e : main_ops) {
      if (e->start_ns < covered_until) {
        ++nested;
      } else if (IsC10dCollective(t.Str(e->name))) {
        covered_until = e->end_ns();
        ++issue_calls;
      } else if (contains_label(*e)) {
        ++split;
      } else {
        covered_until = e->end_ns();
        items.push_back({e, kLaneCompute, e->start_ns, false});
      }
    }
    auto count = [&](const char* what, int64_t n) {
      if (n == 0) return;
      t.import.unknown_by_name[what] += n;
      t.import.unknown_events += n;
    };
    count("cpu_op nested (inside a kept op)", nested);
    count("cpu_op c10d issue (its gloo range is the collective)", issue_calls);
    count("cpu_op split around FSDP labels (its pieces are kept)", split);
    count("other cpu ranges (annotations, worker-thread ops)",
          static_cast<int64_t>(events_.size()) - static_cast<int64_t>(works.size()) -
              static_cast<int64_t>(main_ops.size()));
  }
  std::sort(issues.begin(), issues.end());

  // Name every item: its phase, unit and `what`, then number compute runs and repeated
  // collectives per (step, micro-batch, phase, unit, what).
  std::vector<int64_t> times;
  times.reserve(items.size());
  for (const Item& it : items) times.push_back(it.cpu_ns);
  const std::vector<int> innermost = InnermostLabels(labels, times);
  // Per item: where it falls and what it is. Units and `what`s are interned (StrIds), so
  // numbering and op_id formatting work on integers and each distinct op_id is formatted once.
  struct Pending {
    int step = 0, micro = -1;
    OpPhase phase = OpPhase::kForward;
    StrId unit = kEmptyStr, what = kEmptyStr;
    int64_t run = -1;  // compute runs (numbered densely); -1: collectives numbered by occurrence
  };
  std::vector<Pending> pending(items.size());
  std::vector<std::pair<std::string_view, StrId>> whats;  // the few `what`s, interned once
  auto what_id = [&](std::string_view what) {
    for (const auto& [text, id] : whats) {
      if (text.data() == what.data() || text == what) return id;
    }
    whats.emplace_back(what, t.strings.Intern(what));
    return whats.back().second;
  };
  std::string_view last_unit;  // units are views into the timeline and labels: same view, same id
  StrId last_unit_id = kEmptyStr;
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    const Place place = timeline.At(it.cpu_ns);
    Pending& p = pending[i];
    p.step = place.step;
    p.micro = place.micro;
    p.phase = place.phase;
    // The lane's own operation (collectives, copies, kernels on a collective's stream), or
    // module work.
    const bool module_work = !it.collective && it.lane == kLaneCompute;
    const bool lane_work = it.collective || it.lane == kLaneH2D || it.lane == kLaneD2H;
    std::string_view what = LaneWhat(it.lane);
    if (place.phase == OpPhase::kStep) {
      p.micro = -1;
      p.what = what_id(module_work ? op_what::kOptimizer : what);
      continue;
    }
    std::string_view unit = place.unit;
    const LabelRange* label = innermost[i] >= 0 ? &labels[innermost[i]] : nullptr;
    const FsdpKind kind = label != nullptr ? label->label.kind : FsdpKind::kOther;
    if (label != nullptr) unit = label->label.unit;
    switch (kind) {
      case FsdpKind::kAllGather:
      case FsdpKind::kPrefetch:
        if (!lane_work) what = op_what::kCopyIn;
        break;
      case FsdpKind::kCopyOut:
        if (!lane_work) what = op_what::kCopyOut;
        break;
      case FsdpKind::kReduce:
        if (!lane_work) {
          // Before the first collective this label issued: the reduce-scatter's copy-in; after
          // it, that collective's own CPU work (gloo's scatter of the all-reduced buffer).
          auto last = std::lower_bound(issues.begin(), issues.end(), std::make_pair(it.cpu_ns, 0));
          what = op_what::kReduceCopyIn;
          if (last != issues.begin() && std::prev(last)->first >= label->start_ns) {
            what = LaneWhat(std::prev(last)->second);
          }
        }
        break;
      case FsdpKind::kRootPostBackward:
        if (!lane_work) {
          p.micro = -1;
          p.phase = OpPhase::kStep;
          p.what = what_id(op_what::kWaitReductions);
          continue;
        }
        break;
      case FsdpKind::kOther:  // no label: the running unit's work
        if (module_work) {
          what = place.recompute ? op_what::kRecompute : op_what::kCompute;
          p.run = place.run;
        }
        break;
      default:  // the unit's own hooks
        if (module_work) {
          what = op_what::kCompute;
          p.run = timeline.RunOf(label->label.unit, it.cpu_ns);
        }
        break;
    }
    if (unit.data() != last_unit.data() || unit.size() != last_unit.size()) {
      last_unit = unit;
      last_unit_id = t.strings.Intern(unit);
    }
    p.unit = last_unit_id;
    p.what = what_id(what);
  }
  // Dense numbering: the k-th run that holds work is `compute:k`; the k-th collective of one
  // kind in one place is `<what>:k`.
  using Key = std::tuple<int, int, OpPhase, StrId, StrId>;
  auto key_of = [](const Pending& p) { return Key{p.step, p.micro, p.phase, p.unit, p.what}; };
  std::map<Key, std::set<int64_t>> runs;
  for (const Pending& p : pending) {
    if (p.run >= 0) runs[key_of(p)].insert(p.run);
  }
  t.events.reserve(t.events.size() + items.size());
  std::map<Key, int> occurrences;
  std::map<std::pair<Key, int>, StrId> op_ids;  // each distinct op_id formatted once
  // Consecutive items mostly share their op_id (a run's kernels): the last one is kept at hand.
  std::pair<Key, int> last{};
  std::pair<int64_t, int> last_run{-1, 0};  // (run, index) of `last`'s key
  StrId last_id = kEmptyStr;
  for (size_t i = 0; i < items.size(); ++i) {
    const Pending& p = pending[i];
    const Item& it = items[i];
    const Key key = key_of(p);
    int index = 0;
    if (p.run >= 0) {
      if (last_id != kEmptyStr && key == last.first && p.run == last_run.first) {
        index = last_run.second;
      } else {
        const std::set<int64_t>& used = runs[key];
        index = static_cast<int>(std::distance(used.begin(), used.find(p.run)));
      }
      last_run = {p.run, index};
    } else if (it.collective) {
      index = occurrences[key]++;
    }
    if (last_id == kEmptyStr || index != last.second || key != last.first) {
      auto [found, fresh] = op_ids.try_emplace({key, index}, kEmptyStr);
      if (fresh) {
        found->second = t.strings.Intern(FormatOpId(
            OpId{p.micro, p.phase, std::string(t.Str(p.unit)), std::string(t.Str(p.what)), index}));
      }
      last = {key, index};
      last_id = found->second;
    }
    const Event& e = *it.event;
    // The name and op_id are interned in t.strings already: set as ids, not looked up again.
    WorkEvent& w = t.AddWork(rank_, it.lane, {}, {}, e.start_ns, e.dur_ns);
    w.name = e.name;
    w.op_id = last_id;
    if (it.collective) {
      static const CommArgs kNone;
      const CommSize size = SizeOf(it.lane, it.a != nullptr ? *it.a : kNone,
                                   it.b != nullptr ? *it.b : kNone, world_size_);
      w.bytes = size.bytes;
      w.group_size = size.group_size;
    }
    ++t.import.work_events;
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
