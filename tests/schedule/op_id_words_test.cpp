// The words ops point to (Schedule::words): the builder's table keeps each text once and tells
// texts apart by content, not by where a caller's view points; op_ids formed from their parts
// are the op_id grammar's own.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/schedule/step_builder.h"
#include "core/trace/op_id.h"
#include "tests/schedule/test_model.h"

namespace shardscope::testing {
namespace {

TEST(OpIdWordsTest, EqualTextsShareAWordAndAReusedBufferGetsItsNewText) {
  Schedule s;
  Words words(s);
  std::string buffer = "tp_all_reduce";
  const int32_t first = words.Of(buffer);
  EXPECT_EQ(words.Of(std::string("tp_all_reduce")), first);  // another address, the same text
  buffer = "tp_all_gather";                                  // the same address, another text
  const int32_t second = words.Of(buffer);
  EXPECT_NE(second, first);
  EXPECT_EQ(s.words[second], "tp_all_gather");
  buffer = "tp_all_reduce";
  EXPECT_EQ(words.Of(buffer), first);
  EXPECT_EQ(s.words.size(), 2u);
}

// A constant (StaticWord) is the word of its text, whether the text came first as a constant or
// as a view formed at run time, and each constant keeps its own word.
TEST(OpIdWordsTest, AConstantIsTheWordOfItsText) {
  Schedule s;
  Words words(s);
  const int32_t forward = words.Of(std::string("forward"));
  EXPECT_EQ(words.OfStatic("forward"), forward);
  EXPECT_EQ(words.OfStatic("forward"), forward);  // known by its address now
  const int32_t compute = words.OfStatic(op_what::kCompute);
  EXPECT_NE(compute, forward);
  EXPECT_EQ(words.Of(std::string(op_what::kCompute)), compute);
  EXPECT_EQ(words.OfStatic(op_what::kCompute), compute);
  EXPECT_EQ(words.OfStatic(op_what::kRecompute), words.Of(std::string("recompute")));
  EXPECT_EQ(s.words.size(), 3u);
  EXPECT_EQ(s.words[compute], "compute");
}

TEST(OpIdWordsTest, ABuiltScheduleHoldsEachWordOnceAndFormsGrammaticalOpIds) {
  Case setup = MixedPrecisionCase();
  setup.tp = 2;
  const Built b = BuildAll(setup);
  const Schedule& s = b.schedule;
  EXPECT_EQ(std::set<std::string>(s.words.begin(), s.words.end()).size(), s.words.size());
  std::set<std::pair<int, std::string>> seen;
  for (const ScheduleOp& op : s.ops) {
    ASSERT_TRUE(op.id_phase.has_value());
    const std::string id = OpIdOf(s, op);
    const Result<OpId> parsed = ParseOpId(id);
    ASSERT_TRUE(parsed.ok()) << id;
    EXPECT_EQ(parsed->phase, *op.id_phase) << id;
    EXPECT_EQ(FormatOpId(*parsed), id);
    EXPECT_TRUE(seen.insert({op.role, id}).second) << id << " repeated";
  }
  EXPECT_EQ(NameOf(s, s.ops.back()), "Optimizer.step#" + setup.options.optimizer);
}

}  // namespace
}  // namespace shardscope::testing
