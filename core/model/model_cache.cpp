#include "core/model/model_cache.h"

#include <string>

namespace shardscope {

Result<std::shared_ptr<const ModelTree>> ModelTreeCache::Get(const ModelSource& source,
                                                             const ModelBuildOptions& options) {
  // Every field of the source (its inline config as text), and the options as they are.
  const std::pair<std::string, ModelBuildOptions> key{
      std::to_string(static_cast<int>(source.kind)) + '\n' + source.name_or_path + '\n' +
          (source.inline_config.is_null() ? std::string() : source.inline_config.dump()) + '\n' +
          std::to_string(static_cast<int>(source.implementation)),
      options};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = trees_.find(key); it != trees_.end()) return it->second;
  }
  // Loaded outside the lock: two threads may load one tree at once; the first kept wins, and
  // the two are alike.
  Result<ModelTree> tree = LoadModel(source, options);
  if (!tree.ok()) return tree.status();
  auto shared = std::make_shared<const ModelTree>(std::move(tree).value());
  std::lock_guard<std::mutex> lock(mu_);
  return trees_.emplace(key, std::move(shared)).first->second;
}

}  // namespace shardscope
