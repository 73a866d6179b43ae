// The errors for a model name that is not built in, shared by scenario parsing (where the
// scenario's file name is added), LoadModel and `shardscope model NAME`.
//
// Contents:
//   BuiltinModelList      "deepseek-v3, gemma2-2b, …" (BuiltinModelNames, comma-separated)
//   UnknownBuiltinModel   "model: unknown built-in model 'x' (did you mean y?) (built-ins: …;
//                         or give {"hf_config": PATH} or {"module_tree": PATH})"
#pragma once

#include <string>

#include "core/util/status.h"

namespace shardscope {

std::string BuiltinModelList();
Status UnknownBuiltinModel(const std::string& name);

}  // namespace shardscope
