// The config.json of every built-in model name, compiled into the library.
//
// Contents:
//   BuiltinConfig    a name (the file name in core/model/configs/ without .json) and its text
//   BuiltinConfigs   all of them, sorted by name
#pragma once

#include <span>
#include <string_view>

namespace shardscope {

struct BuiltinConfig {
  std::string_view name;
  std::string_view json;
};

std::span<const BuiltinConfig> BuiltinConfigs();

}  // namespace shardscope
