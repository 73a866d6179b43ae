// Streaming parse of a Chrome trace-event file (internal to core/trace). One SAX pass (json_scan.h)
// over the text hands each `traceEvents` entry to a consumer as a flat RawEvent whose storage is
// reused, so a million events never exist as a DOM. Number texts are kept, so `ts` converts to ns
// exactly. Every other top-level member is captured as JSON (metadata, distributedInfo, ...).
//
// Contents:
//   RawValue         a scalar (with its source text) or a nested value as JSON text
//   RawEvent         one traceEvents entry: ph, name, cat, pid, tid, ts, dur, s, args
//   RawEventSink     the consumer interface
//   ParseTraceEvents runs the pass; errors name the source and byte offset or event index
//   RawToNs          ts/dur µs → ns
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/status.h"

namespace shardscope::trace_internal {

struct RawValue {
  enum class Type { kAbsent, kNull, kBool, kInt, kFloat, kString, kNested };
  Type type = Type::kAbsent;
  bool b = false;
  int64_t i = 0;     // kInt (unsigned values above INT64_MAX become kFloat)
  double d = 0;      // kFloat, and kInt as a double
  std::string text;  // kString: the string; kFloat: the number text; kNested: JSON

  bool present() const { return type != Type::kAbsent; }
  bool is_number() const { return type == Type::kInt || type == Type::kFloat; }
  // The value as JSON text (strings quoted and escaped).
  std::string ToJsonText() const;
  // A short description for error messages ("a string", "an object", ...).
  std::string_view TypeName() const;
  // The same with a scalar's value, for messages about a value out of range or of the wrong
  // kind ("a number (1e+300)", "a string (\"Q\")"); arrays and objects by their type alone.
  std::string Described() const;
};

struct RawArg {
  std::string key;
  RawValue value;
};

struct RawEvent {
  int64_t index = 0;  // position in traceEvents
  RawValue ph, name, cat, pid, tid, ts, dur, s, id;
  std::vector<RawArg> args;  // only args[0, num_args) are valid (storage is reused)
  size_t num_args = 0;
  bool args_present = false;
  bool args_not_object = false;  // `args` was present but not an object
  const RawArg* FindArg(std::string_view key) const;
};

class RawEventSink {
 public:
  virtual ~RawEventSink() = default;
  // A top-level member other than traceEvents, seen before the traceEvents array (`before`)
  // or after it. Return a non-OK status to stop.
  virtual Status OnTopLevel(const std::string& key, const std::string& json_text, bool before) = 0;
  // One entry of traceEvents. Return a non-OK status to stop.
  virtual Status OnEvent(const RawEvent& event) = 0;
};

// Parses `text`; `source` names it in errors. Fails when the text is not JSON, the top level is
// not an object, traceEvents is missing or not an array, or an entry is not an object; and, with
// CheckJsonText's message (json_guard.h), when it nests deeper than kMaxJsonDepth or holds a
// number beyond a double: no separate guard pass is needed before it.
Status ParseTraceEvents(std::string_view text, const std::string& source, RawEventSink* sink);

// Times beyond ±2^61 ns (73 years) are refused, so start + dur and differences of times never
// overflow int64 in the analyses.
constexpr int64_t kMaxTraceNs = int64_t{1} << 61;
// Byte counts (event bytes, counter values) must lie in [0, 2^60].
constexpr int64_t kMaxTraceBytes = int64_t{1} << 60;

// A `ts`/`dur` value in µs as integer ns (exact for integers and decimal text); false when it
// is not a number or lies beyond ±kMaxTraceNs.
bool RawToNs(const RawValue& v, int64_t* ns);

// Typed access with messages like "run.json: traceEvents[3].pid: expected an integer, got a
// string".
std::string FieldPath(const std::string& source, int64_t index, std::string_view field);

}  // namespace shardscope::trace_internal
