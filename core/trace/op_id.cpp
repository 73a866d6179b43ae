#include "core/trace/op_id.h"

#include <fmt/core.h>

#include <charconv>

namespace shardscope {
namespace {

// A non-negative decimal integer filling all of `s`.
bool ParseCount(std::string_view s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= 0;
}

Status Malformed(std::string_view text, std::string_view why) {
  return InvalidInput(fmt::format(
      "op_id '{}': {} (expected [mb<k>/]fwd|bwd/<unit>/<what>[:<k>] or [mb<k>/]step/<what>)", text,
      why));
}

}  // namespace

std::string_view OpPhaseName(OpPhase phase) {
  switch (phase) {
    case OpPhase::kForward:
      return "fwd";
    case OpPhase::kBackward:
      return "bwd";
    case OpPhase::kStep:
      return "step";
  }
  return "fwd";
}

std::string FormatOpId(const OpId& id) {
  return MakeOpId(id.phase, id.unit, id.what, id.index, id.micro);
}

// Builders name every op of a step with this: one exact-size allocation, no temporaries.
std::string MakeOpId(OpPhase phase, std::string_view unit, std::string_view what, int index,
                     int micro) {
  char micro_digits[16], index_digits[16];
  const size_t micro_len =
      micro >= 0 ? std::to_chars(micro_digits, micro_digits + 16, micro).ptr - micro_digits : 0;
  const size_t index_len =
      index > 0 ? std::to_chars(index_digits, index_digits + 16, index).ptr - index_digits : 0;
  const std::string_view name = OpPhaseName(phase);
  const bool has_unit = phase != OpPhase::kStep;
  std::string out;
  out.reserve((micro >= 0 ? 3 + micro_len : 0) + name.size() + 1 +
              (has_unit ? unit.size() + 1 : 0) + what.size() + (index > 0 ? 1 + index_len : 0));
  if (micro >= 0) {
    out += "mb";
    out.append(micro_digits, micro_len);
    out += '/';
  }
  out += name;
  out += '/';
  if (has_unit) {
    out += unit;
    out += '/';
  }
  out += what;
  if (index > 0) {
    out += ':';
    out.append(index_digits, index_len);
  }
  return out;
}

Result<OpId> ParseOpId(std::string_view text) {
  OpId id;
  std::string_view rest = text;
  if (rest.starts_with("mb")) {
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos || !ParseCount(rest.substr(2, slash - 2), id.micro)) {
      return Malformed(text, "the micro-batch prefix is not mb<k>/");
    }
    rest.remove_prefix(slash + 1);
  }
  const size_t first = rest.find('/');
  if (first == std::string_view::npos) return Malformed(text, "no '/' after the phase");
  const std::string_view phase = rest.substr(0, first);
  if (phase == "fwd") {
    id.phase = OpPhase::kForward;
  } else if (phase == "bwd") {
    id.phase = OpPhase::kBackward;
  } else if (phase == "step") {
    id.phase = OpPhase::kStep;
  } else {
    return Malformed(text, fmt::format("unknown phase '{}'", phase));
  }
  rest.remove_prefix(first + 1);
  std::string_view what = rest;
  if (id.phase != OpPhase::kStep) {
    const size_t last = rest.rfind('/');
    if (last == std::string_view::npos) return Malformed(text, "no unit part");
    const std::string_view unit = rest.substr(0, last);
    if (unit.empty()) return Malformed(text, "empty unit");
    if (unit.find('/') != std::string_view::npos) return Malformed(text, "'/' inside the unit");
    id.unit = std::string(unit);
    what = rest.substr(last + 1);
  } else if (what.find('/') != std::string_view::npos) {
    return Malformed(text, "a step-level op has no unit part");
  }
  const size_t colon = what.find(':');
  if (colon != std::string_view::npos) {
    if (!ParseCount(what.substr(colon + 1), id.index) || id.index == 0) {
      return Malformed(text, "the index after ':' is not a positive integer");
    }
    what = what.substr(0, colon);
  }
  if (what.empty()) return Malformed(text, "empty operation name");
  id.what = std::string(what);
  return id;
}

std::string UnitOpLabel(const std::string& unit_fqn) {
  return unit_fqn.empty() ? std::string("root") : unit_fqn;
}

std::string ChunkRootLabel(int chunk) { return fmt::format("root.chunk{}", chunk); }
std::string ChunkLabel(int chunk) { return fmt::format("chunk{}", chunk); }

}  // namespace shardscope
