#include "core/model/model_cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "core/model/model_summary.h"

namespace shardscope {
namespace {

ModelSource Builtin(const std::string& name) {
  ModelSource source;
  source.name_or_path = name;
  return source;
}

TEST(ModelTreeCacheTest, OneTreePerSourceAndBuildOptions) {
  ModelTreeCache cache;
  auto first = cache.Get(Builtin("llama3.2-1b"), {});
  auto again = cache.Get(Builtin("llama3.2-1b"), {});
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->get(), again->get());
  auto loaded = LoadModel(Builtin("llama3.2-1b"), {});
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(SummarizeModel(**first).total_params, SummarizeModel(*loaded).total_params);

  ModelBuildOptions tp2;
  tp2.tp = 2;
  auto sharded = cache.Get(Builtin("llama3.2-1b"), tp2);
  ASSERT_TRUE(sharded.ok());
  EXPECT_NE(sharded->get(), first->get());
  auto other = cache.Get(Builtin("llama3-8b"), {});
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->get(), first->get());
  ModelSource torchtitan = Builtin("llama3.2-1b");
  torchtitan.implementation = Implementation::kTorchtitan;
  auto titan = cache.Get(torchtitan, {});
  ASSERT_TRUE(titan.ok());
  EXPECT_NE(titan->get(), first->get());
}

TEST(ModelTreeCacheTest, ErrorsAreLoadModelsAndNotKept) {
  ModelTreeCache cache;
  const auto expected = LoadModel(Builtin("llama9"), {});
  ASSERT_FALSE(expected.ok());
  for (int k = 0; k < 2; ++k) {
    auto r = cache.Get(Builtin("llama9"), {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), expected.status().message());
  }
}

TEST(ModelTreeCacheTest, ThreadsAskingAtOnceShareOneTree) {
  ModelTreeCache cache;
  std::vector<const ModelTree*> got(4, nullptr);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      auto r = cache.Get(Builtin("llama3.2-1b"), {});
      if (r.ok()) got[t] = r->get();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const ModelTree* tree : got) {
    ASSERT_NE(tree, nullptr);
    EXPECT_EQ(tree, got[0]);
  }
}

}  // namespace
}  // namespace shardscope
