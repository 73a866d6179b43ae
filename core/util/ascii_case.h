// ASCII lower case for names compared without regard to case (GPU names, price-table keys,
// Kineto categories): one definition where each file had its own.
#pragma once

#include <string>
#include <string_view>

namespace shardscope {

inline char AsciiLower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = AsciiLower(c);
  return out;
}

}  // namespace shardscope
