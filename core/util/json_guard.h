// Checks on JSON text made before nlohmann builds a value from it: nlohmann's values copy and
// destroy recursively, so a document nested 100,000 deep overflows the stack, and a number
// beyond the double range makes it throw. Both become bad-input errors naming the source.
//
// Contents:
//   kMaxJsonDepth   the deepest nesting of arrays and objects any input may have
//   CheckJsonText   iterative scan: nesting depth and out-of-range numbers, with the key path
#pragma once

#include <string>
#include <string_view>

#include "core/util/status.h"

namespace shardscope {

// No shardscope format nests beyond a few dozen levels; 512 leaves room for any real module
// tree while keeping every recursive walk far inside the default 8 MiB stack (also under ASan).
inline constexpr int kMaxJsonDepth = 512;

// Scans `text` once, without recursion (strings and escapes respected). Errors (InvalidInput),
// prefixed with `source` (a file name, "--set key"):
//   "<source>: JSON nested deeper than 512 levels at <path> (line L); ..."
//   "<source>: <path>: number 1e400 is outside the range of a double (line L)"
// Text that is not JSON at all passes: the parser that follows reports it.
Status CheckJsonText(std::string_view text, const std::string& source,
                     int max_depth = kMaxJsonDepth);

}  // namespace shardscope
