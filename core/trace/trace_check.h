// Validation of a trace against formats.md §3 (`shardscope check-trace`).
//
// Contents:
//   CheckTrace   every problem found, each a full sentence naming where it is
//
// Checked: what the reader noted (metadata format/kind/tool_version, known tids, counter keys
// ending in `_bytes`, op_ids present), plus events that overlap within one lane, and op_ids
// that repeat within one rank and step (steps split at step_begin markers).
#pragma once

#include <string>
#include <vector>

#include "core/trace/trace.h"

namespace shardscope {

// Problems of `trace` (read with ReadTrace); empty when valid. Events must be sorted by
// (rank, lane, start), as ReadTrace leaves them.
std::vector<std::string> CheckTrace(const Trace& trace);

}  // namespace shardscope
