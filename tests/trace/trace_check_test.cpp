#include "core/trace/trace_check.h"

#include <gtest/gtest.h>

#include "core/trace/trace_io.h"
#include "tests/trace/trace_test_util.h"

namespace shardscope {
namespace {

Trace ReadOurs(const std::string& text) {
  ReadTraceOptions options;
  options.format = TraceFormat::kShardscope;
  auto r = ParseTrace(text, "c.json", options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : Trace();
}

bool Has(const std::vector<std::string>& problems, const std::string& piece) {
  for (const auto& p : problems) {
    if (p.find(piece) != std::string::npos) return true;
  }
  return false;
}

TEST(CheckTrace, WrittenTracesAreValid) {
  const auto problems = CheckTrace(ReadOurs(SerializeTrace(testing::SmallTrace())));
  EXPECT_TRUE(problems.empty()) << problems[0];
}

TEST(CheckTrace, CatchesOverlappingLanes) {
  Trace t = testing::SmallTrace();
  t.AddWork(0, kLaneAllGather, "nccl:all_gather", "fwd/layers.2/all_gather", 100000,
            30000);  // 100–130 µs vs 50–120 µs
  const auto problems = CheckTrace(ReadOurs(SerializeTrace(t)));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(
      problems[0].find(
          "rank 0 lane 2 (all_gather): \"nccl:all_gather\" [fwd/layers.2/all_gather] at 100.000 µs "
          "starts before \"nccl:all_gather\" [fwd/layers.1/all_gather] ends at 120.000 µs"),
      std::string::npos)
      << problems[0];
}

TEST(CheckTrace, CatchesMissingMetadata) {
  const auto none = CheckTrace(ReadOurs(R"({"traceEvents":[]})"));
  ASSERT_EQ(none.size(), 1u);
  EXPECT_NE(none[0].find("c.json: metadata: missing"), std::string::npos);
  const auto partial = CheckTrace(ReadOurs(
      R"({"traceEvents":[],"metadata":{"format":"shardscope-trace/1","kind":"guessed"}})"));
  EXPECT_TRUE(Has(partial, "metadata.kind: expected \"predicted\" or \"measured\""));
  EXPECT_TRUE(Has(partial, "metadata.tool_version: missing"));
  const auto wrong = CheckTrace(ReadOurs(
      R"({"traceEvents":[],"metadata":{"format":"x/1","kind":"measured","tool_version":"v"}})"));
  EXPECT_TRUE(Has(wrong, "metadata.format: expected \"shardscope-trace/1\", got \"x/1\""));
}

TEST(CheckTrace, CatchesBadCounterKeysTidsAndOpIds) {
  const std::string meta =
      R"(,"metadata":{"format":"shardscope-trace/1","kind":"measured","tool_version":"v"}})";
  const auto problems = CheckTrace(
      ReadOurs(R"({"traceEvents":[)"
               R"({"ph":"C","name":"memory","pid":0,"tid":0,"ts":0,"args":{"allocated":5}},)"
               R"({"ph":"X","name":"a","pid":0,"tid":9,"ts":0,"dur":1,"args":{"op_id":"x"}},)"
               R"({"ph":"X","name":"b","pid":0,"tid":1,"ts":0,"dur":1,"args":{}},)"
               R"({"ph":"X","name":"c","pid":0,"tid":1,"ts":5,"dur":1,"args":{"op_id":"x"}}])" +
               meta));
  EXPECT_EQ(problems.size(), 4u);
  EXPECT_TRUE(Has(problems, "traceEvents[0].args.allocated: counter key must end in \"_bytes\""));
  EXPECT_TRUE(Has(problems, "traceEvents[1].tid: unknown lane 9"));
  EXPECT_TRUE(Has(problems, "traceEvents[2].args.op_id: missing (event \"b\")"));
  EXPECT_TRUE(Has(problems, "rank 0: op_id \"x\" appears again"));
}

TEST(CheckTrace, OpIdsMayRepeatInTheNextStep) {
  Trace t;
  t.metadata.tool_version = "v";
  t.AddMarker(0, 0, "step_begin");
  t.AddWork(0, kLaneCompute, "a", "fwd/root/compute", 0, 10);
  t.AddMarker(0, 100, "step_begin");
  t.AddWork(0, kLaneCompute, "a", "fwd/root/compute", 100, 10);
  EXPECT_TRUE(CheckTrace(ReadOurs(SerializeTrace(t))).empty());
}

}  // namespace
}  // namespace shardscope
