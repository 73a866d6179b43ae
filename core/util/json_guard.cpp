#include "core/util/json_guard.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace shardscope {
namespace {

std::string MoreLevels(size_t n) { return "...(" + std::to_string(n) + " levels more)"; }

// One open array or object: the key or index the scan is inside, for the error's path.
struct Level {
  bool object = false;
  bool expect_key = false;
  std::string key;
  size_t index = 0;
};

// The first levels of the path only: a path 100,000 levels deep helps nobody.
std::string PathText(const std::vector<Level>& levels) {
  constexpr size_t kShownLevels = 8;
  std::string path;
  for (size_t i = 0; i < levels.size(); ++i) {
    if (i == kShownLevels) {
      path += MoreLevels(levels.size() - i);
      break;
    }
    const Level& l = levels[i];
    if (l.object) {
      if (l.key.empty()) continue;
      if (!path.empty()) path += '.';
      path += l.key;
    } else {
      path += "[" + std::to_string(l.index) + "]";
    }
  }
  return path.empty() ? "(top level)" : path;
}

bool NumberChar(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// Bytes a lead byte says follow it, and the lowest code point a sequence of that length may
// hold (a lower one is an overlong form). Hand-written: the standard library has no UTF-8
// validation (std::codecvt_utf8 is deprecated), and nlohmann's lives inside its parser.
struct Utf8Lead {
  int continuation = -1;  // -1: not a lead byte
  char32_t min = 0;
  char32_t bits = 0;
};

Utf8Lead LeadOf(unsigned char b) {
  if (b < 0x80) return {0, 0, b};
  if ((b & 0xE0) == 0xC0) return {1, 0x80, static_cast<char32_t>(b & 0x1F)};
  if ((b & 0xF0) == 0xE0) return {2, 0x800, static_cast<char32_t>(b & 0x0F)};
  if ((b & 0xF8) == 0xF0) return {3, 0x10000, static_cast<char32_t>(b & 0x07)};
  return {};
}

}  // namespace

std::optional<size_t> InvalidUtf8At(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const Utf8Lead lead = LeadOf(static_cast<unsigned char>(text[i]));
    if (lead.continuation < 0) return i;
    char32_t cp = lead.bits;
    for (int k = 1; k <= lead.continuation; ++k) {
      if (i + k >= text.size()) return i;
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < lead.min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += 1 + static_cast<size_t>(lead.continuation);
  }
  return std::nullopt;
}

Status CheckUtf8(std::string_view text, const std::string& source) {
  const std::optional<size_t> at = InvalidUtf8At(text);
  if (!at) return Status::Ok();
  char byte[8];
  std::snprintf(byte, sizeof(byte), "0x%02X", static_cast<unsigned char>(text[*at]));
  return InvalidInput(source + ": not valid UTF-8 (byte " + byte + " at offset " +
                      std::to_string(*at) + ")");
}

std::string DumpJson(const nlohmann::json& doc, int indent) {
  return doc.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

Status CheckJsonText(std::string_view text, const std::string& source, int max_depth) {
  std::vector<Level> levels;
  size_t line = 1;
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == '"') {
      // A string: skip to its closing quote (a backslash escapes the next character).
      const size_t start = ++i;
      while (i < n && text[i] != '"') {
        if (text[i] == '\\') ++i;
        if (i < n && text[i] == '\n') ++line;
        ++i;
      }
      if (!levels.empty() && levels.back().object && levels.back().expect_key) {
        levels.back().key.assign(text.substr(start, std::min(i, n) - start));
        levels.back().expect_key = false;
      }
      ++i;
    } else if (c == '{' || c == '[') {
      if (static_cast<int>(levels.size()) >= max_depth) {
        return InvalidInput(source + ": JSON nested deeper than " + std::to_string(max_depth) +
                            " levels at " + PathText(levels) + " (line " + std::to_string(line) +
                            "); no shardscope input needs that many, so the document is refused "
                            "before it is parsed");
      }
      Level l;
      l.object = c == '{';
      l.expect_key = l.object;
      levels.push_back(std::move(l));
      ++i;
    } else if (c == '}' || c == ']') {
      if (!levels.empty()) levels.pop_back();
      ++i;
    } else if (c == ',') {
      if (!levels.empty()) {
        if (levels.back().object) {
          levels.back().expect_key = true;
        } else {
          ++levels.back().index;
        }
      }
      ++i;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const size_t start = i;
      while (i < n && NumberChar(text[i])) ++i;
      const std::string literal(text.substr(start, i - start));
      errno = 0;
      char* end = nullptr;
      const double v = std::strtod(literal.c_str(), &end);
      if (end != literal.c_str() && errno == ERANGE && std::isinf(v)) {
        return InvalidInput(source + ": " + PathText(levels) + ": number " + literal +
                            " is outside the range of a double (line " + std::to_string(line) +
                            ")");
      }
    } else {
      ++i;
    }
  }
  return Status::Ok();
}

Result<nlohmann::json> ParseJsonInput(std::string_view text, const std::string& source,
                                      std::string_view expected) {
  // JSON text holds no NUL byte (in a string it is written \u0000), and the parser reads one as
  // the end of the input: "{...}\0 garbage" parsed, the garbage ignored.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return InvalidInput(source + ": not valid JSON at byte " + std::to_string(nul) +
                        ": a NUL byte (JSON text has none)");
  }
  SS_RETURN_IF_ERROR(CheckJsonText(text, source));
  // The keys of each enclosing object as the parser meets them; arrays are frames without keys.
  struct Frame {
    bool object = false;
    std::vector<std::string> keys;
  };
  std::vector<Frame> frames;
  std::string repeated;  // "<path>: the key ..." of the first key given twice
  using Json = nlohmann::json;
  const Json::parser_callback_t note_keys = [&](int, Json::parse_event_t e, Json& value) {
    using Event = Json::parse_event_t;
    if (e == Event::object_start || e == Event::array_start) {
      frames.push_back({e == Event::object_start, {}});
    } else if ((e == Event::object_end || e == Event::array_end) && !frames.empty()) {
      frames.pop_back();
    } else if (e == Event::key && !frames.empty() && repeated.empty()) {
      std::vector<std::string>& keys = frames.back().keys;
      const std::string key = value.get<std::string>();
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
        std::string path;
        for (size_t i = 0; i + 1 < frames.size(); ++i) {
          if (!frames[i].object) {
            path += "[]";
          } else if (!frames[i].keys.empty()) {
            path += (path.empty() ? "" : ".") + frames[i].keys.back();
          }
        }
        repeated = (path.empty() ? "" : path + ": ") + "the key \"" + key +
                   "\" appears twice in one object (the last would win silently)";
      }
      keys.push_back(key);
    }
    return true;
  };
  Json doc;
  try {
    doc = Json::parse(text, note_keys);
  } catch (const Json::exception& e) {
    const auto* parse = dynamic_cast<const Json::parse_error*>(&e);
    const std::string suffix =
        expected.empty() ? std::string() : " (expected " + std::string(expected) + ")";
    return InvalidInput(parse != nullptr
                            ? source + ": not valid JSON at byte " + std::to_string(parse->byte) +
                                  ": " + e.what() + suffix
                            : source + ": not valid JSON: " + e.what() + suffix);
  }
  if (!repeated.empty()) return InvalidInput(source + ": " + repeated);
  return doc;
}

}  // namespace shardscope
