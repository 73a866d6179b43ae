// Level 1: the view model with no window and no ImGui: viewport mapping and zoom, merging of
// sub-pixel items, the op_id join table and its order, range limits, memory downsampling.
#include <gtest/gtest.h>

#include <memory>

#include "tests/viewer/viewer_test_util.h"
#include "viewer/compare_model.h"
#include "viewer/merge.h"
#include "viewer/summary_model.h"
#include "viewer/trace_view.h"
#include "viewer/viewer_state.h"
#include "viewer/viewport.h"

namespace shardscope::viewer {
namespace {

using testing::MeasuredPair;
using testing::PredictedPair;

TEST(Viewport, MapsTimeToPixelsBothWays) {
  Viewport vp;
  vp.start_ns = 1000;
  vp.span_ns = 2000;
  vp.width_px = 500;
  EXPECT_DOUBLE_EQ(vp.TimeToX(1000), 0.0);
  EXPECT_DOUBLE_EQ(vp.TimeToX(3000), 500.0);
  EXPECT_DOUBLE_EQ(vp.TimeToX(2000), 250.0);
  EXPECT_EQ(vp.XToTime(125), 1500);
  EXPECT_EQ(vp.end_ns(), 3000);
}

TEST(Viewport, ZoomKeepsThePointUnderTheCursor) {
  for (double x : {0.0, 137.0, 499.0, 250.5}) {
    for (double factor : {0.5, 0.8, 1.25, 3.0, 1e-6}) {
      Viewport vp;
      vp.start_ns = 123'456;
      vp.span_ns = 10'000'000;
      vp.width_px = 500;
      const int64_t before = vp.XToTime(x);
      vp.ZoomAt(x, factor);
      EXPECT_NEAR(static_cast<double>(vp.XToTime(x)), static_cast<double>(before), 1.0)
          << "x " << x << " factor " << factor;
      EXPECT_GE(vp.span_ns, Viewport::kMinSpanNs);
    }
  }
}

TEST(Viewport, PanAndFit) {
  Viewport vp;
  vp.width_px = 100;
  vp.Fit(0, 1000, 0.0);
  EXPECT_EQ(vp.start_ns, 0);
  EXPECT_EQ(vp.span_ns, 1000);
  vp.Pan(10);  // content moves right by 10 px = 100 ns: earlier times come into view
  EXPECT_EQ(vp.start_ns, -100);
  vp.CenterOn(5000);
  EXPECT_EQ(vp.start_ns, 4500);
}

// `n` items of `dur` ns every `every` ns on rank 0's compute lane, then one of `wide` ns.
TraceView Evenly(int n, int64_t dur, int64_t every, int64_t wide_start, int64_t wide) {
  Trace t;
  for (int i = 0; i < n; ++i) t.AddWork(0, kLaneCompute, "k", "", i * every, dur);
  if (wide > 0) t.AddWork(0, kLaneCompute, "big", "", wide_start, wide);
  return MakeTraceView(std::move(t), "t");
}

TEST(Merge, FoldsContiguousSubPixelItemsAndKeepsWideOnes) {
  const TraceView v = Evenly(1000, 10, 10, 20'000, 10'000);
  Viewport vp;
  vp.start_ns = 0;
  vp.span_ns = 40'000;
  vp.width_px = 400;  // 100 ns per pixel: every 10 ns item is sub-pixel
  std::vector<DrawItem> boxes;
  VisibleItems(v.tracks[0], vp, 1.0, &boxes);
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes[0].count, 1000u);
  EXPECT_EQ(boxes[0].start_ns, 0);
  EXPECT_GE(boxes[0].end_ns, 10'000);
  EXPECT_LE(boxes[0].end_ns, 10'100);  // at most one merge width past the last end
  EXPECT_EQ(boxes[1].count, 1u);
  EXPECT_EQ(boxes[1].start_ns, 20'000);
}

TEST(Merge, SeparatedItemsStayApartAndZoomInShowsEveryItem) {
  const TraceView v = Evenly(100, 10, 1000, 0, 0);  // 10 px apart at 100 ns/px
  Viewport vp;
  vp.start_ns = 0;
  vp.span_ns = 100'000;
  vp.width_px = 1000;
  std::vector<DrawItem> boxes;
  VisibleItems(v.tracks[0], vp, 1.0, &boxes);
  EXPECT_EQ(boxes.size(), 100u);
  // Zoomed in to 1 ns per pixel over [5000, 6000): items 5 and (ending at 6010) not 6's start.
  vp.start_ns = 5000;
  vp.span_ns = 1000;
  VisibleItems(v.tracks[0], vp, 1.0, &boxes);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].start_ns, 5000);
  EXPECT_EQ(boxes[0].end_ns, 5010);
}

TEST(Merge, CountsEveryVisibleItemOnceAtAnyZoom) {
  const TraceView v = Evenly(5000, 7, 13, 0, 0);
  for (int64_t span : {100LL, 1'000LL, 10'000LL, 65'000LL, 1'000'000LL}) {
    Viewport vp;
    vp.start_ns = 100;
    vp.span_ns = span;
    vp.width_px = 300;
    std::vector<DrawItem> boxes;
    VisibleItems(v.tracks[0], vp, 1.0, &boxes);
    uint64_t counted = 0;
    for (const DrawItem& b : boxes) counted += b.count;
    uint64_t expected = 0;
    for (const LaneItem& it : v.tracks[0].items) {
      expected += it.end_ns > vp.start_ns && it.start_ns < vp.end_ns() ? 1 : 0;
    }
    EXPECT_EQ(counted, expected) << "span " << span;
    EXPECT_LE(boxes.size(), 300u + 1) << "never more boxes than pixels";
  }
}

TEST(TraceView, AlignsAtStepStartAndComputesExposedTime) {
  const TraceView b = MakeTraceView(MeasuredPair(), "");
  EXPECT_EQ(b.label, "measured");
  EXPECT_EQ(b.origin_ns, 1000);
  const Track* compute = b.FindTrack(0, kLaneCompute);
  ASSERT_NE(compute, nullptr);
  EXPECT_EQ(compute->items.front().start_ns, 0);
  const Track* ag = b.FindTrack(0, kLaneAllGather);
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->items[0].kind, ItemKind::kAllGather);
  EXPECT_EQ(b.exposed_ns[ag->items[0].event], 20);  // [100,180) minus compute [80,160)
}

// Tracks from events in any order (a trace built in memory, not sorted): one per (rank, lane)
// in that order, items by start (equal starts keep the events' order), kinds per lane and name.
TEST(TraceView, TracksFromUnsortedEvents) {
  Trace t;
  t.AddWork(1, kLaneAllGather, "nccl:all_gather", "fwd/a/all_gather", 50, 10);
  t.AddWork(0, kLaneCompute, "gemm", "fwd/a/compute", 30, 5);
  t.AddWork(1, kLaneAllGather, "copy_in", "fwd/b/all_gather", 20, 10);
  t.AddWork(0, kLaneCompute, "gemm", "fwd/b/compute", 10, 5);
  t.AddWork(0, kLaneCompute, "gemm", "fwd/c/compute", 10, 7);
  t.AddWork(0, kLaneH2D, "nccl_looking_copy", "fwd/a/h2d", 0, 3);
  const TraceView v = MakeTraceView(t, "x");
  ASSERT_EQ(v.tracks.size(), 3u);
  EXPECT_EQ(std::make_pair(v.tracks[0].rank, v.tracks[0].lane), std::make_pair(0, kLaneCompute));
  EXPECT_EQ(std::make_pair(v.tracks[1].rank, v.tracks[1].lane), std::make_pair(0, kLaneH2D));
  EXPECT_EQ(std::make_pair(v.tracks[2].rank, v.tracks[2].lane), std::make_pair(1, kLaneAllGather));
  const std::vector<LaneItem>& compute = v.tracks[0].items;
  ASSERT_EQ(compute.size(), 3u);
  EXPECT_EQ(compute[0].event, 3u);  // start 10, added first of the two at 10
  EXPECT_EQ(compute[1].event, 4u);
  EXPECT_EQ(compute[2].event, 1u);
  EXPECT_EQ(v.tracks[0].max_end, (std::vector<int64_t>{15, 17, 35}));
  EXPECT_EQ(v.tracks[1].items[0].kind, ItemKind::kCopy);
  const std::vector<LaneItem>& ag = v.tracks[2].items;
  ASSERT_EQ(ag.size(), 2u);
  EXPECT_EQ(ag[0].kind, ItemKind::kCopy);  // not an nccl kernel
  EXPECT_EQ(ag[1].kind, ItemKind::kAllGather);
  EXPECT_EQ(v.end_ns, 60);
}

TEST(RowIndex, SetFindReplaceAndGrow) {
  RowIndex index;
  EXPECT_EQ(index.Find(0, 1), -1);
  for (int i = 0; i < 5000; ++i) index.Set(i % 8, static_cast<StrId>(i), i);
  for (int i = 0; i < 5000; ++i) EXPECT_EQ(index.Find(i % 8, static_cast<StrId>(i)), i);
  EXPECT_EQ(index.Find(1, 0), -1);  // (0, 0) is set, not (1, 0)
  index.Set(3, 11, 77);
  EXPECT_EQ(index.Find(3, 11), 77);
  index.Reset(10);
  EXPECT_EQ(index.Find(3, 11), -1);
}

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetTraces(&s, std::make_shared<const TraceView>(MakeTraceView(PredictedPair(), "")),
              std::make_shared<const TraceView>(MakeTraceView(MeasuredPair(), "")));
  }
  std::vector<std::string> Order() const {
    std::vector<std::string> out;
    for (const CompareRow& r : s.rows) out.push_back(r.op_id);
    return out;
  }
  ViewerState s;
};

