#include "core/trace/trace_sax.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "core/trace/json_scan.h"
#include "core/trace/json_text.h"
#include "core/trace/trace_io.h"
#include "core/util/json_guard.h"
#include "core/util/terminal_text.h"

namespace shardscope::trace_internal {

std::string RawValue::ToJsonText() const {
  switch (type) {
    case Type::kAbsent:
    case Type::kNull:
      return "null";
    case Type::kBool:
      return b ? "true" : "false";
    case Type::kInt:
      return fmt::format("{}", i);
    case Type::kFloat:
    case Type::kNested:
      return text;
    case Type::kString: {
      std::string out;
      AppendJsonString(text, &out);
      return out;
    }
  }
  return "null";
}

std::string_view RawValue::TypeName() const {
  switch (type) {
    case Type::kAbsent:
      return "nothing";
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "a boolean";
    case Type::kInt:
      return "an integer";
    case Type::kFloat:
      return "a number";
    case Type::kString:
      return "a string";
    case Type::kNested:
      return (!text.empty() && text[0] == '[') ? "an array" : "an object";
  }
  return "?";
}

std::string RawValue::Described() const {
  if (type == Type::kAbsent || type == Type::kNull || type == Type::kNested) {
    return std::string(TypeName());
  }
  return std::string(TypeName()) + " (" + Shortened(ToJsonText()) + ")";
}

const RawArg* RawEvent::FindArg(std::string_view key) const {
  for (size_t i = 0; i < num_args; ++i) {
    if (args[i].key == key) return &args[i];
  }
  return nullptr;
}

bool RawToNs(const RawValue& v, int64_t* ns) {
  int64_t out = 0;
  if (v.type == RawValue::Type::kInt) {
    if (v.i > kMaxTraceNs / 1000 || v.i < -kMaxTraceNs / 1000) return false;
    out = v.i * 1000;
  } else if (v.type != RawValue::Type::kFloat || !ParseUsToNs(v.text, &out)) {
    return false;
  }
  if (out > kMaxTraceNs || out < -kMaxTraceNs) return false;
  *ns = out;
  return true;
}

std::string FieldPath(const std::string& source, int64_t index, std::string_view field) {
  return fmt::format("{}: traceEvents[{}].{}", source, index, field);
}

namespace {

using Json = nlohmann::json;

// Builds JSON text for a nested value token by token.
class Capture {
 public:
  void Reset() {
    text_.clear();
    first_.clear();
    after_key_ = false;
  }
  void Scalar(std::string_view token) {
    BeforeValue();
    text_.append(token);
  }
  void String(std::string_view s) {
    BeforeValue();
    AppendJsonString(s, &text_);
  }
  void Open(char c) {
    BeforeValue();
    text_.push_back(c);
    first_.push_back(true);
  }
  void Close(char c) {
    text_.push_back(c);
    first_.pop_back();
  }
  void Key(std::string_view k) {
    if (!first_.back()) text_.push_back(',');
    first_.back() = false;
    AppendJsonString(k, &text_);
    text_.push_back(':');
    after_key_ = true;
  }
  bool closed() const { return first_.empty(); }
  std::string& text() { return text_; }

 private:
  void BeforeValue() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) text_.push_back(',');
      first_.back() = false;
    }
  }
  std::string text_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

class Handler {
 public:
  Handler(const std::string& source, RawEventSink* sink) : source_(source), sink_(sink) {}

  const Status& status() const { return status_; }
  bool saw_events() const { return saw_events_; }

