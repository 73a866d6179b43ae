// Reads traces: our format (formats.md §3) and, through kineto_import, PyTorch profiler traces.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "core/trace/json_text.h"
#include "core/trace/kineto_import.h"
#include "core/trace/mapped_text.h"
#include "core/trace/trace_io.h"
#include "core/trace/trace_sax.h"
#include "core/util/file_io.h"

namespace shardscope {

using trace_internal::FieldPath;
using trace_internal::RawArg;
using trace_internal::RawEvent;
using trace_internal::RawValue;

namespace {

// Decimal text ("-12.3456"): the digits read once, no exponent; false for anything else.
bool PlainUsToNs(std::string_view text, int64_t* ns) {
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) ++i;
  constexpr uint64_t kMax = INT64_MAX;
  uint64_t whole = 0;
  size_t digits = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
    const unsigned digit = static_cast<unsigned>(text[i] - '0');
    if (whole > (kMax - digit) / 10) return false;  // whole * 10 + digit > INT64_MAX
    whole = whole * 10 + digit;
  }
  uint64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
      if (frac_digits < 3) {
        frac = frac * 10 + static_cast<unsigned>(text[i] - '0');
        ++frac_digits;
      } else if (frac_digits == 3) {
        round_up = text[i] >= '5';  // half away from zero on the first dropped digit
        ++frac_digits;
      }
    }
  }
  if (i != text.size() || digits == 0) return false;
  while (frac_digits < 3) {
    frac *= 10;
    ++frac_digits;
  }
  const unsigned __int128 total =
      static_cast<unsigned __int128>(whole) * 1000 + frac + (round_up ? 1 : 0);
  if (total > static_cast<unsigned __int128>(INT64_MAX)) return false;
  *ns = negative ? -static_cast<int64_t>(total) : static_cast<int64_t>(total);
  return true;
}

}  // namespace

bool ParseUsToNs(std::string_view text, int64_t* ns) {
  // Plain decimals are every ts and dur a writer gives, so they go first; text with an
  // exponent cannot pass as one, and only what fails is looked at again.
  if (PlainUsToNs(text, ns)) return true;
  if (text.find_first_of("eE") == std::string_view::npos) return false;
  // Exponent forms are rare (Kineto never writes them); a long double is exact enough.
  std::string copy(text);
  char* end = nullptr;
  const long double v = std::strtold(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(static_cast<double>(v))) return false;
  const long double scaled = std::round(v * 1000.0L);
  if (scaled > 9.2e18L || scaled < -9.2e18L) return false;
  *ns = static_cast<int64_t>(scaled);
  return true;
}

namespace {

constexpr std::string_view kFormat = "shardscope-trace/1";

// Reads our own format into a Trace.
class ShardscopeSink : public trace_internal::RawEventSink {
 public:
  ShardscopeSink(const std::string& source, Trace* trace) : source_(source), trace_(trace) {}

  Status OnTopLevel(const std::string& key, const std::string& json_text, bool) override {
    if (key != "metadata") return Status::Ok();
    metadata_seen_ = true;
    nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
    if (!j.is_object()) {
      Problem("metadata: expected an object");
      return Status::Ok();
    }
    TraceMetadata& m = trace_->metadata;
    for (auto& [k, v] : j.items()) {
      if (k == "format") {
        format_seen_ = true;
        if (!v.is_string()) {
          Problem(fmt::format("metadata.format: expected \"{}\", got {}", kFormat, v.dump()));
        } else {
          m.format = v.get<std::string>();
          if (m.format != kFormat)
            Problem(fmt::format("metadata.format: expected \"{}\", got \"{}\"", kFormat, m.format));
        }
      } else if (k == "kind") {
        kind_seen_ = true;
        if (!v.is_string() || (v != "predicted" && v != "measured")) {
          Problem("metadata.kind: expected \"predicted\" or \"measured\", got " + v.dump());
        } else {
          m.kind = v.get<std::string>();
        }
      } else if (k == "tool_version") {
        tool_seen_ = true;
        if (!v.is_string()) {
          Problem("metadata.tool_version: expected a string, got " + v.dump());
        } else {
          m.tool_version = v.get<std::string>();
        }
      } else if (k == "scenario") {
        m.scenario = v;
      } else if (k == "summary") {
        m.summary = v;
      } else if (k == "device") {
        m.device = v;
      } else if (k == "library_versions") {
        m.library_versions = v;
      } else {
        m.extra[k] = v;
      }
    }
    return Status::Ok();
  }