TEST_F(CompareTest, JoinsByOpIdAcrossUnitSpellingsAndSortsByImpact) {
  ASSERT_EQ(s.rows.size(), 4u);
  EXPECT_EQ(Order(),
            (std::vector<std::string>{"fwd/model.layers.0/compute", "fwd/model.layers.0/all_gather",
                                      "bwd/root/compute", "bwd/only_here/compute"}));
  const CompareRow& layer = s.rows[0];
  EXPECT_EQ(layer.op_id_b, "fwd/layers.0/compute");
  EXPECT_EQ(layer.dur_a_ns, 100);
  EXPECT_EQ(layer.dur_b_ns, 150);  // two kernels summed
  EXPECT_EQ(layer.count_b, 2);
  EXPECT_EQ(RowEvents(layer, *s.b, 1).size(), 2u);
  EXPECT_EQ(layer.delta_ns(), 50);
  EXPECT_DOUBLE_EQ(layer.delta_pct(), 50.0);
  EXPECT_EQ(s.rows[1].impact_ns(), 20);  // exposed 0 → 20
  EXPECT_FALSE(s.rows[3].in_a());
  EXPECT_EQ(FindRow(s, 1, 0, "fwd/layers.0/all_gather"), 1);
  EXPECT_EQ(FindRow(s, 0, 0, "fwd/model.layers.0/all_gather"), 1);
}

