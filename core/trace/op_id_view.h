// ParseOpId (op_id.h) without copies: the parts of an op_id as views into its text, for the
// simulator's per-op reads of a phase or a `what` (one allocation-free pass per op). The
// grammar and the one parser behind both are in op_id.cpp.
//
// Contents:
//   OpIdView        OpId's parts as string_views into the parsed text
//   ParseOpIdView   text → OpIdView; nullopt exactly where ParseOpId fails
#pragma once

#include <optional>
#include <string_view>

#include "core/trace/op_id.h"

namespace shardscope {

struct OpIdView {
  int micro = -1;
  OpPhase phase = OpPhase::kForward;
  std::string_view unit;  // views into the text, which must outlive the OpIdView
  std::string_view what;
  int index = 0;
};

std::optional<OpIdView> ParseOpIdView(std::string_view text);

}  // namespace shardscope
