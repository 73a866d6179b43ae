#include "core/model/unknown_model.h"

#include "core/model/model_source.h"
#include "core/util/did_you_mean.h"

namespace shardscope {

std::string BuiltinModelList() {
  std::string list;
  for (const std::string& n : BuiltinModelNames()) list += (list.empty() ? "" : ", ") + n;
  return list;
}

Status UnknownBuiltinModel(const std::string& name) {
  return InvalidInput("model: unknown built-in model '" + name + "'" +
                      DidYouMean(name, BuiltinModelNames()) + " (built-ins: " + BuiltinModelList() +
                      "; or give {\"hf_config\": PATH} or {\"module_tree\": PATH})");
}

}  // namespace shardscope