TEST_F(CompareTest, SortsByAnyColumnAndKeepsTheSelection) {
  SelectRow(&s, 2);  // bwd/root/compute
  SortRows(&s, CompareColumn::kDelta, /*descending=*/false);
  EXPECT_EQ(Order(), (std::vector<std::string>{"bwd/root/compute", "bwd/only_here/compute",
                                               "fwd/model.layers.0/all_gather",
                                               "fwd/model.layers.0/compute"}));
  ASSERT_GE(s.selected_row, 0);
  EXPECT_EQ(s.rows[s.selected_row].op_id, "bwd/root/compute");
  SortRows(&s, CompareColumn::kDeltaPct, /*descending=*/true);
  EXPECT_EQ(s.rows[0].op_id, "fwd/model.layers.0/all_gather");
  EXPECT_EQ(s.rows[s.selected_row].op_id, "bwd/root/compute");
}

TEST_F(CompareTest, SelectingARowBringsItIntoView) {
  s.viewport.width_px = 100;
  s.viewport.Fit(10'000, 20'000, 0);
  SelectRow(&s, 2);  // bwd/root/compute at [200, 300) in A
  EXPECT_LE(s.viewport.start_ns, 200);
  EXPECT_GE(s.viewport.end_ns(), 300);
}

TEST_F(CompareTest, RangeLimitsTableAndSummary) {
  SetRange(&s, TimeRange{250, 150});  // reversed on purpose
  ASSERT_TRUE(s.range.has_value());
  EXPECT_EQ(s.range->lo_ns, 150);
  const std::vector<int> rows = VisibleRowIndices(s);
  EXPECT_EQ(rows.size(), 3u);  // only_here runs at [300, 305)
  SetRange(&s, TimeRange{100, 200});
  EXPECT_EQ(s.summary[1].step_ns, 100);
  EXPECT_EQ(s.summary[1].exposed_comm_ns, 20);
  EXPECT_DOUBLE_EQ(s.summary[1].overlap_ratio, 0.75);
  EXPECT_EQ(s.summary[0].peak_allocated_bytes, 55);  // the sample at 150
  ClearRange(&s);
  EXPECT_EQ(VisibleRowIndices(s).size(), 4u);
  EXPECT_EQ(s.summary[0].exposed_comm_ns, 0);
}

