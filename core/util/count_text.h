// Contents: CountOf, a count with its noun in the right number ("1 combination", "2 axes"), for
// the report lines users read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shardscope {

// `plural` defaults to `singular` + "s"; give it for irregular nouns ("axis", "axes").
inline std::string CountOf(int64_t n, std::string_view singular, std::string_view plural = {}) {
  std::string out = std::to_string(n);
  out += ' ';
  if (n == 1) {
    out += singular;
  } else if (plural.empty()) {
    out += singular;
    out += 's';
  } else {
    out += plural;
  }
  return out;
}

}  // namespace shardscope
