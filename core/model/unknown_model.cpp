#include "core/model/unknown_model.h"

#include "core/model/model_source.h"
#include "core/util/did_you_mean.h"

namespace shardscope {

std::string UnknownBuiltinModelText(const std::string& name) {
  const std::vector<std::string> names = BuiltinModelNames();
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return "unknown built-in model '" + name + "'" + DidYouMean(name, names) + "; built-ins: " + list;
}

Status UnknownBuiltinModel(const std::string& name) {
  return InvalidInput("model: " + UnknownBuiltinModelText(name) +
                      "; or give {\"hf_config\": PATH} or {\"module_tree\": PATH}");
}

}  // namespace shardscope