  bool null() { return OnScalar(RawValue::Type::kNull, false, 0, 0, "null"); }
  bool boolean(bool v) { return OnScalar(RawValue::Type::kBool, v, 0, 0, v ? "true" : "false"); }
  // Integers keep no text (formatting a million of them costs); ToJsonText formats on demand.
  bool number_integer(int64_t v) {
    if (capturing_) {
      char buf[24];
      const auto r = std::to_chars(buf, buf + sizeof(buf), v);
      capture_.Scalar(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
      return true;
    }
    return OnScalar(RawValue::Type::kInt, false, v, static_cast<double>(v), {});
  }
  bool number_unsigned(uint64_t v) {
    if (v <= static_cast<uint64_t>(INT64_MAX)) return number_integer(static_cast<int64_t>(v));
    return OnScalar(RawValue::Type::kFloat, false, 0, static_cast<double>(v), fmt::format("{}", v));
  }
  bool number_float(double v, std::string_view s) {
    return OnScalar(RawValue::Type::kFloat, false, 0, v, s);
  }
  bool string(std::string_view s) {
    if (capturing_) {
      capture_.String(s);
      return true;
    }
    RawValue* slot = Slot();
    if (slot == nullptr) return false;
    slot->type = RawValue::Type::kString;
    slot->text.assign(s);
    if (depth_ == 1) return Deliver(top_key_, slot->ToJsonText());
    return true;
  }

  bool start_object(std::size_t) { return Open('{'); }
  bool start_array(std::size_t) { return Open('['); }
  bool end_object() { return Close('}'); }
  bool end_array() { return Close(']'); }

  bool key(std::string_view k) {
    if (capturing_) {
      capture_.Key(k);
      return true;
    }
    // A key twice in one object is refused, as the JSON documents' reader refuses it
    // (json_guard.h): the last value would win silently ("ts": 1, "ts": 900 read as 900, a
    // second "traceEvents" ignored).
    if (depth_ == 3) {
      field_ = FieldOf(k);
      const RawValue* known = Member(field_);
      if ((field_ == Field::kArgs && event_.args_present) ||
          (known != nullptr && known->type != RawValue::Type::kAbsent)) {
        return Repeated(fmt::format("traceEvents[{}]", next_index_), k);
      }
    } else if (depth_ == 4) {
      for (size_t i = 0; i < event_.num_args; ++i) {
        if (event_.args[i].key == k) {
          return Repeated(fmt::format("traceEvents[{}].args", next_index_), k);
        }
      }
      if (event_.num_args == event_.args.size()) event_.args.emplace_back();
      RawArg& arg = event_.args[event_.num_args++];
      arg.key.assign(k);
      arg.value.type = RawValue::Type::kAbsent;
      arg.value.text.clear();
    } else if (depth_ == 1) {
      if (std::find(top_keys_.begin(), top_keys_.end(), k) != top_keys_.end()) {
        return Repeated("", k);
      }
      top_keys_.emplace_back(k);
      top_key_.assign(k);
    }
    return true;
  }

  void ScanError(std::size_t position, const std::string& what) {
    if (status_.ok())
      status_ =
          InvalidInput(fmt::format("{}: not valid JSON at byte {}: {}", source_, position, what));
  }

 private:
  // Where a scalar at the current position goes; nullptr (with status_) when it is misplaced.
  RawValue* Slot() {
    if (depth_ == 0) {
      status_ =
          InvalidInput(source_ + ": expected a JSON object with \"traceEvents\" at the top level");
      return nullptr;
    }
    if (depth_ == 1) {
      if (top_key_ == "traceEvents") {
        status_ = InvalidInput(source_ + ": traceEvents: expected an array");
        return nullptr;
      }
      top_scalar_.type = RawValue::Type::kAbsent;
      return &top_scalar_;
    }
    if (depth_ == 2) {  // an element of traceEvents that is not an object
      status_ = InvalidInput(
          fmt::format("{}: traceEvents[{}]: expected an object", source_, next_index_));
      return nullptr;
    }
    if (depth_ == 3) return EventField(field_);
    return &event_.args[event_.num_args - 1].value;  // depth 4: an args member
  }

  bool Repeated(const std::string& where, std::string_view k) {
    status_ = InvalidInput(fmt::format(
        "{}: {}the key \"{}\" appears twice in one object (the last would win silently)", source_,
        where.empty() ? std::string() : where + ": ", k));
    return false;
  }

  // An event's members, told apart once at their key (every event has six or more).
  enum class Field { kPh, kName, kCat, kPid, kTid, kTs, kDur, kS, kId, kArgs, kOther };
  static Field FieldOf(std::string_view k) {
    switch (k.size()) {
      case 1:
        return k[0] == 's' ? Field::kS : Field::kOther;
      case 2:
        if (k == "ph") return Field::kPh;
        if (k == "ts") return Field::kTs;
        if (k == "id") return Field::kId;
        return Field::kOther;
      case 3:
        if (k == "pid") return Field::kPid;
        if (k == "tid") return Field::kTid;
        if (k == "dur") return Field::kDur;
        if (k == "cat") return Field::kCat;
        return Field::kOther;
      case 4:
        if (k == "name") return Field::kName;
        if (k == "args") return Field::kArgs;
        return Field::kOther;
      default:
        return Field::kOther;
    }
  }

  // The event member a known key names; nullptr for args and the keys the reader skips.
  RawValue* Member(Field f) {
    switch (f) {
      case Field::kPh:
        return &event_.ph;
      case Field::kName:
        return &event_.name;
      case Field::kCat:
        return &event_.cat;
      case Field::kPid:
        return &event_.pid;
      case Field::kTid:
        return &event_.tid;
      case Field::kTs:
        return &event_.ts;
      case Field::kDur:
        return &event_.dur;
      case Field::kS:
        return &event_.s;
      case Field::kId:
        return &event_.id;
      default:
        return nullptr;
    }
  }

  // Where a scalar of member `f` goes: the member, or a slot that is ignored (args marked).
  RawValue* EventField(Field f) {
    if (RawValue* member = Member(f)) return member;
    if (f == Field::kArgs) {
      event_.args_present = true;
      event_.args_not_object = true;
    }
    ignored_.type = RawValue::Type::kAbsent;
    return &ignored_;
  }

  bool OnScalar(RawValue::Type type, bool b, int64_t i, double d, std::string_view text) {
    if (capturing_) {
      capture_.Scalar(text);
      return true;
    }
    RawValue* slot = Slot();
    if (slot == nullptr) return false;
    slot->type = type;
    slot->b = b;
    slot->i = i;
    slot->d = d;
    slot->text.assign(text);
    if (depth_ == 1) return Deliver(top_key_, slot->ToJsonText());
    return true;
  }

  bool Deliver(const std::string& key, const std::string& text) {
    status_ = sink_->OnTopLevel(key, text, !saw_events_);
    return status_.ok();
  }

  bool Open(char c) {
    // The depth guard's limit (json_guard.h), held here so no second pass is needed; the
    // message comes from CheckJsonText (ParseTraceEvents).
    if (depth_ >= kMaxJsonDepth) {
      status_ = InvalidInput(
          fmt::format("{}: JSON nested deeper than {} levels", source_, kMaxJsonDepth));
      return false;
    }
    if (capturing_) {
      capture_.Open(c);
      ++depth_;
      return true;
    }
    if (depth_ == 0) {
      if (c != '{') {
        status_ = InvalidInput(source_ +
                               ": expected a JSON object with \"traceEvents\" at the top level");
        return false;
      }
      depth_ = 1;
      return true;
    }
    if (depth_ == 1) {
      if (top_key_ == "traceEvents") {
        if (c != '[') {
          status_ = InvalidInput(source_ + ": traceEvents: expected an array");
          return false;
        }
        saw_events_ = true;
        depth_ = 2;
        return true;
      }
      StartCapture(c, CaptureTarget::kTopLevel);
      return true;
    }
    if (depth_ == 2) {
      if (c != '{') {
        status_ = InvalidInput(
            fmt::format("{}: traceEvents[{}]: expected an object", source_, next_index_));
        return false;
      }
      ResetEvent();
      depth_ = 3;
      return true;
    }
    if (depth_ == 3) {
      if (field_ == Field::kArgs && c == '{') {
        event_.args_present = true;
        event_.args_not_object = false;
        depth_ = 4;
        return true;
      }
      capture_slot_ = EventField(field_);
      StartCapture(c, CaptureTarget::kSlot);
      return true;
    }
    // depth 4: a nested args member
    capture_slot_ = &event_.args[event_.num_args - 1].value;
    StartCapture(c, CaptureTarget::kSlot);
    return true;
  }

  bool Close(char c) {
    if (capturing_) {
      capture_.Close(c);
      --depth_;
      if (capture_.closed()) {
        capturing_ = false;
        if (capture_target_ == CaptureTarget::kTopLevel) return Deliver(top_key_, capture_.text());
        capture_slot_->type = RawValue::Type::kNested;
        capture_slot_->text = capture_.text();
      }
      return true;
    }
    if (depth_ == 3) {  // end of one event
      depth_ = 2;
      status_ = sink_->OnEvent(event_);
      ++next_index_;
      return status_.ok();
    }
    --depth_;
    return true;
  }

  enum class CaptureTarget { kTopLevel, kSlot };
  void StartCapture(char c, CaptureTarget target) {
    capturing_ = true;
    capture_target_ = target;
    capture_.Reset();
    capture_.Open(c);
    ++depth_;
  }

  void ResetEvent() {
    event_.index = next_index_;
    for (RawValue* v : {&event_.ph, &event_.name, &event_.cat, &event_.pid, &event_.tid, &event_.ts,
                        &event_.dur, &event_.s, &event_.id}) {
      v->type = RawValue::Type::kAbsent;
    }
    event_.num_args = 0;
    event_.args_present = false;
    event_.args_not_object = false;
  }

  const std::string& source_;
  RawEventSink* sink_;
  Status status_;
  std::vector<std::string> top_keys_;  // the top-level object's keys so far (a handful)
  int depth_ = 0;
  std::string top_key_;
  Field field_ = Field::kOther;
  RawValue top_scalar_;
  RawValue ignored_;
  RawEvent event_;
  int64_t next_index_ = 0;
  bool saw_events_ = false;
  bool capturing_ = false;
  CaptureTarget capture_target_ = CaptureTarget::kTopLevel;
  RawValue* capture_slot_ = nullptr;
  Capture capture_;
};

}  // namespace

namespace {

Status Scan(std::string_view text, const std::string& source, RawEventSink* sink) {
  Handler handler(source, sink);
  const bool ok = ScanJson(text, &handler);
  if (!handler.status().ok()) return handler.status();
  if (!ok) return InvalidInput(source + ": not valid JSON");
  if (!handler.saw_events())
    return InvalidInput(source + ": traceEvents: missing (expected an array of events)");
  return Status::Ok();
}

}  // namespace

Status ParseTraceEvents(std::string_view text, const std::string& source, RawEventSink* sink) {
  const Status scanned = Scan(text, source, sink);
  // Valid JSON the scan took is within the depth guard's limits: it refuses nesting beyond
  // kMaxJsonDepth and numbers beyond a double itself. Only a failed scan runs the guard, whose
  // message (key path, line) then wins as if it had run first.
  if (!scanned.ok()) SS_RETURN_IF_ERROR(CheckJsonText(text, source));
  return scanned;
}

}  // namespace shardscope::trace_internal
