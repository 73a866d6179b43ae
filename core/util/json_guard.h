// Checks on JSON text made before nlohmann builds a value from it: nlohmann's values copy and
// destroy recursively, so a document nested 100,000 deep overflows the stack, and a number
// beyond the double range makes it throw. Both become bad-input errors naming the source.
//
// Contents:
//   kMaxJsonDepth   the deepest nesting of arrays and objects any input may have
//   CheckJsonText   iterative scan: nesting depth and out-of-range numbers, with the key path
//   ParseJsonInput  CheckJsonText, then the document; a key twice in one object is an error
//   InvalidUtf8At   where text stops being UTF-8 (a JSON string must be, or dump() throws)
//   CheckUtf8       the same as an error naming the source and the byte
//   DumpJson        the text of a document shardscope writes (never throws on bytes)
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
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

// The JSON document of a user's file (scenario, config.json, module tree, calibration, price or
// run table): CheckJsonText, then parsed. nlohmann keeps the last of a key given twice in one
// object, so `"gpus_per_node": 4, "gpus_per_node": 2` would plan 2 GPUs without a word; here
// it is an error naming the key and where. Errors (InvalidInput), prefixed with `source`:
//   "<source>: not valid JSON at byte N: <parser's reason>[ (expected <expected>)]"
//   "<source>: cluster: the key \"gpus_per_node\" appears twice in one object"
// `expected` ("a config.json") names what the file should have been, for the parse error.
Result<nlohmann::json> ParseJsonInput(std::string_view text, const std::string& source,
                                      std::string_view expected = {});

// The offset of the first byte where `text` stops being well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing past U+10FFFF), or nullopt. nlohmann's parser checks
// this inside a file's strings, but text a user hands over as it is (a `--set` or `--vary` value
// that is not JSON, a CSV cell) becomes a JSON string unchecked, and nlohmann's dump() throws
// on it when the scenario or a report is written.
std::optional<size_t> InvalidUtf8At(std::string_view text);

// InvalidInput "<source>: not valid UTF-8 (byte 0xFF at offset 3)" when InvalidUtf8At finds a
// byte; `source` names the value ("--set description") or the file and line.
Status CheckUtf8(std::string_view text, const std::string& source);

// nlohmann's dump(indent), except that bytes that are not UTF-8 inside a string become U+FFFD
// where dump() would throw: inputs are checked (InvalidUtf8At), but a file's name need not be
// UTF-8 on Linux, and reports, summaries and traces carry paths. Every JSON file and message
// shardscope writes goes through it.
std::string DumpJson(const nlohmann::json& doc, int indent = -1);

}  // namespace shardscope
