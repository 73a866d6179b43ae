// Model trees loaded once and shared: a sweep's variants load the same few models (one per
// tensor-parallel degree, say) again and again, 4.6% of a 70B grid's time (perf, 2026-12-05).
//
// Contents:
//   ModelTreeCache  LoadModel's trees by source and build options, for several threads at once
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "core/model/model_source.h"

namespace shardscope {

class ModelTreeCache {
 public:
  // LoadModel(source, options), loaded at the first request for that source and those options;
  // an error is not kept (the next request loads again and gets it again). The tree is shared
  // and immutable; a file source is read once, as the sweep that holds the cache begins.
  Result<std::shared_ptr<const ModelTree>> Get(const ModelSource& source,
                                               const ModelBuildOptions& options);

 private:
  std::mutex mu_;
  // Keyed by the source's fields and the whole of the build options.
  std::map<std::pair<std::string, ModelBuildOptions>, std::shared_ptr<const ModelTree>> trees_;
};

}  // namespace shardscope
