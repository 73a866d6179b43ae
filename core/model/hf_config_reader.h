// Typed, error-reporting access to the fields of a Hugging Face config.json.
//
// Contents:
//   ConfigReader   Int / IntOr / Bool / String / IntList over one JSON object; JSON null counts
//                  as absent (HF writes "q_lora_rank": null); errors name the source and field
//
// Example:
//   ConfigReader r(config, "llama3-8b/config.json");
//   SS_ASSIGN_OR_RETURN(int64_t hidden, r.Int("hidden_size"));
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/util/status.h"

namespace shardscope {

class ConfigReader {
 public:
  // `config` must outlive the reader.
  ConfigReader(const nlohmann::json& config, std::string source)
      : config_(config), source_(std::move(source)) {}

  // True when `key` is present and not null.
  bool Has(const char* key) const;
  // Model figures above this are rejected: far beyond real models, and products of a few of
  // them stay inside int64.
  static constexpr int64_t kMaxFigure = int64_t{1} << 24;
  // A required integer in [min, max].
  Result<int64_t> Int(const char* key, int64_t min = 1, int64_t max = kMaxFigure) const;
  // An optional integer in [min, max], `fallback` when absent.
  Result<int64_t> IntOr(const char* key, int64_t fallback, int64_t min = 0,
                        int64_t max = kMaxFigure) const;
  Result<bool> BoolOr(const char* key, bool fallback) const;
  Result<std::string> StringOr(const char* key, std::string fallback) const;
  // An optional array of non-negative integers (empty when absent).
  Result<std::vector<int64_t>> IntList(const char* key) const;
  // An optional array of strings (empty when absent).
  Result<std::vector<std::string>> StringList(const char* key) const;
  // A nested object read with the same source; `key` must be an object when present.
  Result<ConfigReader> Object(const char* key) const;

  const std::string& source() const { return source_; }
  // "<source>: <key>: <what>" as an InvalidInput status.
  Status Error(const std::string& key, const std::string& what) const;

 private:
  const nlohmann::json& config_;
  std::string source_;
};

}  // namespace shardscope
