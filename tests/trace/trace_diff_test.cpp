#include "core/trace/trace_diff.h"

#include <gtest/gtest.h>

#include "core/trace/trace_io.h"
#include "tests/trace/trace_test_util.h"

namespace shardscope {
namespace {

Tolerances Loose(const char* op) {
  auto t =
      ParseTolerances(std::string("step_time=100%,exposed_comm=100%,peak_memory=100%,op=") + op);
  EXPECT_TRUE(t.ok());
  return *t;
}

// The event of `t` with this op_id on rank 0.
WorkEvent& Op(Trace& t, std::string_view op_id) {
  for (WorkEvent& e : t.events) {
    if (e.rank == 0 && t.Str(e.op_id) == op_id) return e;
  }
  ADD_FAILURE() << "no op " << op_id;
  return t.events[0];
}

TEST(TraceDiff, IdenticalTracesCompareExactly) {
  // Through the file format, so what diff sees is what the CLI sees.
  auto a = ParseTrace(SerializeTrace(testing::SmallTrace()), "a");
  auto b = ParseTrace(SerializeTrace(testing::SmallTrace()), "b");
  ASSERT_TRUE(a.ok() && b.ok());
  auto r = DiffTraces(*a, *b, DefaultTolerances());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->within_tolerance);
  EXPECT_EQ(r->ops_matched, 8);
  EXPECT_EQ(r->added_count + r->removed_count + r->reordered_count, 0);
  for (const MetricDelta& m : r->metrics) EXPECT_EQ(m.a, m.b) << m.metric;
}

TEST(TraceDiff, OpDurationsAgainstTolerance) {
  Trace a = testing::SmallTrace();
  Trace under = a;
  Op(under, "fwd/layers.1/compute").dur_ns += 40000;
  auto r = DiffTraces(a, under, Loose("50us"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->within_tolerance);
  EXPECT_EQ(r->ops_over, 0);

  Trace over = a;
  Op(over, "fwd/layers.1/compute").dur_ns += 60000;
  r = DiffTraces(a, over, Loose("50us"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->within_tolerance);
  EXPECT_EQ(r->ops_over, 1);
  ASSERT_FALSE(r->metrics.empty());
  EXPECT_TRUE(r->metrics[0].over);  // beyond-tolerance entries come first
  EXPECT_NE(r->metrics[0].metric.find("fwd/layers.1/compute"), std::string::npos);
  EXPECT_EQ(r->metrics[0].b - r->metrics[0].a, 60000);

  // A relative op tolerance: +60 µs on 100 µs is 37.5% of the larger value.
  r = DiffTraces(a, over, Loose("40%"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->within_tolerance);
}

TEST(TraceDiff, StepTimeToleranceUsesDefaults) {
  Trace a = testing::SmallTrace();
  Trace b = a;
  for (WorkEvent& e : b.events) {
    if (b.Str(e.op_id) == "bwd/layers.1/reduce_scatter") e.dur_ns += 30000;  // step 300 → 330 µs
  }
  auto r = DiffTraces(a, b, DefaultTolerances());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->within_tolerance);
  bool step_over = false;
  for (const MetricDelta& m : r->metrics) step_over |= (m.metric == "step_time" && m.over);
  EXPECT_TRUE(step_over);
}

TEST(TraceDiff, StructuralDifferences) {
  Trace a = testing::SmallTrace();
  Trace b = a;
  // Removed: rank 1's reduce-scatter; added: a new op; reordered: rank 0's two compute ops swap.
  b.events.erase(b.events.begin() + 7);
  b.AddWork(0, kLaneAllReduce, "nccl:all_reduce", "bwd/root/all_reduce", 300000, 1000);
  std::swap(Op(b, "fwd/layers.0/compute").start_ns, Op(b, "fwd/layers.1/compute").start_ns);
  b.SortEvents();
  auto r = DiffTraces(a, b, DefaultTolerances());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->within_tolerance);
  ASSERT_EQ(r->removed.size(), 1u);
  EXPECT_NE(r->removed[0].find("rank 1 reduce_scatter: bwd/layers.1/reduce_scatter"),
            std::string::npos);
  ASSERT_EQ(r->added.size(), 1u);
  EXPECT_NE(r->added[0].find("bwd/root/all_reduce"), std::string::npos);
  ASSERT_EQ(r->reordered.size(), 1u);
  EXPECT_NE(r->reordered[0].find("rank 0 compute"), std::string::npos);
  const auto j = DiffToJson(*r);
  EXPECT_EQ(j["structural"]["reordered_count"], 1);
  EXPECT_EQ(j["within_tolerance"], false);
}

TEST(TraceDiff, EventsWithoutOpIdJoinOnLaneAndName) {
  Trace a, b;
  a.AddWork(0, kLaneCompute, "k", "", 0, 10);
  a.AddWork(0, kLaneCompute, "k", "", 20, 10);
  b.AddWork(0, kLaneCompute, "k", "", 0, 10);
  b.AddWork(0, kLaneCompute, "k", "", 20, 10);
  b.AddWork(0, kLaneCompute, "k", "", 40, 10);
  auto r = DiffTraces(a, b, DefaultTolerances());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ops_matched, 2);
  EXPECT_EQ(r->added_count, 1);
}

TEST(TraceDiff, ToleranceParsing) {
  auto t = ParseTolerances("step_time=5%,op=2ms,peak_memory=1GiB");
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(t->at("step_time").relative, 0.05);
  EXPECT_DOUBLE_EQ(t->at("op").absolute, 2e6);
  EXPECT_DOUBLE_EQ(t->at("peak_memory").absolute, 1073741824.0);
  EXPECT_DOUBLE_EQ(t->at("exposed_comm").relative, 0.05);  // default kept
  for (const char* bad : {"speed=1%", "op", "op=fast", "op=5parsecs", "op=-1us"}) {
    auto r = ParseTolerances(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(r.status().message().find("--tol"), std::string::npos);
  }
}

TEST(TraceDiff, Summaries) {
  const nlohmann::json a = {{"step_time_s", 1.0},
                            {"exposed_comm_s", 0.1},
                            {"peak_memory_allocated_gib", 40.0},
                            {"comm_s", {{"all_gather", 0.2}}}};
  nlohmann::json b = a;
  b["step_time_s"] = 1.01;
  auto r = DiffSummaries(a, b, DefaultTolerances(), "a.json", "b.json");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->within_tolerance);
  b["step_time_s"] = 1.03;
  r = DiffSummaries(a, b, DefaultTolerances(), "a.json", "b.json");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->within_tolerance);
  EXPECT_EQ(r->metrics[0].metric, "step_time_s");
  b["peak_memory_allocated_gib"] = "big";
  r = DiffSummaries(a, b, DefaultTolerances(), "a.json", "b.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("b.json: peak_memory_allocated_gib: expected a number"),
            std::string::npos);
}

}  // namespace
}  // namespace shardscope
