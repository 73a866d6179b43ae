#include "core/trace/trace_diff.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "core/trace/trace_io.h"
#include "tests/trace/trace_test_util.h"

namespace shardscope {
namespace {

// Only the op tolerance limits: a longer op moves the headlines too (a longer compute op of
// rank 0 covers its reduce-scatter, and the slowest rank's exposed time drops from 70 to 20 µs).
Tolerances Loose(const char* op) {
  auto t =
      ParseTolerances(std::string("step_time=100%,exposed_comm=off,peak_memory=100%,op=") + op);
  EXPECT_TRUE(t.ok());
  return *t;
}

// `t` with rank `rank`'s events, counters and markers only.
void KeepRank(Trace* t, int rank) {
  std::erase_if(t->events, [&](const WorkEvent& e) { return e.rank != rank; });
  std::erase_if(t->counters, [&](const CounterSample& c) { return c.rank != rank; });
  std::erase_if(t->markers, [&](const Marker& m) { return m.rank != rank; });
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

  // A relative op tolerance is of A's value: +60 µs on 100 µs is 60%.
  r = DiffTraces(a, over, Loose("60%"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->within_tolerance);
  r = DiffTraces(a, over, Loose("59%"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->within_tolerance);

  // One-sided: the op got slower, so only "+" and two-sided limits catch it.
  r = DiffTraces(a, over, Loose("-50us"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->within_tolerance);
  r = DiffTraces(over, a, Loose("+50us"));  // 60 µs faster
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->within_tolerance);
  r = DiffTraces(over, a, Loose("-50us"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->within_tolerance);
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
  EXPECT_EQ(t->at("step_time").side, ToleranceSide::kBoth);
  EXPECT_DOUBLE_EQ(t->at("op").absolute, 2e6);
  EXPECT_DOUBLE_EQ(t->at("peak_memory").absolute, 1073741824.0);
  EXPECT_DOUBLE_EQ(t->at("exposed_comm").relative, 0.05);  // default kept
  t = ParseTolerances("step_time=+2%,op=-50us,peak_memory=off,exposed_comm=none,compute=+1ms");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->at("step_time").side, ToleranceSide::kIncrease);
  EXPECT_DOUBLE_EQ(t->at("step_time").relative, 0.02);
  EXPECT_EQ(t->at("step_time").text, "+2%");
  EXPECT_EQ(t->at("op").side, ToleranceSide::kDecrease);
  EXPECT_DOUBLE_EQ(t->at("op").absolute, 5e4);
  EXPECT_EQ(t->count("peak_memory"), 0u);  // off: reported, never fails
  EXPECT_EQ(t->count("exposed_comm"), 0u);
  EXPECT_DOUBLE_EQ(t->at("compute").absolute, 1e6);
  struct Bad {
    const char* spec;
    const char* says;
  };
  for (const Bad& bad :
       {Bad{"speed=1%", "metric one of"}, Bad{"op", "metric one of"}, Bad{"op=fast", "a number"},
        Bad{"op=5parsecs", "unknown unit \"parsecs\""}, Bad{"op=+-1us", "a number"},
        Bad{"step_time=2%,step_time=30%", "step_time is given twice"},
        Bad{"step_time=0x10%", "unknown unit \"x10%\""},
        Bad{",step_time=2%", "an empty item (a stray comma?)"},
        Bad{"step_time=2%,", "an empty item"}, Bad{"step_time=2%,,op=off", "an empty item"},
        Bad{"step_time=2", "a unit is required"},
        Bad{"peak_memory=50us", "unknown unit \"us\" (expected % or one of B,"},
        Bad{"step_time=1GiB", "one of ns, us, ms, s for step_time"}, Bad{"op=+", "a number"},
        Bad{"op=1e308s", "too large (past the double range in nanoseconds)"},
        Bad{"peak_memory=1e300GiB", "too large (past the double range in bytes)"}}) {
    auto r = ParseTolerances(bad.spec);
    ASSERT_FALSE(r.ok()) << bad.spec;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(r.status().message().find("--tol"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(bad.says), std::string::npos) << r.status().message();
  }
  // The help text carries the defaults from the one place they are defined.
  EXPECT_NE(ToleranceHelp().find("Defaults: exposed_comm=5%,op=50us,peak_memory=1%,step_time=2%"),
            std::string::npos)
      << ToleranceHelp();
}

// Each tolerance form against a regression and an improvement of 5.5% (and 1%) of a 1 s step.
TEST(TraceDiff, ToleranceFormsAgainstRegressionAndImprovement) {
  struct Case {
    const char* tol;
    double b;  // step_time_s in B; A has 1.0
    bool within;
  };
  const Case cases[] = {
      {"step_time=2%", 1.055, false},    {"step_time=2%", 0.945, false},
      {"step_time=2%", 1.01, true},      {"step_time=2%", 0.99, true},
      {"step_time=+2%", 1.055, false},   {"step_time=+2%", 0.945, true},
      {"step_time=+2%", 1.01, true},     {"step_time=-2%", 1.055, true},
      {"step_time=-2%", 0.945, false},   {"step_time=-2%", 0.99, true},
      {"step_time=50ms", 1.055, false},  {"step_time=50ms", 0.945, false},
      {"step_time=50ms", 1.04, true},    {"step_time=+50ms", 0.945, true},
      {"step_time=+50ms", 1.055, false}, {"step_time=-50ms", 1.055, true},
      {"step_time=-50ms", 0.945, false}, {"step_time=off", 1.055, true},
      {"step_time=off", 0.5, true},      {"step_time=6%", 1.055, true},
  };
  const nlohmann::json a = {{"step_time_s", 1.0}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.tol << " with B = " << c.b << " s");
    auto tol = ParseTolerances(c.tol);
    ASSERT_TRUE(tol.ok()) << tol.status().message();
    auto r = DiffSummaries(a, {{"step_time_s", c.b}}, *tol, "a.json", "b.json");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->within_tolerance, c.within);
  }
  // Memory, one-sided absolute: +1 GiB allows any shrink and growth up to 1 GiB.
  auto tol = ParseTolerances("peak_memory=+1GiB");
  ASSERT_TRUE(tol.ok());
  const nlohmann::json ma = {{"step_time_s", 1.0}, {"peak_memory_reserved_gib", 40.0}};
  for (const auto& [gib, within] : {std::pair{41.5, false}, {40.9, true}, {30.0, true}}) {
    auto r = DiffSummaries(ma, {{"step_time_s", 1.0}, {"peak_memory_reserved_gib", gib}}, *tol,
                           "a.json", "b.json");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->within_tolerance, within) << gib;
  }
}

TEST(TraceDiff, LosingTheFitAlwaysFails) {
  const nlohmann::json a = {
      {"step_time_s", 1.0}, {"peak_memory_reserved_gib", 78.0}, {"fits", true}};
  nlohmann::json b = a;
  b["peak_memory_reserved_gib"] = 78.5;
  b["fits"] = false;
  for (const char* spec : {"peak_memory=100%", "peak_memory=off", "peak_memory=+10GiB"}) {
    auto tol = ParseTolerances(spec);
    ASSERT_TRUE(tol.ok());
    auto r = DiffSummaries(a, b, *tol, "a.json", "b.json");
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->within_tolerance) << spec;
    EXPECT_TRUE(r->fit_lost);
    EXPECT_EQ(r->fit_change, "fits → does not fit");
    EXPECT_EQ(DiffToJson(*r)["fit_change"], "fits → does not fit");
    // The other way is an improvement: reported, not a failure.
    r = DiffSummaries(b, a, *tol, "b.json", "a.json");
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->within_tolerance) << spec;
    EXPECT_EQ(r->fit_change, "does not fit → fits");
  }
  auto same = DiffSummaries(a, a, DefaultTolerances(), "a.json", "a.json");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->fit_change, "");
  EXPECT_TRUE(DiffToJson(*same)["fit_change"].is_null());
  b["fits"] = "no";
  auto bad = DiffSummaries(a, b, DefaultTolerances(), "a.json", "b.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "b.json: fits: expected true or false, got \"no\"");
  // Traces carry the summary in their metadata.
  Trace ta = testing::SmallTrace();
  Trace tb = ta;
  ta.metadata.summary = {{"fits", true}};
  tb.metadata.summary = {{"fits", false}};
  auto tr = DiffTraces(ta, tb, DefaultTolerances());
  ASSERT_TRUE(tr.ok());
  EXPECT_FALSE(tr->within_tolerance);
  EXPECT_TRUE(tr->fit_lost);
}

