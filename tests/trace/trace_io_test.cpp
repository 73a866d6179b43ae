#include "core/trace/trace_io.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "core/util/json_guard.h"
#include "tests/trace/trace_test_util.h"

namespace shardscope {
namespace {

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

TEST(TraceWriter, MicrosecondsHaveExactlyThreeDecimals) {
  EXPECT_EQ(FormatNsAsUs(1), "0.001");
  EXPECT_EQ(FormatNsAsUs(0), "0.000");
  EXPECT_EQ(FormatNsAsUs(999), "0.999");
  EXPECT_EQ(FormatNsAsUs(1000), "1.000");
  EXPECT_EQ(FormatNsAsUs(1234567), "1234.567");
  EXPECT_EQ(FormatNsAsUs(-1500), "-1.500");
  // Beyond double precision (2^53 ns): integer arithmetic keeps every digit.
  EXPECT_EQ(FormatNsAsUs(9007199254740993), "9007199254740.993");
  EXPECT_EQ(FormatNsAsUs(INT64_MIN), "-9223372036854775.808");
}

TEST(TraceReader, MicrosecondTextToNanoseconds) {
  int64_t ns = 0;
  ASSERT_TRUE(ParseUsToNs("1234.567", &ns));
  EXPECT_EQ(ns, 1234567);
  ASSERT_TRUE(ParseUsToNs("12", &ns));
  EXPECT_EQ(ns, 12000);
  ASSERT_TRUE(ParseUsToNs("-1.5", &ns));
  EXPECT_EQ(ns, -1500);
  ASSERT_TRUE(ParseUsToNs("0.0015", &ns));
  EXPECT_EQ(ns, 2);  // rounded half away from zero
  ASSERT_TRUE(ParseUsToNs("0.0014999", &ns));
  EXPECT_EQ(ns, 1);
  ASSERT_TRUE(ParseUsToNs("1.5e3", &ns));
  EXPECT_EQ(ns, 1500000);
  ASSERT_TRUE(ParseUsToNs("5124864270256.119", &ns));  // a Kineto timestamp: 16 digits, exact
  EXPECT_EQ(ns, 5124864270256119);
  EXPECT_FALSE(ParseUsToNs("", &ns));
  EXPECT_FALSE(ParseUsToNs("1.2.3", &ns));
  EXPECT_FALSE(ParseUsToNs("99999999999999999999", &ns));
  // Decimal text is tried first; only what fails as decimal is read with an exponent.
  ASSERT_TRUE(ParseUsToNs("12345678901234567890e-10", &ns));
  EXPECT_EQ(ns, 1234567890123);
  ASSERT_TRUE(ParseUsToNs("-2E1", &ns));
  EXPECT_EQ(ns, -20000);
  EXPECT_FALSE(ParseUsToNs("1.5e", &ns));
  EXPECT_FALSE(ParseUsToNs("-", &ns));
  EXPECT_FALSE(ParseUsToNs("12x", &ns));
  ASSERT_TRUE(ParseUsToNs("9223372036854775.807", &ns));
  EXPECT_EQ(ns, INT64_MAX);
  EXPECT_FALSE(ParseUsToNs("9223372036854775.808", &ns));
}

// Interning: one id per distinct string, found again after the index grows many times over;
// copies index their own strings; a moved-from table interns again from the empty string.
TEST(StringTable, InternFindCopyAndMove) {
  StringTable t;
  std::vector<StrId> ids;
  for (int i = 0; i < 50000; ++i) ids.push_back(t.Intern("op:" + std::to_string(i)));
  EXPECT_EQ(t.size(), 50001u);
  for (int i = 0; i < 50000; ++i) {
    EXPECT_EQ(t.Intern("op:" + std::to_string(i)), ids[i]);
    StrId found = kEmptyStr;
    ASSERT_TRUE(t.Find("op:" + std::to_string(i), &found));
    EXPECT_EQ(found, ids[i]);
    EXPECT_EQ(t.Get(ids[i]), "op:" + std::to_string(i));
  }
  StrId id = 7;
  EXPECT_TRUE(t.Find("", &id));
  EXPECT_EQ(id, kEmptyStr);
  EXPECT_EQ(t.Intern(""), kEmptyStr);
  EXPECT_FALSE(t.Find("op:50000", &id));
  const StringTable copy = t;
  StrId in_copy = kEmptyStr;
  ASSERT_TRUE(copy.Find("op:123", &in_copy));
  EXPECT_EQ(in_copy, ids[123]);
  StringTable moved = std::move(t);
  EXPECT_EQ(moved.Intern("op:5"), ids[5]);
  EXPECT_EQ(t.Get(t.Intern("x")), "x");  // NOLINT(bugprone-use-after-move): reuse is the point
}

// The string table's index grows past its first size (thousands of op_ids), and every rank's
// copy of an op_id gets the one id; the empty string stays id 0 and is stored once.
TEST(TraceReader, RepeatedOpIdsShareOneIdAcrossRanks) {
  Trace t;
  t.metadata.kind = "predicted";
  const int kOps = 3000;
  for (int r = 0; r < 4; ++r) {
    for (int i = 0; i < kOps; ++i) {
      t.AddWork(r, kLaneCompute, i % 2 ? "gemm" : "",
                "fwd/layers." + std::to_string(i) + "/compute:1", int64_t{i} * 1000, 500);
    }
  }
  const Result<Trace> back = ParseTrace(SerializeTrace(t), "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->strings.Get(kEmptyStr), "");
  EXPECT_EQ(back->strings.size(), t.strings.size());
  ASSERT_EQ(back->events.size(), t.events.size());
  std::vector<StrId> first(kOps, kEmptyStr);
  for (const WorkEvent& e : back->events) {
    const std::string_view op = back->Str(e.op_id);
    const int i = std::stoi(std::string(op.substr(op.find('.') + 1)));
    if (first[i] == kEmptyStr) first[i] = e.op_id;
    EXPECT_EQ(e.op_id, first[i]) << op;
    EXPECT_EQ(back->Str(e.name), i % 2 ? "gemm" : "");
  }
}

TEST(TraceWriter, WritesChromeTraceEvents) {
  const std::string text = SerializeTrace(testing::SmallTrace());
  EXPECT_NE(text.find("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{"
                      "\"name\":\"rank 1\"}}"),
            std::string::npos);
  EXPECT_NE(
      text.find("\"name\":\"thread_name\",\"pid\":0,\"tid\":2,\"args\":{\"name\":\"all_gather\"}"),
      std::string::npos);
  EXPECT_NE(text.find("\"ts\":50.000,\"dur\":70.000,\"args\":{\"op_id\":\"fwd/layers.1/"
                      "all_gather\",\"bytes\":67108864,\"group_size\":8,\"busbw_GBps\":123.25}"),
            std::string::npos);
  EXPECT_NE(text.find("\"displayTimeUnit\":\"ns\""), std::string::npos);
  EXPECT_NE(text.find("\"format\":\"shardscope-trace/1\""), std::string::npos);
  EXPECT_NE(text.find("{\"ph\":\"i\",\"name\":\"peak_memory\""), std::string::npos);
  // Samples at one instant form one C event.
  EXPECT_NE(text.find("\"args\":{\"unsharded_params_bytes\":4000,\"allocated_bytes\":5000}"),
            std::string::npos);
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(TraceWriter, CountersOnlyOnChange) {
  Trace t;
  t.AddCounter(0, 0, "allocated_bytes", 10);
  t.AddCounter(0, 5, "allocated_bytes", 10);  // unchanged: dropped
  t.AddCounter(0, 9, "allocated_bytes", 11);
  const std::string text = SerializeTrace(t);
  EXPECT_EQ(Count(text, "\"ph\":\"C\""), 2u);
  EXPECT_EQ(text.find("\"ts\":0.005"), std::string::npos);
}

TEST(TraceWriter, EscapesStrings) {
  Trace t;
  t.AddWork(0, kLaneCompute, "a \"quoted\"\\name\n", "op\t1", 0, 1);
  const std::string text = SerializeTrace(t);
  ASSERT_TRUE(nlohmann::json::accept(text));
  auto back = ParseTrace(text, "mem");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->Str(back->events[0].name), "a \"quoted\"\\name\n");
  EXPECT_EQ(back->Str(back->events[0].op_id), "op\t1");
}

TEST(TraceIo, RoundTripIsLossless) {
  Trace t = testing::SmallTrace();
  t.SetExtraArgs(t.events[0], {{"stream", 7}, {"note", "x"}});
  t.SetExtraArgs(t.markers[0], {{"step", 3}});
  t.metadata.summary = {{"step_time_s", 0.3}};
  t.metadata.library_versions = {{"nccl", "2.30.7"}};
  t.metadata.extra["custom"] = 5;
  t.SortEvents();
  const std::string path = ::testing::TempDir() + "roundtrip.trace.json";
  ASSERT_TRUE(WriteTrace(t, path).ok());
  auto back = ReadTrace(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  const Trace& b = *back;
  EXPECT_EQ(b.import.source, "shardscope");
  EXPECT_TRUE(b.import.problems.empty());
  ASSERT_EQ(b.events.size(), t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    const WorkEvent& x = t.events[i];
    const WorkEvent& y = b.events[i];
    EXPECT_EQ(x.start_ns, y.start_ns);
    EXPECT_EQ(x.dur_ns, y.dur_ns);
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.lane, y.lane);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.group_size, y.group_size);
    EXPECT_EQ(x.flops, y.flops);
    EXPECT_EQ(x.busbw_gbps, y.busbw_gbps);
    EXPECT_EQ(t.Str(x.name), b.Str(y.name));
    EXPECT_EQ(t.Str(x.op_id), b.Str(y.op_id));
    EXPECT_EQ(t.ExtraArgs(x.extra_args), b.ExtraArgs(y.extra_args));
  }
  ASSERT_EQ(b.counters.size(), t.counters.size());
  for (size_t i = 0; i < t.counters.size(); ++i) {
    EXPECT_EQ(t.counters[i].time_ns, b.counters[i].time_ns);
    EXPECT_EQ(t.counters[i].value, b.counters[i].value);
    EXPECT_EQ(t.Str(t.counters[i].key), b.Str(b.counters[i].key));
  }
  ASSERT_EQ(b.markers.size(), t.markers.size());
  EXPECT_EQ(b.ExtraArgs(b.markers[0].extra_args)["step"], 3);
  EXPECT_EQ(b.metadata.kind, "predicted");
  EXPECT_EQ(b.metadata.tool_version, "shardscope test");
  EXPECT_EQ(b.metadata.scenario, t.metadata.scenario);
  EXPECT_EQ(b.metadata.summary, t.metadata.summary);
  EXPECT_EQ(b.metadata.library_versions, t.metadata.library_versions);
  EXPECT_EQ(b.metadata.extra["custom"], 5);
  EXPECT_EQ(b.rank_names.at(1), "rank 1");
  // Writing what was read gives the same bytes.
  EXPECT_EQ(SerializeTrace(b), SerializeTrace(t));
  std::remove(path.c_str());
}

struct BadCase {
  const char* text;
  const char* expected;  // a piece of the message
};

TEST(TraceReader, BadInputsGiveCleanErrors) {
  const std::string meta =
      R"(,"metadata":{"format":"shardscope-trace/1","kind":"predicted","tool_version":"t"}})";
  const BadCase cases[] = {
      {"{", "t.json: not valid JSON at byte"},
      {"[1,2]", "expected a JSON object"},
      {R"({"metadata":{}})", "traceEvents: missing"},
      {R"({"traceEvents":{}})", "traceEvents: expected an array"},
      {R"({"traceEvents":[3]})", "traceEvents[0]: expected an object"},
      {R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":1,"ts":1,"dur":"2"}])",
       "traceEvents[0].dur: expected a number"},
      {R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":1,"ts":1,"dur":-2}])",
       "traceEvents[0].dur: expected a duration"},
      {R"({"traceEvents":[{"ph":"M","name":"process_name","pid":0,"args":{"name":"rank 0"}},{"ph":"X","name":"a","pid":"r","tid":1,"ts":1,"dur":2}])",
       "traceEvents[1].pid: expected an integer"},
      {R"({"traceEvents":[{"ph":"X","pid":0,"tid":1,"ts":1,"dur":2}])",
       "traceEvents[0].name: expected a string"},
      {R"({"traceEvents":[{"ph":"C","name":"memory","pid":0,"ts":1,"args":{"a_bytes":1.5}}])",
       "traceEvents[0].args.a_bytes: expected an integer"},
      {R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":1,"ts":1,"dur":2,"args":[]}])",
       "traceEvents[0].args: expected an object"},
      {R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":1,"ts":1,"dur":2,"args":{"bytes":"9"}}])",
       "traceEvents[0].args.bytes: expected an integer"},
      // A key twice in one object: the last would win silently.
      {R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":1,"ts":1,"ts":900,"dur":2}])",
       "t.json: traceEvents[0]: the key \"ts\" appears twice in one object"},
      {R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":1,"ts":1,"dur":2,"args":{"op_id":"x","op_id":"y"}}])",
       "t.json: traceEvents[0].args: the key \"op_id\" appears twice in one object"},
      {R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":1,"ts":1,"dur":2,"args":{},"args":{}}])",
       "t.json: traceEvents[0]: the key \"args\" appears twice in one object"},
      {R"({"traceEvents":[],"traceEvents":[]})",
       "t.json: the key \"traceEvents\" appears twice in one object"},
  };
  for (const BadCase& c : cases) {
    std::string text = c.text;
    // Valid metadata where the case is about something else.
    if (text.find("\"metadata\"") == std::string::npos && text.size() > 2 && text.back() == '}' &&
        text.find("traceEvents\":[") != std::string::npos) {
      text = text.substr(0, text.size() - 1) + meta;
    }
    auto r = ParseTrace(text, "t.json");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(r.status().message().find(c.expected), std::string::npos)
        << "input: " << c.text << "\nmessage: " << r.status().message();
  }
}

// The depth guard runs inside the one scan (no second pass over the text): what it refuses is
// refused with its own message (key path and line), whatever else the text gets wrong, and
// nesting at its limit still reads.
TEST(TraceReader, DepthGuardMessagesAreTheGuards) {
  const std::string head =
      R"({"metadata":{"format":"shardscope-trace/1","kind":"predicted","tool_version":"t",)";
  const std::string events =
      R"("traceEvents":[{"ph":"X","name":"a","pid":0,"tid":1,"ts":1,"dur":2}]})";
  auto nested = [](int levels) {
    return std::string(static_cast<size_t>(levels), '[') + "1" +
           std::string(static_cast<size_t>(levels), ']');
  };
  // metadata.deep sits at depth 2: kMaxJsonDepth levels in all is the most that reads.
  const std::string at_limit = head + R"("deep":)" + nested(kMaxJsonDepth - 2) + "}," + events;
  auto ok = ParseTrace(at_limit, "t.json");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  const std::string too_deep = head + R"("deep":)" + nested(kMaxJsonDepth - 1) + "}," + events;
  const Status guard = CheckJsonText(too_deep, "t.json");
  ASSERT_FALSE(guard.ok());
  auto deep = ParseTrace(too_deep, "t.json");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().message(), guard.message());
  EXPECT_NE(deep.status().message().find("metadata.deep"), std::string::npos);
  // An event error before the deep part: the guard's message still wins.
  const std::string both =
      R"({"traceEvents":[{"ph":"X","name":"a","pid":"x","tid":1,"ts":1,"dur":2},)"
      R"({"ph":"X","name":"a","pid":0,"tid":1,"ts":1,"dur":2,"args":{"k":)" +
      nested(100000) + "}}]}";
  auto r = ParseTrace(both, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), CheckJsonText(both, "t.json").message());
  // A number beyond a double.
  const std::string huge = R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":1,"ts":1e400,)"
                           R"("dur":2}],"metadata":{}})";
  auto h = ParseTrace(huge, "t.json");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(h.status().message(), CheckJsonText(huge, "t.json").message());
  EXPECT_NE(h.status().message().find("1e400"), std::string::npos);
}