  Status OnEvent(const RawEvent& e) override {
    ++trace_->import.events_read;
    if (e.ph.type != RawValue::Type::kString || e.ph.text.empty()) {
      return InvalidInput(FieldPath(source_, e.index, "ph") +
                          ": expected a string such as \"X\", got " + std::string(e.ph.TypeName()));
    }
    const char ph = e.ph.text[0];
    if (e.args_not_object)
      return InvalidInput(FieldPath(source_, e.index, "args") + ": expected an object");
    switch (ph) {
      case 'M':
        return OnMetadataEvent(e);
      case 'X':
        return OnWork(e);
      case 'C':
        return OnCounter(e);
      case 'i':
      case 'I':
        return OnMarker(e);
      default:
        Unknown(fmt::format("ph={}", e.ph.text), e.index);
        return Status::Ok();
    }
  }

  // Checks what can only be checked at the end.
  void Finish() {
    if (!metadata_seen_) {
      Problem(
          fmt::format("metadata: missing (expected an object with \"format\": \"{}\", \"kind\", "
                      "\"tool_version\")",
                      kFormat));
      return;
    }
    if (!format_seen_) Problem(fmt::format("metadata.format: missing (expected \"{}\")", kFormat));
    if (!kind_seen_) Problem("metadata.kind: missing (expected \"predicted\" or \"measured\")");
    if (!tool_seen_) Problem("metadata.tool_version: missing (expected e.g. \"shardscope 0.1.0\")");
  }
  bool format_ok() const { return format_seen_ && trace_->metadata.format == kFormat; }

 private:
  void Problem(std::string message) { trace_->import.problems.push_back(source_ + ": " + message); }
  void Unknown(const std::string& what, int64_t index) {
    ++trace_->import.unknown_events;
    ++trace_->import.unknown_by_name[what];
    trace_->import.first_unknown_index.try_emplace(what, index);
  }

  Status Int(const RawEvent& e, const RawValue& v, std::string_view field, int64_t* out) {
    if (v.type != RawValue::Type::kInt) {
      return InvalidInput(FieldPath(source_, e.index, field) + ": expected an integer, got " +
                          std::string(v.TypeName()));
    }
    *out = v.i;
    return Status::Ok();
  }
  // An integer member of args; its field path is built only for the error.
  Status IntArg(const RawEvent& e, const RawArg& a, int64_t* out) {
    if (a.value.type == RawValue::Type::kInt) {
      *out = a.value.i;
      return Status::Ok();
    }
    return Int(e, a.value, "args." + a.key, out);
  }
  Status Rank(const RawEvent& e, int* rank, int* lane) {
    int64_t pid = 0, tid = 0;
    SS_RETURN_IF_ERROR(Int(e, e.pid, "pid", &pid));
    if (e.tid.present()) SS_RETURN_IF_ERROR(Int(e, e.tid, "tid", &tid));
    if (pid < 0 || pid > INT32_MAX)
      return InvalidInput(FieldPath(source_, e.index, "pid") + ": expected a rank ≥ 0");
    if (tid < INT32_MIN || tid > INT32_MAX)
      return InvalidInput(FieldPath(source_, e.index, "tid") + ": out of range");
    *rank = static_cast<int>(pid);
    *lane = static_cast<int>(tid);
    return Status::Ok();
  }
  Status Time(const RawEvent& e, const RawValue& v, std::string_view field, int64_t* ns) {
    if (!RawToNs(v, ns)) {
      return InvalidInput(FieldPath(source_, e.index, field) +
                          ": expected a number of microseconds within ±2^61 ns, got " +
                          (v.is_number() ? v.ToJsonText() : std::string(v.TypeName())));
    }
    return Status::Ok();
  }
  Status Name(const RawEvent& e, std::string_view* name) {
    if (e.name.type != RawValue::Type::kString) {
      return InvalidInput(FieldPath(source_, e.index, "name") + ": expected a string, got " +
                          std::string(e.name.TypeName()));
    }
    *name = e.name.text;
    return Status::Ok();
  }

  // What every timed event carries: rank (pid), lane (tid), name and start time (ts).
  struct Head {
    int rank = 0, lane = 0;
    std::string_view name;
    int64_t ts_ns = 0;
  };
  Status ReadHead(const RawEvent& e, Head* h) {
    SS_RETURN_IF_ERROR(Rank(e, &h->rank, &h->lane));
    SS_RETURN_IF_ERROR(Name(e, &h->name));
    return Time(e, e.ts, "ts", &h->ts_ns);
  }

  // Appends "key":value to the body of an extra-arguments object.
  static void AppendExtraArg(const RawArg& a, std::string* extra) {
    if (!extra->empty()) extra->push_back(',');
    AppendJsonString(a.key, extra);
    extra->push_back(':');
    extra->append(a.value.ToJsonText());
  }
  // Stores a non-empty extra-arguments body in the trace and points `*index` at it.
  void StoreExtraArgs(std::string extra, uint32_t* index) {
    if (extra.empty()) return;
    *index = static_cast<uint32_t>(trace_->extra_args.size());
    trace_->extra_args.push_back(std::move(extra));
  }