// Reserved memory decides whether a job fits: a trace diff compares it under the peak_memory
// tolerance, as a summary diff does (it compared only the allocated peak and passed a +4%
// reserved regression of the HSDP 70B example that the summaries' diff failed).
TEST(TraceDiff, TheReservedPeakIsComparedToo) {
  Trace a = testing::SmallTrace();
  for (int r = 0; r < 2; ++r) a.AddCounter(r, 50000, "reserved_bytes", 100000);
  Trace b = a;
  for (CounterSample& c : b.counters) {
    if (b.Str(c.key) == "reserved_bytes") c.value = 104000;
  }
  auto r = DiffTraces(a, b, DefaultTolerances());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->within_tolerance);
  bool seen = false;
  for (const MetricDelta& m : r->metrics) {
    if (m.metric != "peak_memory_reserved") continue;
    seen = true;
    EXPECT_EQ(m.a, 100000);
    EXPECT_EQ(m.b, 104000);
    EXPECT_TRUE(m.over);
  }
  EXPECT_TRUE(seen);
  auto loose = ParseTolerances("peak_memory=5%");
  ASSERT_TRUE(loose.ok());
  r = DiffTraces(a, b, *loose);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->within_tolerance);
  // Traces without the series compare no reserved peak.
  auto plain = DiffTraces(testing::SmallTrace(), testing::SmallTrace(), DefaultTolerances());
  ASSERT_TRUE(plain.ok());
  for (const MetricDelta& m : plain->metrics) EXPECT_NE(m.metric, "peak_memory_reserved");
}

