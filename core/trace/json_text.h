// Small JSON text helpers shared by the trace writer, the readers' argument capture and the
// report printers (internal to core/trace).
//
// Contents:
//   AppendJsonString   a string as a quoted JSON string (escapes ", \ and control characters)
#pragma once

#include <string>
#include <string_view>

namespace shardscope {

// Appends `s` quoted and escaped. Bytes ≥ 0x80 pass through (UTF-8 stays UTF-8).
void AppendJsonString(std::string_view s, std::string* out);

}  // namespace shardscope
