#include "core/trace/trace_check.h"

#include <gtest/gtest.h>

#include "core/trace/trace_io.h"
#include "core/util/file_io.h"
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

// An event before its rank's first step_begin belongs to no step (stats would drop its time).
TEST(CheckTrace, CatchesWorkBeforeTheFirstStep) {
  Trace t = testing::SmallTrace();
  t.AddWork(1, kLaneReduceScatter, "nccl:reduce_scatter", "bwd/layers.0/reduce_scatter", -1000000,
            20000);
  const auto problems = CheckTrace(ReadOurs(SerializeTrace(t)));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(Has(problems,
                  "rank 1 lane 3 (reduce_scatter): \"nccl:reduce_scatter\" "
                  "[bwd/layers.0/reduce_scatter] starts at -1000.000 µs, before the "
                  "rank's first step_begin at 0.000 µs"))
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

// A PyTorch profiler trace as torch.profiler writes it: string pids and tids on its own spans.
constexpr const char* kKineto =
    R"JSON({"schemaVersion":1,"distributedInfo":{"rank":2,"world_size":4},
"traceEvents":[
 {"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"python3"}},
 {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":7,"ts":10.5,"dur":3,"args":{}},
 {"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":7,"tid":7,"ts":11,"args":{"Total Allocated":5}},
 {"ph":"s","cat":"fwdbwd","name":"fwdbwd","pid":7,"tid":7,"ts":11,"id":3},
 {"ph":"f","cat":"fwdbwd","name":"fwdbwd","pid":7,"tid":7,"ts":12,"id":3,"bp":"e"},
 {"ph":"X","cat":"Trace","name":"PyTorch Profiler (0)","pid":"Spans","tid":"PyTorch Profiler","ts":0,"dur":20}
]})JSON";

TEST(CheckKinetoTrace, RawProfilerTraceIsValid) {
  auto format = DetectTraceFormat(kKineto, "k.json");
  ASSERT_TRUE(format.ok()) << format.status().message();
  EXPECT_EQ(*format, TraceFormat::kKineto);
  auto ours = DetectTraceFormat(SerializeTrace(testing::SmallTrace()), "t.json");
  ASSERT_TRUE(ours.ok());
  EXPECT_EQ(*ours, TraceFormat::kShardscope);
  auto check = CheckKinetoTrace(kKineto, "k.json");
  ASSERT_TRUE(check.ok()) << check.status().message();
  EXPECT_EQ(check->problem_count, 0) << check->problems[0];
  EXPECT_EQ(check->events, 6);
  EXPECT_EQ(check->events_by_ph.at("X"), 2);
  EXPECT_EQ(check->rank, 2);
  EXPECT_EQ(check->world_size, 4);
}

TEST(CheckKinetoTrace, ProblemsNameFileEventAndField) {
  auto problems_of = [](std::string text) {
    auto check = CheckKinetoTrace(text, "k.json");
    EXPECT_TRUE(check.ok()) << check.status().message();
    return check.ok() ? check->problems : std::vector<std::string>{};
  };
  auto bad = [&](const std::string& from, const std::string& to) {
    std::string text = kKineto;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return problems_of(text.replace(at, from.size(), to));
  };
  EXPECT_TRUE(Has(bad(R"("ts":10.5)", R"("ts":"10.5")"),
                  "k.json: traceEvents[1].ts: expected a number of microseconds, got a string"));
  EXPECT_TRUE(Has(bad(R"("dur":3)", R"("dur":-3)"),
                  "k.json: traceEvents[1].dur: expected a duration ≥ 0 in microseconds"));
  EXPECT_TRUE(Has(bad(R"("ph":"X","cat":"cpu_op")", R"("ph":"Q","cat":"cpu_op")"),
                  "k.json: traceEvents[1].ph: expected one of the trace-event phases"));
  EXPECT_TRUE(Has(bad(R"("pid":"Spans")", R"("pid":true)"),
                  "k.json: traceEvents[5].pid: expected an integer or a string, got a boolean"));
  EXPECT_TRUE(Has(bad(R"("dur":3,"args":{})", R"("dur":3,"args":[1])"),
                  "k.json: traceEvents[1].args: expected an object"));
  EXPECT_TRUE(Has(bad(R"("s":"t")", R"("s":"x")"), "k.json: traceEvents[2].s: expected"));
  EXPECT_TRUE(Has(bad(R"("ts":11,"id":3})", R"("ts":11})"),
                  "k.json: traceEvents[3].id: expected a flow id"));
  EXPECT_TRUE(Has(bad(R"("rank":2)", R"("rank":-2)"),
                  "k.json: distributedInfo.rank: expected an integer ≥ 0, got -2"));
  EXPECT_TRUE(Has(bad(R"("name":"aten::mm")", R"("name":5)"),
                  "k.json: traceEvents[1].name: expected a string, got an integer"));
  // Syntax errors are no list of problems but a failed read naming the file.
  auto broken = CheckKinetoTrace(R"({"schemaVersion":1})", "k.json");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("k.json"), std::string::npos);
}

TEST(CheckKinetoTrace, RealFixturesAreValid) {
  for (const char* name : {"fsdp2_cpu_rank0.json.gz", "fsdp2_llama_cpu_rank3.json.gz"}) {
    const std::string path = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/fixtures/kineto/" + name;
    auto text = ReadFile(path);
    ASSERT_TRUE(text.ok()) << text.status().message();
    auto check = CheckKinetoTrace(*text, path);
    ASSERT_TRUE(check.ok()) << check.status().message();
    EXPECT_EQ(check->problem_count, 0) << check->problems[0];
    EXPECT_GT(check->events_by_ph.at("X"), 1000);
  }
}

}  // namespace
}  // namespace shardscope
