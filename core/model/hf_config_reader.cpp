#include "core/model/hf_config_reader.h"

#include "core/util/terminal_text.h"

namespace shardscope {
namespace {

using nlohmann::json;

bool AsInt64(const json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  // HF configs sometimes write integral figures as floats (e.g. 4096.0).
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= -9.0e15 && d <= 9.0e15 && d == static_cast<double>(static_cast<int64_t>(d))) {
      *out = static_cast<int64_t>(d);
      return true;
    }
  }
  return false;
}

}  // namespace

Status ConfigReader::Error(const std::string& key, const std::string& what) const {
  return InvalidInput(source_ + ": " + key + ": " + what);
}

bool ConfigReader::Has(const char* key) const {
  auto it = config_.find(key);
  return it != config_.end() && !it->is_null();
}

Result<int64_t> ConfigReader::Int(const char* key, int64_t min, int64_t max) const {
  if (!Has(key)) return InvalidInput(source_ + ": missing required field '" + key + "'");
  return IntOr(key, 0, min, max);
}

Result<int64_t> ConfigReader::IntOr(const char* key, int64_t fallback, int64_t min,
                                    int64_t max) const {
  if (!Has(key)) return fallback;
  int64_t v = 0;
  if (!AsInt64(config_.at(key), &v) || v < min || v > max) {
    return Error(key, "expected an integer in [" + std::to_string(min) + ", " +
                          std::to_string(max) + "], got " + Shortened(config_.at(key).dump()));
  }
  return v;
}

Result<bool> ConfigReader::BoolOr(const char* key, bool fallback) const {
  if (!Has(key)) return fallback;
  const json& v = config_.at(key);
  if (!v.is_boolean()) return Error(key, "expected true or false");
  return v.get<bool>();
}

Result<std::string> ConfigReader::StringOr(const char* key, std::string fallback) const {
  if (!Has(key)) return fallback;
  const json& v = config_.at(key);
  if (!v.is_string()) return Error(key, "expected a string");
  return v.get<std::string>();
}

Result<std::vector<int64_t>> ConfigReader::IntList(const char* key) const {
  std::vector<int64_t> out;
  if (!Has(key)) return out;
  const json& v = config_.at(key);
  if (!v.is_array()) return Error(key, "expected an array of integers");
  for (const json& e : v) {
    int64_t n = 0;
    if (!AsInt64(e, &n) || n < 0) return Error(key, "expected an array of non-negative integers");
    out.push_back(n);
  }
  return out;
}

Result<std::vector<std::string>> ConfigReader::StringList(const char* key) const {
  std::vector<std::string> out;
  if (!Has(key)) return out;
  const json& v = config_.at(key);
  if (!v.is_array()) return Error(key, "expected an array of strings");
  for (const json& e : v) {
    if (!e.is_string()) return Error(key, "expected an array of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

Result<ConfigReader> ConfigReader::Object(const char* key) const {
  static const json kEmpty = json::object();
  if (!Has(key)) return ConfigReader(kEmpty, source_ + ": " + key);
  const json& v = config_.at(key);
  if (!v.is_object()) return Error(key, "expected an object");
  return ConfigReader(v, source_ + ": " + key);
}

}  // namespace shardscope
