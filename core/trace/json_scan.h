// A strict, iterative JSON SAX scanner for large trace files (internal to core/trace).
// nlohmann's lexer copies every character into an error-context buffer and costs about half of
// a million-event load; this one scans in place. It calls handler methods named as
// nlohmann::json::sax_parse's (null, boolean, number_integer, number_unsigned,
// number_float(value, text), string, start_object, key, end_object, start_array, end_array),
// plus ScanError(byte offset, message) on malformed input; strings, keys and number texts come
// as std::string_view, into the input itself unless a string holds an escape (then into the
// scanner's unescaped copy), valid until the next callback. No recursion, so nesting depth
// cannot overflow the stack; strings are checked for valid UTF-8 and unescaped control
// characters, as RFC 8259 requires.
//
// Contents:
//   ScanJson   runs the scan; false when the handler or the input stopped it
#pragma once

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::trace_internal {

namespace scan_detail {

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Appends the code point as UTF-8.
inline void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Length of the valid UTF-8 sequence starting at s[i] (lead byte ≥ 0x80), or 0 if invalid.
inline size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  auto cont = [&](size_t k) { return k < s.size() && (b(k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    if (c == 0xE0 && b(i + 1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(i + 1) > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    if (c == 0xF0 && b(i + 1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(i + 1) > 0x8F) return 0;  // beyond U+10FFFF
    return 4;
  }
  return 0;
}

// The end of the run of plain string bytes (printable ASCII other than '"' and '\\') from
// s[i]: eight bytes a step. Each test below flags the bytes it looks for, and may flag bytes
// above a flagged one (a borrow), never below, so the lowest flag is the first such byte.
inline size_t SkipPlainStringBytes(std::string_view s, size_t i) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  const auto zero_bytes = [](uint64_t x) { return (x - kOnes) & ~x & kHigh; };
  while (i + 8 <= s.size()) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    const uint64_t stop = zero_bytes(w ^ (kOnes * '"')) | zero_bytes(w ^ (kOnes * '\\')) |
                          ((w - kOnes * 0x20) & ~w & kHigh) | (w & kHigh);
    if (stop != 0) {
      if constexpr (std::endian::native == std::endian::little) {
        return i + static_cast<size_t>(std::countr_zero(stop) / 8);
      } else {
        break;  // the byte-wise loop below finds it
      }
    }
    i += 8;
  }
  while (i < s.size() && s[i] != '"' && s[i] != '\\' && static_cast<unsigned char>(s[i]) >= 0x20 &&
         static_cast<unsigned char>(s[i]) < 0x80) {
    ++i;
  }
  return i;
}

inline int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Plain decimals (no exponent) of at most 15 significant digits and 22 decimals — every `ts`
// and `dur` a trace holds — as mantissa / 10^k: both are exact doubles, so the one division
// rounds correctly and gives what from_chars gives, without its slow general path.
inline bool FastDecimal(const char* b, const char* e, double* out) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const bool negative = *b == '-';
  if (negative) ++b;
  uint64_t mantissa = 0;
  int digits = 0, decimals = 0;
  bool after_point = false;
  for (const char* p = b; p < e; ++p) {
    if (*p == '.') {
      after_point = true;
      continue;
    }
    if (!IsDigit(*p)) return false;  // an exponent: the general path
    if (mantissa != 0 || *p != '0') ++digits;
    mantissa = mantissa * 10 + static_cast<uint64_t>(*p - '0');
    if (after_point) ++decimals;
    if (digits > 15 || decimals > 22) return false;
  }
  const double v = static_cast<double>(mantissa) / kPow10[decimals];
  *out = negative ? -v : v;
  return true;
}

}  // namespace scan_detail

// Scans `text` as one JSON value, calling `h`. Returns false when the input is malformed (after
// h->ScanError) or a handler method returned false.
template <typename Handler>
bool ScanJson(std::string_view text, Handler* h) {
  using namespace scan_detail;
  size_t i = 0;
  const size_t n = text.size();
  // Per open container: '{' or '['. `expect_key` after '{' or ','; values follow ':'.
  std::vector<char> stack;
  std::string str;
  auto skip_ws = [&] {
    while (i < n && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
  };
  auto error = [&](std::string_view what) {
    h->ScanError(i, std::string(what));
    return false;
  };
  // Reads a string starting at text[i] == '"' into `sv`: a view of the text until an escape,
  // from which on the unescaped string is built in `str`.
  std::string_view sv;
  auto read_string = [&]() -> bool {
    ++i;
    const size_t begin = i;
    bool unescaped = false;  // whether `str` holds the string (an escape was met)
    while (true) {
      const size_t start = i;
      i = SkipPlainStringBytes(text, i);
      if (unescaped) str.append(text.data() + start, i - start);
      if (i >= n) return error("unterminated string");
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if (c == '"') {
        sv = unescaped ? std::string_view(str) : text.substr(begin, i - begin);
        ++i;
        return true;
      }
      if (c < 0x20) return error("control character in a string (must be escaped)");
      if (c >= 0x80) {
        const size_t len = Utf8Length(text, i);
        if (len == 0) return error("invalid UTF-8 in a string");
        if (unescaped) str.append(text.data() + i, len);
        i += len;
        continue;
      }
      // Escape.
      if (!unescaped) {
        str.assign(text.data() + begin, i - begin);
        unescaped = true;
      }
      if (i + 1 >= n) return error("unterminated escape");
      const char e = text[i + 1];
      i += 2;
      switch (e) {
        case '"':
          str.push_back('"');
          break;
        case '\\':
          str.push_back('\\');
          break;
        case '/':
          str.push_back('/');
          break;
        case 'b':
          str.push_back('\b');
          break;
        case 'f':
          str.push_back('\f');
          break;
        case 'n':
          str.push_back('\n');
          break;
        case 'r':
          str.push_back('\r');
          break;
        case 't':
          str.push_back('\t');
          break;
        case 'u': {
          auto hex4 = [&](uint32_t* cp) {
            if (i + 4 > n) return false;
            uint32_t v = 0;
            for (int k = 0; k < 4; ++k) {
              const int d = Hex(text[i + static_cast<size_t>(k)]);
              if (d < 0) return false;
              v = v * 16 + static_cast<uint32_t>(d);
            }
            i += 4;
            *cp = v;
            return true;
          };
          uint32_t cp = 0;
          if (!hex4(&cp)) return error("bad \\u escape (expected four hex digits)");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (i + 2 > n || text[i] != '\\' || text[i + 1] != 'u')
              return error("unpaired surrogate in \\u escape");
            i += 2;
            if (!hex4(&low) || low < 0xDC00 || low > 0xDFFF)
              return error("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return error("unpaired surrogate in \\u escape");
          }
          AppendUtf8(cp, &str);
          break;
        }
        default:
          i -= 1;
          return error("invalid escape in a string");
      }
    }
  };
  auto read_number = [&]() -> bool {
    const size_t start = i;
    if (text[i] == '-') ++i;
    if (i >= n || !IsDigit(text[i])) return error("invalid number");
    if (text[i] == '0') {
      ++i;
    } else {
      while (i < n && IsDigit(text[i])) ++i;
    }
    bool is_float = false;
    if (i < n && text[i] == '.') {
      is_float = true;
      ++i;
      if (i >= n || !IsDigit(text[i])) return error("invalid number (digit expected after '.')");
      while (i < n && IsDigit(text[i])) ++i;
    }
    if (i < n && (text[i] == 'e' || text[i] == 'E')) {
      is_float = true;
      ++i;
      if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
      if (i >= n || !IsDigit(text[i])) return error("invalid number (digit expected in exponent)");
      while (i < n && IsDigit(text[i])) ++i;
    }
    const char* b = text.data() + start;
    const char* e = text.data() + i;
    if (!is_float) {
      if (*b == '-') {
        int64_t v = 0;
        if (std::from_chars(b, e, v).ec == std::errc()) return h->number_integer(v);
      } else {
        uint64_t v = 0;
        if (std::from_chars(b, e, v).ec == std::errc()) return h->number_unsigned(v);
      }
      // Out of 64-bit range: a floating-point value, as nlohmann does.
    }
    double d = 0;
    const std::string_view number(b, static_cast<size_t>(e - b));
    if (FastDecimal(b, e, &d)) return h->number_float(d, number);
    const auto r = std::from_chars(b, e, d);
    if (r.ec == std::errc::result_out_of_range) return error("number out of range");
    if (r.ec != std::errc()) return error("invalid number");
    return h->number_float(d, number);
  };

  bool expect_value = true;  // else: a ',' or a closing bracket is expected
  skip_ws();
  if (i >= n) return error("empty input (expected a JSON value)");
  while (true) {
    skip_ws();
    if (i >= n) return error("unexpected end of input");
    const char c = text[i];
    if (expect_value) {
      switch (c) {
        case '{':
          ++i;
          stack.push_back('{');
          if (!h->start_object(static_cast<std::size_t>(-1))) return false;
          skip_ws();
          if (i < n && text[i] == '}') {
            ++i;
            stack.pop_back();
            if (!h->end_object()) return false;
            expect_value = false;
            break;
          }
          if (i >= n || text[i] != '"') return error("expected a string key or '}'");
          if (!read_string() || !h->key(sv)) return false;
          skip_ws();
          if (i >= n || text[i] != ':') return error("expected ':' after a key");
          ++i;
          continue;  // a value follows
        case '[':
          ++i;
          stack.push_back('[');
          if (!h->start_array(static_cast<std::size_t>(-1))) return false;
          skip_ws();
          if (i < n && text[i] == ']') {
            ++i;
            stack.pop_back();
            if (!h->end_array()) return false;
            expect_value = false;
          }
          break;
        case '"':
          if (!read_string() || !h->string(sv)) return false;
          expect_value = false;
          break;
        case 't':
          if (text.substr(i, 4) != "true") return error("invalid literal");
          i += 4;
          if (!h->boolean(true)) return false;
          expect_value = false;
          break;
        case 'f':
          if (text.substr(i, 5) != "false") return error("invalid literal");
          i += 5;
          if (!h->boolean(false)) return false;
          expect_value = false;
          break;
        case 'n':
          if (text.substr(i, 4) != "null") return error("invalid literal");
          i += 4;
          if (!h->null()) return false;
          expect_value = false;
          break;
        default:
          if (c == '-' || IsDigit(c)) {
            if (!read_number()) return false;
            expect_value = false;
            break;
          }
          return error("unexpected character (expected a value)");
      }
      if (!expect_value && stack.empty()) break;
      continue;
    }
    // After a value inside a container.
    if (stack.empty()) break;
    if (c == ',') {
      ++i;
      if (stack.back() == '{') {
        skip_ws();
        if (i >= n || text[i] != '"') return error("expected a string key after ','");
        if (!read_string() || !h->key(sv)) return false;
        skip_ws();
        if (i >= n || text[i] != ':') return error("expected ':' after a key");
        ++i;
      }
      expect_value = true;
      continue;
    }
    if (c == '}' && stack.back() == '{') {
      ++i;
      stack.pop_back();
      if (!h->end_object()) return false;
    } else if (c == ']' && stack.back() == '[') {
      ++i;
      stack.pop_back();
      if (!h->end_array()) return false;
    } else {
      return error(stack.back() == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    if (stack.empty()) break;
  }
  skip_ws();
  if (i != n) return error("unexpected content after the JSON value");
  return true;
}

}  // namespace shardscope::trace_internal
