// Reading and writing traces (formats.md §3).
//
// Contents:
//   FormatNsAsUs        integer ns → "1234.567" (µs, exactly three decimals, no floating point)
//   ParseUsToNs         "1234.567" / "1.5e3" → ns, exact for decimal text with ≤ 3 decimals
//   SerializeTrace      Trace → Chrome trace-event JSON text (streamed by hand, no DOM)
//   WriteTrace          SerializeTrace + WriteFileAtomic
//   TraceFormat, ReadTraceOptions
//   ParseTrace          JSON text → Trace (ours or PyTorch profiler/Kineto, auto-detected)
//   ReadTrace           the file mapped (or ReadFile, .gz inflated) + ParseTrace
//
// Errors name the file, the event index in traceEvents and the field, e.g.
//   "run.json: traceEvents[12].dur: expected a number".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/trace/trace.h"
#include "core/util/status.h"

namespace shardscope {

// Appends `ns` as microseconds with exactly three decimals: 1 → "0.001", -1500 → "-1.500".
void AppendNsAsUs(int64_t ns, std::string* out);
std::string FormatNsAsUs(int64_t ns);

// Parses a JSON number's text in µs into integer ns. Decimal text is converted exactly
// (digits beyond the third decimal are rounded half away from zero); exponent forms go
// through a long double. False when the text is not a number or overflows int64 ns.
bool ParseUsToNs(std::string_view text, int64_t* ns);

// The trace as Chrome trace-event JSON: M events (process_name, thread_name) first, then all
// other events by time; counter samples whose value did not change are dropped.
std::string SerializeTrace(const Trace& trace);
// SerializeTrace written to `path` with WriteFileAtomic.
Status WriteTrace(const Trace& trace, const std::string& path);

enum class TraceFormat {
  kAuto,        // ours when metadata.format is present, Kineto when it looks like one
  kShardscope,  // formats.md §3 (check-trace forces this)
  kKineto,      // PyTorch profiler export_chrome_trace
};

// Syntax and type errors fail the read; format problems that leave the data usable (missing
// metadata fields, unknown tids, counter keys without `_bytes`, missing op_ids) are listed in
// Trace::import.problems, which check-trace reports.
struct ReadTraceOptions {
  TraceFormat format = TraceFormat::kAuto;
};

// Parses trace JSON; `source` names the input in error messages.
Result<Trace> ParseTrace(std::string_view text, const std::string& source,
                         const ReadTraceOptions& options = {});
// Reads `path` (a `.gz` name is inflated) and parses it.
Result<Trace> ReadTrace(const std::string& path, const ReadTraceOptions& options = {});

}  // namespace shardscope
