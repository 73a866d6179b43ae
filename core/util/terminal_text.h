// Contents: TerminalSafe, text that came from a user's input (a name, a path, a JSON value)
// made safe to print on a terminal: control bytes shown as \xNN escapes; Shortened, a quoted
// value cut to a message's length.
//
// Why: error messages quote what the user wrote, and a file name or a JSON string may hold an
// ESC sequence (which recolours or moves the terminal's cursor), a NUL, a carriage return or a
// backspace (which overwrite what was printed). Newlines and tabs pass: messages that list
// several problems are laid out with them. Bytes of 0x80 and above are left as they are:
// UTF-8 names print as written.
#pragma once

#include <string>
#include <string_view>

namespace shardscope {

inline std::string TerminalSafe(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += ch;
    }
  }
  return out;
}

// `text` cut to `limit` bytes with "…" after: a quoted value in a message stays one line's
// part (a 1 MB string field must not become a 1 MB error).
inline std::string Shortened(std::string text, size_t limit = 40) {
  if (text.size() > limit) text = text.substr(0, limit) + "…";
  return text;
}

}  // namespace shardscope