// SortEvents orders by (rank, lane, start, longer first) and keeps the order of equal events,
// as one stable sort does, whether the lanes arrive interleaved, in order or reversed.
TEST(TraceModel, SortEventsIsAStableSortByRankLaneStart) {
  Trace t;
  uint64_t x = 12345;
  auto next = [&x] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>(x >> 33);
  };
  for (int i = 0; i < 3000; ++i) {
    const int rank = static_cast<int>(next() % 3);
    const int lane = 1 + static_cast<int>(next() % 3);
    // By time mostly (as a file holds them), some starts repeated and some out of order.
    const int64_t start = i < 2000 ? i * 10 + (next() % 4 == 0 ? -15 : 0) : next() % 500;
    WorkEvent& e = t.AddWork(rank, lane, "k", "", start, next() % 3);
    e.bytes = i;  // the original position, to check stability
  }
  std::vector<WorkEvent> want = t.events;
  std::stable_sort(want.begin(), want.end(), [](const WorkEvent& a, const WorkEvent& b) {
    return std::tie(a.rank, a.lane, a.start_ns, b.dur_ns) <
           std::tie(b.rank, b.lane, b.start_ns, a.dur_ns);
  });
  t.SortEvents();
  ASSERT_EQ(t.events.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(t.events[i].bytes, want[i].bytes) << "position " << i;
  }
}

TEST(TraceReader, MissingFileNamesThePath) {
  auto r = ReadTrace("/nonexistent/x.trace.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/x.trace.json"), std::string::npos);
}

TEST(TraceReader, UnknownFormatIsRefused) {
  auto r = ParseTrace(R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":1,"ts":1,"dur":2}]})",
                      "plain.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("neither a shardscope trace"), std::string::npos);
  auto wrong = ParseTrace(
      R"({"traceEvents":[],"metadata":{"format":"other/2","kind":"predicted","tool_version":"x"}})",
      "w.json");
  ASSERT_FALSE(wrong.ok());
}

}  // namespace
}  // namespace shardscope
