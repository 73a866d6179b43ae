// Builds a nlohmann DOM from json_scan.h's callbacks, so tests and the fuzzer can check the
// scanner against nlohmann's own parser.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/trace/json_scan.h"

namespace shardscope::testing {

class ScanDom {
 public:
  explicit ScanDom(nlohmann::json* out) : dom_(*out, /*allow_exceptions=*/false) {}
  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(int64_t v) { return dom_.number_integer(v); }
  bool number_unsigned(uint64_t v) { return dom_.number_unsigned(v); }
  bool number_float(double v, std::string_view s) { return dom_.number_float(v, std::string(s)); }
  bool string(std::string_view s) {
    std::string copy(s);
    return dom_.string(copy);
  }
  bool start_object(std::size_t n) { return dom_.start_object(n); }
  bool key(std::string_view k) {
    std::string copy(k);
    return dom_.key(copy);
  }
  bool end_object() { return dom_.end_object(); }
  bool start_array(std::size_t n) { return dom_.start_array(n); }
  bool end_array() { return dom_.end_array(); }
  void ScanError(std::size_t pos, const std::string& what) {
    error_pos = pos;
    error = what;
  }
  std::size_t error_pos = 0;
  std::string error;

 private:
  nlohmann::detail::json_sax_dom_parser<nlohmann::json> dom_;
};

// Scans `text` into `out`; false (with `error`) when the scanner rejects it.
inline bool ScanToDom(std::string_view text, nlohmann::json* out, std::string* error = nullptr) {
  ScanDom dom(out);
  const bool ok = trace_internal::ScanJson(text, &dom);
  if (error != nullptr) *error = dom.error;
  return ok;
}

}  // namespace shardscope::testing