// A range is accounted by kind, as `stats` accounts the step: a TP all-reduce issued on the
// compute stream is communication (exposed: nothing else computes meanwhile), and the worst
// rank's figures are reported.
// The error column: B against A, and none where A is 0 and B is not (nothing predicted against
// 12.7 ms measured read +0.0%).
TEST(Summary, RelativeErrorIsNoneWhenOnlyAIsZero) {
  EXPECT_DOUBLE_EQ(*RelativeError(100, 110), 0.1);
  EXPECT_DOUBLE_EQ(*RelativeError(100, 50), -0.5);
  EXPECT_DOUBLE_EQ(*RelativeError(0, 0), 0.0);
  EXPECT_FALSE(RelativeError(0, 12.7e6).has_value());
}

TEST(Summary, RangeClassifiesByKindNotLane) {
  Trace t;
  t.AddMarker(0, 0, "step_begin");
  t.AddWork(0, kLaneCompute, "gemm", "fwd/a/compute", 0, 100);
  t.AddWork(0, kLaneCompute, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "fwd/a/all_reduce", 100,
            40);
  t.AddWork(0, kLaneAllGather, "ncclAllGather", "fwd/b/all_gather", 20, 30);  // hidden
  t.AddWork(1, kLaneCompute, "gemm", "fwd/a/compute", 0, 100);
  t.AddWork(1, kLaneAllGather, "ncclAllGather", "fwd/b/all_gather", 90, 30);  // 20 exposed
  const TraceView v = MakeTraceView(std::move(t), "t");
  const SummaryFigures f = ComputeSummary(v, TimeRange{0, 200});
  EXPECT_EQ(f.step_ns, 200);
  EXPECT_EQ(f.exposed_comm_ns, 40);  // rank 0: the all-reduce on the compute lane
  EXPECT_DOUBLE_EQ(f.overlap_ratio, 30.0 / 70.0);
  // Over the whole step the range figures are the statistics' (one step, worst rank).
  EXPECT_EQ(f.exposed_comm_ns, v.stats.exposed_comm_ns);
  // Cut to [110, 200): rank 0 has 30 exposed, rank 1 10.
  const SummaryFigures cut = ComputeSummary(v, TimeRange{110, 200});
  EXPECT_EQ(cut.exposed_comm_ns, 30);
  EXPECT_DOUBLE_EQ(cut.overlap_ratio, 0.0);
}

TEST(Memory, PeaksAndDownsamplingKeepTheMaximum) {
  const TraceView a = MakeTraceView(PredictedPair(), "");
  const MemoryModel& m = a.memory;
  ASSERT_EQ(m.categories, std::vector<std::string>{"activations"});
  EXPECT_EQ(m.peak_allocated, 55);
  EXPECT_EQ(m.peak_allocated_ns, 150);
  const std::vector<MemoryColumn> cols = DownsampleMemory(m, 0, 300, 3);
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[0].allocated, 15);
  EXPECT_EQ(cols[1].allocated, 55);
  EXPECT_EQ(m.value(cols[1].sample, 0), 50);
  EXPECT_EQ(cols[2].allocated, 55);  // the 150 sample is still in effect at 200
  // Past the last sample nothing is drawn.
  EXPECT_EQ(DownsampleMemory(m, 1000, 2000, 2)[0].sample, -1);
  // The measured side has no memory counter.
  EXPECT_TRUE(MakeTraceView(MeasuredPair(), "").memory.empty());
}

}  // namespace
}  // namespace shardscope::viewer
