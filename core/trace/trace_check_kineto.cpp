// check-trace for PyTorch profiler (Kineto) traces and format detection (trace_check.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/trace/kineto_import.h"
#include "core/trace/trace_check.h"
#include "core/trace/trace_sax.h"

namespace shardscope {
namespace {

using trace_internal::FieldPath;
using trace_internal::RawEvent;
using trace_internal::RawValue;

// Decides the format by ReadTrace's rule: Kineto's top-level members before traceEvents, or
// the first event's `cat`.
class DetectSink : public trace_internal::RawEventSink {
 public:
  Status OnTopLevel(const std::string& key, const std::string&, bool before) override {
    if (before && trace_internal::IsKinetoTopLevelKey(key)) hint_ = true;
    return Status::Ok();
  }
  Status OnEvent(const RawEvent& e) override {
    if (!decided_) kineto_ = hint_ || trace_internal::IsKinetoEvent(e);
    decided_ = true;
    return Status::Ok();
  }
  TraceFormat format() const {
    return (decided_ ? kineto_ : hint_) ? TraceFormat::kKineto : TraceFormat::kShardscope;
  }

 private:
  bool hint_ = false, decided_ = false, kineto_ = false;
};

constexpr size_t kMaxProblemsListed = 200;

class KinetoCheckSink : public trace_internal::RawEventSink {
 public:
  KinetoCheckSink(const std::string& source, KinetoCheck* out) : source_(source), out_(out) {}

  Status OnTopLevel(const std::string& key, const std::string& json_text, bool) override {
    if (key != "schemaVersion" && key != "distributedInfo" && key != "deviceProperties") {
      return Status::Ok();
    }
    const auto j = nlohmann::json::parse(json_text, nullptr, false);
    if (key == "schemaVersion" && !j.is_number_integer()) {
      Problem(fmt::format("{}: schemaVersion: expected an integer, got {}", source_, json_text));
    } else if (key == "deviceProperties" && !j.is_array()) {
      Problem(fmt::format("{}: deviceProperties: expected an array", source_));
    } else if (key == "distributedInfo") {
      if (!j.is_object()) {
        Problem(fmt::format("{}: distributedInfo: expected an object", source_));
        return Status::Ok();
      }
      auto integer = [&](const char* field, int64_t min, int* into) {
        if (!j.contains(field)) return;
        if (!j[field].is_number_integer() || j[field].get<int64_t>() < min ||
            j[field].get<int64_t>() > INT32_MAX) {
          Problem(fmt::format("{}: distributedInfo.{}: expected an integer ≥ {}, got {}", source_,
                              field, min, j[field].dump()));
        } else {
          *into = j[field].get<int>();
        }
      };
      integer("rank", 0, &out_->rank);
      integer("world_size", 1, &out_->world_size);
    }
    return Status::Ok();
  }

  Status OnEvent(const RawEvent& e) override {
    ++out_->events;
    index_ = e.index;
    if (e.ph.type != RawValue::Type::kString || !KnownPh(e.ph.text)) {
      Field("ph", e.ph,
            "one of the trace-event phases (X, B, E, i, I, C, M, s, t, f, b, n, e, P, N, O, D, "
            "R)");
      return Status::Ok();
    }
    const std::string& ph = e.ph.text;
    ++out_->events_by_ph[ph];
    if (e.name.type != RawValue::Type::kString) Field("name", e.name, "a string");
    if (e.cat.present() && e.cat.type != RawValue::Type::kString) Field("cat", e.cat, "a string");
    CheckId("pid", e.pid, true);
    CheckId("tid", e.tid, ph != "M" && ph != "C");
    int64_t ts = 0, dur = 0;
    if (e.ts.present() || ph != "M") {
      if (!trace_internal::RawToNs(e.ts, &ts)) Field("ts", e.ts, "a number of microseconds");
    }
    if (ph == "X") {
      if (!trace_internal::RawToNs(e.dur, &dur) || dur < 0) {
        Field("dur", e.dur, "a duration ≥ 0 in microseconds");
      } else if (ts > trace_internal::kMaxTraceNs - dur) {
        Problem(fmt::format("{}: ts + dur: beyond 2^61 ns", FieldPath(source_, index_, "dur")));
      }
    }
    if (e.args_not_object) Problem(FieldPath(source_, index_, "args") + ": expected an object");
    if ((ph == "i" || ph == "I") && e.s.present() &&
        !(e.s.type == RawValue::Type::kString &&
          (e.s.text == "g" || e.s.text == "p" || e.s.text == "t"))) {
      Field("s", e.s, "\"g\", \"p\" or \"t\"");
    }
    if ((ph == "s" || ph == "t" || ph == "f") &&
        !(e.id.type == RawValue::Type::kInt || e.id.type == RawValue::Type::kString)) {
      Field("id", e.id, "a flow id (an integer or a string)");
    }
    return Status::Ok();
  }

 private:
  static bool KnownPh(std::string_view ph) {
    static constexpr std::string_view kPhases[] = {"X", "B", "E", "i", "I", "C", "M", "s", "t",
                                                   "f", "b", "n", "e", "P", "N", "O", "D", "R"};
    for (std::string_view p : kPhases) {
      if (ph == p) return true;
    }
    return false;
  }
  void CheckId(const char* field, const RawValue& v, bool required) {
    if (!v.present() && !required) return;
    if (v.type != RawValue::Type::kInt && v.type != RawValue::Type::kString) {
      Field(field, v, "an integer or a string");
    }
  }
  void Field(const char* field, const RawValue& v, const char* expected) {
    Problem(fmt::format("{}: expected {}, got {}", FieldPath(source_, index_, field), expected,
                        v.Described()));
  }
  void Problem(std::string p) {
    ++out_->problem_count;
    if (out_->problems.size() < kMaxProblemsListed) out_->problems.push_back(std::move(p));
  }

  const std::string& source_;
  KinetoCheck* out_;
  int64_t index_ = 0;
};

}  // namespace

Result<TraceFormat> DetectTraceFormat(std::string_view text, const std::string& source) {
  DetectSink sink;
  SS_RETURN_IF_ERROR(trace_internal::ParseTraceEvents(text, source, &sink));
  return sink.format();
}

Result<KinetoCheck> CheckKinetoTrace(std::string_view text, const std::string& source) {
  KinetoCheck check;
  KinetoCheckSink sink(source, &check);
  SS_RETURN_IF_ERROR(trace_internal::ParseTraceEvents(text, source, &sink));
  return check;
}

}  // namespace shardscope