// A run that failed (a timeout, out of memory) stops at the failure: its outputs looked complete
// and passed any tolerance.
TEST(TraceDiff, AFailedRunIsNeverWithinTolerance) {
  const nlohmann::json a = {{"step_time_s", 1.0}, {"fits", true}};
  nlohmann::json b = a;
  b["failure"] = "bwd/model.layers.0/all_gather did not complete within --timeout 0.0005 s";
  auto r = DiffSummaries(a, b, DefaultTolerances(), "a.json", "b.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->within_tolerance);
  ASSERT_EQ(r->failed_runs.size(), 1u);
  EXPECT_EQ(r->failed_runs[0].rfind("B is a failed run: bwd/model.layers.0/all_gather", 0), 0u);
  EXPECT_EQ(DiffToJson(*r)["failed_runs"].size(), 1u);
  Trace ta = testing::SmallTrace();
  Trace tb = ta;
  tb.metadata.summary = b;
  auto tr = DiffTraces(ta, tb, DefaultTolerances());
  ASSERT_TRUE(tr.ok());
  EXPECT_FALSE(tr->within_tolerance);
  b["failure"] = 3;
  EXPECT_FALSE(DiffSummaries(a, b, DefaultTolerances(), "a.json", "b.json").ok());
  // A bad metadata summary is named by its trace's file ("B's metadata summary" left the user
  // to guess which).
  tb.import.path = "measured.json";
  tb.metadata.summary = {{"step_time_s", 1.0}, {"fits", "no"}};
  tr = DiffTraces(ta, tb, DefaultTolerances());
  ASSERT_FALSE(tr.ok());
  EXPECT_NE(tr.status().message().find("measured.json: metadata.summary: fits"), std::string::npos)
      << tr.status().message();
}

// `run --trace o{rank}.json` writes one rank per file: rank 1's file joins the prediction's
// role that stands for it, and a file of one rank is compared on that rank alone (rank 1 joined
// nothing, and a pipeline's rank file failed on the other stage's every op).
TEST(TraceDiff, OneRanksFileJoinsTheRoleThatStandsForIt) {
  Trace predicted = testing::SmallTrace();  // ranks 0 and 1, alike
  Trace one_role = predicted;
  KeepRank(&one_role, 0);
  one_role.metadata.extra["roles"] = {{{"name", "fsdp"}, {"rank", 0}, {"ranks_like", 4}}};
  Trace rank3 = predicted;
  KeepRank(&rank3, 1);
  for (WorkEvent& e : rank3.events) e.rank = 3;
  for (CounterSample& c : rank3.counters) c.rank = 3;
  for (Marker& m : rank3.markers) m.rank = 3;
  auto r = DiffTraces(one_role, rank3, DefaultTolerances());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->within_tolerance);
  EXPECT_EQ(r->ops_matched, r->ops_a);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0],
            "B's rank 3 compared with A's role 'fsdp' (rank 0, which stands for ranks 0 to 3)");
  // The prediction as B: the same join, said from the other side.
  r = DiffTraces(rank3, one_role, DefaultTolerances());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->within_tolerance);
  EXPECT_EQ(r->ops_matched, r->ops_b);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0],
            "A's rank 3 compared with B's role 'fsdp' (rank 0, which stands for ranks 0 to 3)");
  // A rank the roles do not cover joins nothing, as before.
  for (WorkEvent& e : rank3.events) e.rank = 9;
  r = DiffTraces(one_role, rank3, DefaultTolerances());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->within_tolerance);
  EXPECT_EQ(r->ops_matched, 0);
  // Two ranks against one rank's file: that rank alone.
  Trace rank1 = predicted;
  KeepRank(&rank1, 1);
  r = DiffTraces(predicted, rank1, DefaultTolerances());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->within_tolerance);
  EXPECT_EQ(r->removed_count, 0);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0], "B holds rank 1 alone: A's other ranks are left out");
  EXPECT_EQ(DiffToJson(*r)["notes"].size(), 1u);
}

