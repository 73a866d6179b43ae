// Validation of a trace for `shardscope check-trace`: ours against formats.md §3, a PyTorch
// profiler (Kineto) trace against what that format promises.
//
// Contents:
//   CheckTrace          every problem of one of our traces, each a full sentence naming where
//   DetectTraceFormat   ours or Kineto, by the rule ReadTrace uses
//   KinetoCheck         what checking a Kineto trace found
//   CheckKinetoTrace    a Kineto trace file's text against the Kineto format
//
// Checked in ours: what the reader noted (metadata format/kind/tool_version, known tids, counter
// keys ending in `_bytes`, op_ids present), plus events that overlap within one lane, op_ids
// that repeat within one rank and step (steps split at step_begin markers), and events that
// start before their rank's first step_begin.
// Checked in a Kineto trace (torch.profiler export_chrome_trace; Chrome trace-event format): the
// top level is an object with a traceEvents array; schemaVersion an integer, distributedInfo an
// object with integer rank ≥ 0 and world_size ≥ 1, deviceProperties an array, when present;
// every event an object with a known `ph`, a string name, pid and tid integers or strings
// (Kineto names some threads), `ts` a number of µs (metadata `M` events may omit it), `X` events
// a `dur` ≥ 0, `cat` a string, `args` an object, instant scopes g/p/t, flow events an id.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/trace_io.h"
#include "core/util/status.h"

namespace shardscope {

// Problems of `trace` (read with ReadTrace); empty when valid. Events must be sorted by
// (rank, lane, start), as ReadTrace leaves them.
std::vector<std::string> CheckTrace(const Trace& trace);

// kKineto or kShardscope for `text` (never kAuto); errors when it is not JSON with traceEvents.
Result<TraceFormat> DetectTraceFormat(std::string_view text, const std::string& source);

struct KinetoCheck {
  std::vector<std::string> problems;  // "<source>: traceEvents[12].ts: expected ...", at most 200
  int64_t problem_count = 0;          // all of them
  int64_t events = 0;
  std::map<std::string, int64_t> events_by_ph;  // "X" → count
  int rank = -1, world_size = -1;               // distributedInfo, when present
};

// Checks `text` (a Kineto trace; `source` names it). Syntax errors (not JSON, no traceEvents
// array, an entry that is not an object) are an InvalidInput status; format problems are listed.
Result<KinetoCheck> CheckKinetoTrace(std::string_view text, const std::string& source);

}  // namespace shardscope