  Status OnMetadataEvent(const RawEvent& e) {
    int rank = 0, lane = 0;
    SS_RETURN_IF_ERROR(Rank(e, &rank, &lane));
    std::string_view name;
    SS_RETURN_IF_ERROR(Name(e, &name));
    if (name != "process_name" && name != "thread_name") {
      Unknown(fmt::format("M {}", name), e.index);
      return Status::Ok();
    }
    const RawArg* arg = e.FindArg("name");
    if (arg == nullptr || arg->value.type != RawValue::Type::kString) {
      return InvalidInput(FieldPath(source_, e.index, "args.name") + ": expected a string");
    }
    if (name == "process_name") {
      trace_->rank_names[rank] = arg->value.text;
    } else {
      trace_->lane_names[{rank, lane}] = arg->value.text;
    }
    return Status::Ok();
  }

  Status OnWork(const RawEvent& e) {
    Head h;
    SS_RETURN_IF_ERROR(ReadHead(e, &h));
    int64_t dur_ns = 0;
    SS_RETURN_IF_ERROR(Time(e, e.dur, "dur", &dur_ns));
    if (dur_ns < 0)
      return InvalidInput(FieldPath(source_, e.index, "dur") + ": expected a duration ≥ 0");
    if (TraceLaneName(h.lane).empty()) {
      Problem(
          fmt::format("traceEvents[{}].tid: unknown lane {} (expected 1 compute, 2 all_gather, "
                      "3 reduce_scatter, 4 all_reduce, 5 h2d, 6 d2h, 7 p2p)",
                      e.index, h.lane));
    }
    std::string_view op_id;
    const RawArg* op = e.FindArg("op_id");
    if (op == nullptr) {
      Problem(fmt::format("traceEvents[{}].args.op_id: missing (event \"{}\")", e.index, h.name));
    } else if (op->value.type != RawValue::Type::kString) {
      return InvalidInput(FieldPath(source_, e.index, "args.op_id") + ": expected a string");
    } else if (op->value.text.empty()) {
      // Read as no op_id by every tool (diff cannot join it, the uniqueness check skips it).
      Problem(fmt::format(R"(traceEvents[{}].args.op_id: empty (event "{}"; expected its op_id))",
                          e.index, h.name));
    } else {
      op_id = op->value.text;
    }
    WorkEvent& w = trace_->AddWork(h.rank, h.lane, {}, {}, h.ts_ns, dur_ns);
    w.op_id =
        trace_->strings.Intern(op_id);  // before the name: ids in the order AddWork gives them
    w.name = InternName(h.name);
    std::string extra;
    for (size_t k = 0; k < e.num_args; ++k) {
      const RawArg& a = e.args[k];
      const std::string_view key = a.key;  // compared by length first, no strlen
      if (key == "op_id") continue;
      if (key == "bytes" || key == "group_size") {
        int64_t v = 0;
        SS_RETURN_IF_ERROR(IntArg(e, a, &v));
        if (key == "bytes") {
          if (v < 0 || v > trace_internal::kMaxTraceBytes)
            return InvalidInput(FieldPath(source_, e.index, "args.bytes") +
                                ": expected a byte count in [0, 2^60]");
          w.bytes = v;
        } else {
          if (v < 0 || v > INT32_MAX)
            return InvalidInput(FieldPath(source_, e.index, "args.group_size") +
                                ": expected a count ≥ 0");
          w.group_size = static_cast<int32_t>(v);
        }
      } else if (key == "busbw_GBps" || key == "flops") {
        double v = 0;
        if (a.value.type == RawValue::Type::kNull) {
          Problem(fmt::format("traceEvents[{}].args.{}: null (the writer had no finite value)",
                              e.index, a.key));
        } else if (!a.value.is_number()) {
          return InvalidInput(FieldPath(source_, e.index, "args." + a.key) +
                              ": expected a number, got " + std::string(a.value.TypeName()));
        } else {
          v = a.value.d;
        }
        (key == "flops" ? w.flops : w.busbw_gbps) = v;
      } else {
        AppendExtraArg(a, &extra);
      }
    }
    StoreExtraArgs(std::move(extra), &w.extra_args);
    ++trace_->import.work_events;
    return Status::Ok();
  }

  Status OnCounter(const RawEvent& e) {
    Head h;
    SS_RETURN_IF_ERROR(ReadHead(e, &h));
    for (size_t k = 0; k < e.num_args; ++k) {
      const RawArg& a = e.args[k];
      int64_t v = 0;
      SS_RETURN_IF_ERROR(IntArg(e, a, &v));
      if (v < 0 || v > trace_internal::kMaxTraceBytes) {
        return InvalidInput(FieldPath(source_, e.index, "args." + a.key) +
                            ": expected a byte count in [0, 2^60]");
      }
      if (a.key.size() < 6 || a.key.compare(a.key.size() - 6, 6, "_bytes") != 0) {
        Problem(fmt::format("traceEvents[{}].args.{}: counter key must end in \"_bytes\"", e.index,
                            a.key));
      }
      trace_->AddCounterSample(h.rank, h.ts_ns, h.name, a.key, v);
      ++trace_->import.counter_samples;
    }
    return Status::Ok();
  }