TEST(TraceDiff, JsonFieldsHoldWhatTheirNamesSay) {
  const nlohmann::json a = {{"step_time_s", 1.5},
                            {"peak_memory_allocated_gib", 40.0},
                            {"comm_s", {{"all_reduce", 0.0}, {"all_gather", 0.2}}}};
  nlohmann::json b = a;
  b["comm_s"]["all_reduce"] = 1.47509;
  auto r = DiffSummaries(a, b, DefaultTolerances(), "a.json", "b.json");
  ASSERT_TRUE(r.ok());
  const nlohmann::json j = DiffToJson(*r);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& m : j["metrics"]) by_name[m["metric"].get<std::string>()] = m;
  ASSERT_EQ(by_name.count("step_time_s"), 1u);
  EXPECT_EQ(by_name["step_time_s"]["unit"], "s");
  EXPECT_DOUBLE_EQ(by_name["step_time_s"]["a"].get<double>(), 1.5);
  EXPECT_EQ(by_name["peak_memory_allocated_gib"]["unit"], "GiB");
  EXPECT_DOUBLE_EQ(by_name["peak_memory_allocated_gib"]["b"].get<double>(), 40.0);
  EXPECT_EQ(by_name["comm_s.all_reduce"]["unit"], "s");
  EXPECT_DOUBLE_EQ(by_name["comm_s.all_reduce"]["delta"].get<double>(), 1.47509);
  EXPECT_TRUE(by_name["comm_s.all_reduce"]["relative"].is_null());  // new in B
  EXPECT_DOUBLE_EQ(by_name["comm_s.all_gather"]["relative"].get<double>(), 0.0);
  // Absolute tolerances apply in base units: 40 GiB → 40.5 GiB is beyond 256 MiB.
  b["peak_memory_allocated_gib"] = 40.5;
  auto tol = ParseTolerances("peak_memory=256MiB");
  ASSERT_TRUE(tol.ok());
  r = DiffSummaries(a, b, *tol, "a.json", "b.json");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->within_tolerance);
  // A relative tolerance allows no change from 0.
  MetricDelta from_zero;
  from_zero.b = 1;
  EXPECT_FALSE(from_zero.relative().has_value());
  Tolerance pct;
  pct.relative = 0.5;
  EXPECT_FALSE(pct.Allows(0, 1));
  EXPECT_TRUE(pct.Allows(0, 0));
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

// The breakdowns by kind and purpose: a figure on one side only is listed (0 on the other), and
// one that is not a number, or a group that is not an object, is bad input naming it.
TEST(TraceDiff, SummaryBreakdownsListEveryFigureAndCheckThem) {
  const nlohmann::json a = {{"step_time_s", 1.0},
                            {"comm_s", {{"all_gather", 0.2}}},
                            {"comm_by_purpose_s", {{"fsdp_all_gather", 0.2}}}};
  nlohmann::json b = a;
  b["comm_s"]["all_to_all"] = 5.0;
  b["comm_by_purpose_s"] = {{"tp", 0.25}};
  auto r = DiffSummaries(a, b, DefaultTolerances(), "a.json", "b.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::map<std::string, MetricDelta> by_name;
  for (const MetricDelta& m : r->metrics) by_name[m.metric] = m;
  ASSERT_EQ(by_name.count("comm_s.all_to_all"), 1u);
  EXPECT_DOUBLE_EQ(by_name["comm_s.all_to_all"].b, 5.0);
  EXPECT_FALSE(by_name["comm_s.all_to_all"].relative().has_value());  // new in B
  ASSERT_EQ(by_name.count("comm_by_purpose_s.tp"), 1u);
  ASSERT_EQ(by_name.count("comm_by_purpose_s.fsdp_all_gather"), 1u);  // gone from B
  EXPECT_DOUBLE_EQ(by_name["comm_by_purpose_s.fsdp_all_gather"].b, 0.0);
  EXPECT_DOUBLE_EQ(*by_name["comm_by_purpose_s.fsdp_all_gather"].relative(), -1.0);
  EXPECT_TRUE(r->within_tolerance);  // reported, not limited
  for (const nlohmann::json& bad : {nlohmann::json("lots"), nlohmann::json(nullptr),
                                    nlohmann::json(true), nlohmann::json::array({1})}) {
    nlohmann::json c = a;
    c["comm_s"]["all_gather"] = bad;
    r = DiffSummaries(a, c, DefaultTolerances(), "a.json", "b.json");
    ASSERT_FALSE(r.ok()) << bad.dump();
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(r.status().message().find("b.json: comm_s.all_gather: expected a number"),
              std::string::npos)
        << r.status().message();
  }
  nlohmann::json c = a;
  c["comm_by_purpose_s"] = "n/a";
  r = DiffSummaries(a, c, DefaultTolerances(), "a.json", "b.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("b.json: comm_by_purpose_s: expected an object of figures"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace shardscope
