#include "sim/explore/vary.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace shardscope::sim {
namespace {

std::vector<std::string> Values(std::string_view text) {
  Result<VaryAxis> axis = ParseVary(text);
  EXPECT_TRUE(axis.ok()) << text << ": " << axis.status().message();
  return axis.ok() ? axis->values : std::vector<std::string>{};
}

std::string Error(std::string_view text) {
  Result<VaryAxis> axis = ParseVary(text);
  EXPECT_FALSE(axis.ok()) << text;
  if (axis.ok()) return "";
  EXPECT_EQ(axis.status().code(), ErrorCode::kInvalidInput);
  return axis.status().message();
}

using V = std::vector<std::string>;

TEST(ParseVary, ListsAndRanges) {
  EXPECT_EQ(Values("parallelism.tp=1,2,4,8"), (V{"1", "2", "4", "8"}));
  EXPECT_EQ(Values("cluster.nodes=1..64:x2"), (V{"1", "2", "4", "8", "16", "32", "64"}));
  EXPECT_EQ(Values("cluster.nodes=3..40:x3"), (V{"3", "9", "27"}));
  EXPECT_EQ(Values("training.local_batch=1..7:+3"), (V{"1", "4", "7"}));
  EXPECT_EQ(Values("training.local_batch=1..8:+3"), (V{"1", "4", "7"}));
  EXPECT_EQ(Values("training.grad_accum=2..5"), (V{"2", "3", "4", "5"}));
  EXPECT_EQ(Values("cluster.nodes=1,4..6,16"), (V{"1", "4", "5", "6", "16"}));
  EXPECT_EQ(Values("cluster.nodes=5..5"), (V{"5"}));
  // Colons and dots inside values that are not ranges stay values.
  EXPECT_EQ(Values("training.activation_checkpoint=none,selective_op:2,selective_layer:3,full"),
            (V{"none", "selective_op:2", "selective_layer:3", "full"}));
  EXPECT_EQ(Values("cluster.gpu=h100-sxm,b200"), (V{"h100-sxm", "b200"}));
  // Commas inside JSON values belong to them.
  EXPECT_EQ(Values(R"(fsdp.ignored_params=["a.w","b.w"],[])"), (V{R"(["a.w","b.w"])", "[]"}));
}

TEST(ParseVary, RangeErrorsNameTheFlagAndTheToken) {
  std::string m = Error("cluster.nodes=1..64:x1");
  EXPECT_NE(m.find("--vary cluster.nodes=1..64:x1"), std::string::npos) << m;
  EXPECT_NE(m.find("'1..64:x1'"), std::string::npos) << m;
  EXPECT_NE(m.find("integer >= 2"), std::string::npos) << m;
  m = Error("cluster.nodes=8..1");
  EXPECT_NE(m.find("below the start"), std::string::npos) << m;
  m = Error("cluster.nodes=1..");
  EXPECT_NE(m.find("expected an integer after '..'"), std::string::npos) << m;
  m = Error("cluster.nodes=1..8:*2");
  EXPECT_NE(m.find("':+K' or ':xK'"), std::string::npos) << m;
  m = Error("cluster.nodes=1..8:+0");
  EXPECT_NE(m.find("integer >= 1"), std::string::npos) << m;
  m = Error("cluster.nodes=0..8:x2");
  EXPECT_NE(m.find("start at 1"), std::string::npos) << m;
  m = Error("cluster.nodes=1.5..8");
  EXPECT_NE(m.find("'1.5' is not an integer"), std::string::npos) << m;
  m = Error("cluster.nodes=1,,2");
  EXPECT_NE(m.find("empty value"), std::string::npos) << m;
  m = Error("cluster.nodes=1..100000");
  EXPECT_NE(m.find("more than 4096 values"), std::string::npos) << m;
}

TEST(ParseVary, PathsAreScenarioKeys) {
  std::string m = Error("cluster.nodez=1,2");
  EXPECT_NE(m.find("--vary cluster.nodez=1,2"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown key (did you mean cluster.nodes?)"), std::string::npos) << m;
  m = Error("parallelism.tp");
  EXPECT_NE(m.find("expected path=v1,v2"), std::string::npos) << m;
  m = Error("=1,2");
  EXPECT_NE(m.find("expected path=v1,v2"), std::string::npos) << m;
}

TEST(Combinations, LastAxisFastestAndBounded) {
  const std::vector<VaryAxis> axes = {*ParseVary("parallelism.tp=1,2"),
                                      *ParseVary("cluster.nodes=1..4:x2")};
  ASSERT_EQ(*CombinationCount(axes), 6);
  EXPECT_EQ(CombinationSets(axes, 0), (V{"parallelism.tp=1", "cluster.nodes=1"}));
  EXPECT_EQ(CombinationSets(axes, 2), (V{"parallelism.tp=1", "cluster.nodes=4"}));
  EXPECT_EQ(CombinationSets(axes, 3), (V{"parallelism.tp=2", "cluster.nodes=1"}));
  EXPECT_EQ(CombinationSets(axes, 5), (V{"parallelism.tp=2", "cluster.nodes=4"}));
  Result<int64_t> too_many = CombinationCount({*ParseVary("training.local_batch=1..1000"),
                                               *ParseVary("training.seq_len=1..1000"),
                                               *ParseVary("cluster.nodes=1..1000")});
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("more than 1000000 combinations"), std::string::npos)
      << too_many.status().message();
  // One path on two axes: the second would overwrite the first in every combination.
  Result<int64_t> twice =
      CombinationCount({*ParseVary("parallelism.tp=1,2"), *ParseVary("parallelism.tp=4,8")});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(twice.status().message().find(
                "--vary parallelism.tp=4,8: parallelism.tp is already an axis (--vary "
                "parallelism.tp=1,2)"),
            std::string::npos)
      << twice.status().message();
  // An object and a field inside it, in either order: the object's value would replace the
  // field's in every variant labelled with it. A path that only starts alike is another field.
  for (const auto& [first, second] : std::vector<std::pair<std::string, std::string>>{
           {"training.local_batch=1,2", R"(training={"seq_len": 4096})"},
           {R"(training={"seq_len": 4096})", "training.local_batch=1,2"}}) {
    Result<int64_t> nested = CombinationCount({*ParseVary(first), *ParseVary(second)});
    ASSERT_FALSE(nested.ok()) << first << " / " << second;
    EXPECT_EQ(nested.status().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(nested.status().message().find("--vary " + second +
                                             ": training.local_batch lies inside training, and "
                                             "both are axes (--vary " +
                                             first + ")"),
              std::string::npos)
        << nested.status().message();
  }
  Result<int64_t> alike = CombinationCount(
      {*ParseVary("parallelism.pp=1,2"), *ParseVary("parallelism.pp_schedule=1f1b,gpipe")});
  EXPECT_TRUE(alike.ok()) << alike.status().message();
}

TEST(Vary, AValueTwiceInOneAxisIsRefused) {
  for (const char* text : {"parallelism.tp=1,1,2", "parallelism.tp=4,2..4",
                           "training.seq_len=4,4.0", "cluster.gpu=h100-sxm,H100-SXM"}) {
    Result<VaryAxis> axis = ParseVary(text);
    ASSERT_FALSE(axis.ok()) << text;
    EXPECT_NE(axis.status().message().find("is given twice"), std::string::npos)
        << axis.status().message();
  }
  EXPECT_TRUE(ParseVary("training.activation_checkpoint=none,full").ok());
}

}  // namespace
}  // namespace shardscope::sim