  Status OnMarker(const RawEvent& e) {
    Head h;
    SS_RETURN_IF_ERROR(ReadHead(e, &h));
    Marker& m = trace_->AddMarker(h.rank, h.ts_ns, h.name);
    std::string extra;
    for (size_t k = 0; k < e.num_args; ++k) AppendExtraArg(e.args[k], &extra);
    StoreExtraArgs(std::move(extra), &m.extra_args);
    ++trace_->import.markers;
    return Status::Ok();
  }

  // Event names repeat (a handful of kernel and collective names): the last few are kept, so
  // most names skip the string table's lookup, a cache miss in a table of every op_id.
  StrId InternName(std::string_view name) {
    for (const auto& [text, id] : recent_names_) {
      if (text == name) return id;
    }
    const StrId id = trace_->strings.Intern(name);
    recent_names_[next_name_slot_] = {trace_->strings.Get(id), id};
    next_name_slot_ = (next_name_slot_ + 1) % recent_names_.size();
    return id;
  }

  const std::string& source_;
  Trace* trace_;
  bool metadata_seen_ = false, format_seen_ = false, kind_seen_ = false, tool_seen_ = false;
  std::array<std::pair<std::string_view, StrId>, 8> recent_names_{};
  size_t next_name_slot_ = 0;
};

// Picks the reader from what comes first: Kineto writes its top-level members (schemaVersion,
// deviceProperties, ...) before traceEvents and puts `cat` on its events; we write neither.
class DispatchSink : public trace_internal::RawEventSink {
 public:
  DispatchSink(const std::string& source, TraceFormat format, Trace* trace)
      : format_(format), ours_(source, trace), kineto_(source, trace) {}

  Status OnTopLevel(const std::string& key, const std::string& json_text, bool before) override {
    if (before && trace_internal::IsKinetoTopLevelKey(key)) kineto_hint_ = true;
    SS_RETURN_IF_ERROR(ours_.OnTopLevel(key, json_text, before));
    return kineto_.OnTopLevel(key, json_text, before);
  }
  Status OnEvent(const RawEvent& e) override {
    if (format_ == TraceFormat::kAuto) {
      format_ = (kineto_hint_ || trace_internal::IsKinetoEvent(e)) ? TraceFormat::kKineto
                                                                   : TraceFormat::kShardscope;
    }
    return format_ == TraceFormat::kKineto ? kineto_.OnEvent(e) : ours_.OnEvent(e);
  }
  TraceFormat format() const {
    return format_ == TraceFormat::kAuto
               ? (kineto_hint_ ? TraceFormat::kKineto : TraceFormat::kShardscope)
               : format_;
  }
  ShardscopeSink& ours() { return ours_; }
  trace_internal::KinetoSink& kineto() { return kineto_; }

 private:
  TraceFormat format_;
  bool kineto_hint_ = false;
  ShardscopeSink ours_;
  trace_internal::KinetoSink kineto_;
};

}  // namespace

Result<Trace> ParseTrace(std::string_view text, const std::string& source,
                         const ReadTraceOptions& options) {
  Trace trace;
  trace.import.path = source;
  // A work event takes 110-150 bytes of our text (more in a profiler trace): growing a million
  // events by doubling would copy them about twice over, and room never written costs
  // address space only.
  trace.events.reserve(text.size() / 100);
  DispatchSink sink(source, options.format, &trace);
  SS_RETURN_IF_ERROR(trace_internal::ParseTraceEvents(text, source, &sink));
  if (sink.format() == TraceFormat::kKineto) {
    trace.import.source = "kineto";
    SS_RETURN_IF_ERROR(sink.kineto().Finish());
  } else {
    trace.import.source = "shardscope";
    sink.ours().Finish();
    if (options.format == TraceFormat::kAuto && !sink.ours().format_ok()) {
      return InvalidInput(fmt::format(
          "{}: neither a shardscope trace (metadata.format must be \"{}\") nor a PyTorch profiler "
          "trace (no schemaVersion/deviceProperties/distributedInfo, no event \"cat\")",
          source, kFormat));
    }
  }
  trace.SortEvents();
  return trace;
}

Result<Trace> ReadTrace(const std::string& path, const ReadTraceOptions& options) {
  if (!path.ends_with(".gz")) {
    const trace_internal::MappedText mapped(path);
    if (mapped.mapped()) return ParseTrace(mapped.text(), path, options);
  }
  SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseTrace(text, path, options);
}

}  // namespace shardscope
