// The shape of a scenario document: every known key path with its type and default, so the
// parser can reject unknown keys with a "did you mean" and wrong types with the expected one.
//
// Contents:
//   KeyType              what a key holds (int, bool, string, nullable forms, list, section)
//   SchemaKey            one key path ("fsdp.mix_precision.param_dtype") with type and default
//   ScenarioSchema       the table of keys (model is special: string or one-key object)
//   FindSchemaKey        the entry for a path, or null
//   SuggestKey           nearest valid path to an unknown one (edit distance over paths)
//   CheckAgainstSchema   walks a document: unknown keys and wrong types → errors with the path
//   ScenarioDefaults     a document holding every default (model absent)
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace shardscope {

enum class KeyType {
  kSection,  // an object of further keys
  kInt,
  kBool,
  kString,
  kNullableString,  // string or null
  kNullableBool,    // bool or null
  kNullableInt,     // integer or null
  kBoolOrInt,       // boolean or integer (FSDP2's reshard_after_forward)
  kStringList,      // array of strings
  kModel,           // string or {"hf_config"|"module_tree": string} or {"hf": object}
};

struct SchemaKey {
  std::string path;
  KeyType type;
  nlohmann::json default_value;  // null for sections and for keys without a default
};

const std::vector<SchemaKey>& ScenarioSchema();
const SchemaKey* FindSchemaKey(std::string_view path);
// "fsdp.forward_prefetch_depth" for "fsdp.forward_prefech_depth"; "" when nothing is close.
std::string SuggestKey(std::string_view path);
// Errors: "<path>: unknown key (did you mean <x>?)", "<path>: expected <type>, got <type>".
Status CheckAgainstSchema(const nlohmann::json& doc);
nlohmann::json ScenarioDefaults();
// "an integer", "a boolean", ... for messages.
std::string_view KeyTypeText(KeyType type);

}  // namespace shardscope
