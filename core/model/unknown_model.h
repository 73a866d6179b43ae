// The text for a model name that is not built in, shared by scenario parsing (where the
// scenario's file name is added), LoadModel and `shardscope model NAME`.
//
// Contents:
//   UnknownBuiltinModelText   "unknown built-in model 'x' (did you mean y?); built-ins: …"
//   UnknownBuiltinModel       the InvalidInput a scenario's `model` gets, with the other forms
#pragma once

#include <string>

#include "core/util/status.h"

namespace shardscope {

std::string UnknownBuiltinModelText(const std::string& name);
Status UnknownBuiltinModel(const std::string& name);

}  // namespace shardscope
